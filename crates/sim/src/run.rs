//! One simulated run: a NameNode host, DataNode hosts, clients, and a fault schedule drawn
//! from the seed, stepped a millisecond at a time until every client has checked its work.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use ferrite_datanode::storage::memory_files::MemoryFiles;

use crate::client::{Client, Findings};
use crate::disk::{Disk, Health};
use crate::file_client::{EndGate, FileClient};
use crate::net::Hosts;

/// What a run is made of.
#[derive(Clone, Debug)]
pub struct Options {
    pub clients: usize,
    pub ops_per_client: usize,
    /// DataNode hosts, and clients that write, hflush, append and read files through
    /// them (none: a NameNode-only run).
    pub datanodes: usize,
    pub file_clients: usize,
    pub ops_per_file_client: usize,
    /// DataNode power cuts and dead disks, and partitions at about three times the default
    /// rate (CI runs both schedules).
    pub dn_faults_heavy: bool,
    /// Crashes, partitions, slow and failing disks; off, the run only checks the model.
    pub faults: bool,
    /// Clients send a call whose answer was lost again with the same callId, as an HA
    /// client's failover proxy does; off, they look at their directory instead.
    pub retry_calls: bool,
    /// Print each client's trace line as it happens (for replaying one seed).
    pub echo: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            clients: 3,
            ops_per_client: 40,
            datanodes: 0,
            file_clients: 0,
            ops_per_file_client: 25,
            dn_faults_heavy: false,
            faults: true,
            retry_calls: true,
            echo: false,
        }
    }
}

/// What a run did and found.
#[derive(Debug, Default)]
pub struct Report {
    pub seed: u64,
    /// Problems: empty when every check held.
    pub findings: Vec<String>,
    /// Every client's operations and outcomes, in order.
    pub trace: Vec<String>,
    pub crashes: u32,
    pub partitions: u32,
    pub disk_faults: u32,
    pub simulated: Duration,
}

/// The simulated clock the NameNode reads: turmoil's, on a fixed epoch.
const EPOCH_MS: u64 = 1_795_000_000_000;

fn sim_now_ms() -> i64 {
    let since = turmoil::since_epoch().unwrap_or(Duration::from_millis(EPOCH_MS));
    since.as_millis() as i64
}

/// How often (in one-millisecond steps) the schedule may start a fault: NameNode-only runs
/// are short; with DataNodes, a fault every few hundred milliseconds would leave the
/// cluster no time to register, report and recover between them.
fn fault_every(opts: &Options) -> u64 {
    if opts.datanodes > 0 {
        1_000
    } else {
        40
    }
}
/// How often the kernel writes DataNodes' dirty pages back (Linux's
/// `dirty_expire_centisecs` is 30 s).
const WRITEBACK_EVERY: u64 = 30_000;
/// The least time between a DataNode's restart and the next DataNode crash: longer than
/// writeback, so one power cut never meets another node's unwritten replicas. (HDFS loses
/// data too when every node holding a block loses power within that window.)
const DN_CRASH_SPACING: u64 = 35_000;

/// Faults waiting to be undone, by the step they end at.
enum Pending {
    Bounce,
    BounceDn(usize),
    /// A DataNode whose disk died: crashed, given a new empty disk, restarted.
    ReplaceDnDisk(usize),
    Repair(String, String),
    Release(String, String),
    DiskGood,
}

/// Runs `seed` and reports what it found.
pub fn run_seed(seed: u64, opts: &Options) -> Report {
    ferrite_namenode::clock::set_source(sim_now_ms);
    let mut sim = turmoil::Builder::new()
        .rng_seed(seed)
        .epoch(UNIX_EPOCH + Duration::from_millis(EPOCH_MS))
        .simulation_duration(Duration::from_secs(3_600))
        .tick_duration(Duration::from_millis(1))
        .min_message_latency(Duration::from_micros(200))
        .max_message_latency(Duration::from_millis(3))
        // Segments a socket may hold unread (turmoil panics past it): a pipeline's
        // packets can queue behind a DataNode that is busy elsewhere.
        .tcp_capacity(1 << 14)
        .build();
    let disk = Arc::new(Disk::default());
    let lives = Arc::new(AtomicU64::new(0));
    let hosts = Hosts::default();
    {
        let (disk, lives, sockets) = (disk.clone(), lives.clone(), hosts.sockets("nn"));
        sim.host("nn", move || {
            let life = lives.fetch_add(1, Ordering::SeqCst);
            crate::namenode::run(disk.clone(), sockets.clone(), seed, life)
        });
    }
    let dn_disks: DnDisks = (0..opts.datanodes)
        .map(|_| Arc::new(Mutex::new(crate::datanode::disk())))
        .collect();
    let gate = EndGate::new(opts.datanodes);
    for (i, d) in dn_disks.iter().enumerate() {
        let (d, serving) = (d.clone(), gate.serving.clone());
        let name = crate::datanode::host(i);
        let sockets = hosts.sockets(&name);
        sim.host(name, move || {
            crate::datanode::run(i, d.lock().clone(), sockets.clone(), serving.clone())
        });
    }
    let findings: Findings = Arc::new(Mutex::new(Vec::new()));
    let trace = Arc::new(Mutex::new(Vec::new()));
    for id in 0..opts.file_clients {
        let mut c = FileClient::new(id, seed, findings.clone(), trace.clone(), gate.clone());
        c.echo = opts.echo;
        sim.client(
            format!("w{id}"),
            c.run(opts.ops_per_file_client, opts.datanodes),
        );
    }
    for id in 0..opts.clients {
        let mut c = Client::new(id, seed, findings.clone(), trace.clone());
        c.retry_calls = opts.retry_calls;
        c.echo = opts.echo;
        let ops = opts.ops_per_client;
        sim.client(format!("c{id}"), c.run(ops));
    }
    let mut report = Report {
        seed,
        ..Default::default()
    };
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x5eed_fa17);
    let mut pending: Vec<(u64, Pending)> = Vec::new();
    let mut step = 0u64;
    let mut dn_restarted_at = None;
    loop {
        match sim.step() {
            Ok(true) => break,
            Ok(false) => {}
            Err(e) => {
                findings.lock().push(format!("the simulation stopped: {e}"));
                break;
            }
        }
        step += 1;
        let healing = opts.file_clients > 0
            && gate.waiting.load(Ordering::SeqCst) == opts.file_clients
            && !gate.healed.load(Ordering::SeqCst);
        let mut undo = Undo {
            sim: &mut sim,
            hosts: &hosts,
            disk: &disk,
            dn_disks: &dn_disks,
            trace: &trace,
        };
        if healing {
            // The file clients are done: every fault ends now, for their final checks.
            undo.due(&mut pending, u64::MAX);
            disk.set_health(Health::Good);
            gate.healed.store(true, Ordering::SeqCst);
        }
        if pending.iter().any(|(at, p)| {
            matches!(p, Pending::BounceDn(_) | Pending::ReplaceDnDisk(_)) && *at == step
        }) {
            dn_restarted_at = Some(step);
        }
        undo.due(&mut pending, step);
        if step.is_multiple_of(WRITEBACK_EVERY) {
            dn_disks.iter().for_each(|d| d.lock().write_back());
        }
        if disk.failed() && !pending.iter().any(|(_, p)| matches!(p, Pending::Bounce)) {
            // A failed journal stops the NameNode; an operator replaces the disk.
            crash(&mut sim, &hosts, &disk, &mut rng, &trace);
            disk.replace();
            pending.push((step + 500, Pending::Bounce));
            report.crashes += 1;
        }
        if opts.faults
            && !gate.healed.load(Ordering::SeqCst)
            && step.is_multiple_of(fault_every(opts))
        {
            let mut at = Injection {
                sim: &mut sim,
                hosts: &hosts,
                disk: &disk,
                dn_disks: &dn_disks,
                dn_restarted_at,
                rng: &mut rng,
                pending: &mut pending,
                trace: &trace,
                data_faults: &gate.data_faults,
            };
            at.inject(step, opts, &mut report);
        }
    }
    report.simulated = sim.elapsed();
    report.findings = std::mem::take(&mut *findings.lock());
    report.trace = std::mem::take(&mut *trace.lock());
    report
}

fn crash(
    sim: &mut turmoil::Sim<'_>,
    hosts: &Hosts,
    disk: &Disk,
    rng: &mut SmallRng,
    trace: &Trace,
) {
    hosts.crash(sim, "nn");
    disk.crash(rng);
    trace
        .lock()
        .push(format!("nn crashed at {:?}", sim.elapsed()));
}

type Trace = Arc<Mutex<Vec<String>>>;

/// Each DataNode's disk, replaceable when one dies.
type DnDisks = Vec<Arc<Mutex<Arc<MemoryFiles>>>>;

/// What a fault is injected with.
struct Injection<'a, 'b> {
    sim: &'a mut turmoil::Sim<'b>,
    hosts: &'a Hosts,
    disk: &'a Disk,
    dn_disks: &'a DnDisks,
    /// The step the last DataNode came back at, if one has.
    dn_restarted_at: Option<u64>,
    rng: &'a mut SmallRng,
    pending: &'a mut Vec<(u64, Pending)>,
    trace: &'a Trace,
    /// Per DataNode, the faults that lost data on it (the file clients' checks read it).
    data_faults: &'a [AtomicU64],
}

impl Injection<'_, '_> {
    /// Maybe starts one fault, scheduling its end.
    fn inject(&mut self, step: u64, opts: &Options, report: &mut Report) {
        let down = self
            .pending
            .iter()
            .any(|(_, p)| matches!(p, Pending::Bounce));
        let disk = self.disk;
        match self.rng.random_range(0..100) {
            0..=5 if !down => {
                crash(self.sim, self.hosts, disk, self.rng, self.trace);
                let at = step + self.rng.random_range(1..2_000);
                self.pending.push((at, Pending::Bounce));
                report.crashes += 1;
            }
            6..=11 if opts.clients > 0 => {
                let c = format!("c{}", self.rng.random_range(0..opts.clients));
                let at = step + self.rng.random_range(100..8_000);
                self.partition(c, "nn".into(), at);
                report.partitions += 1;
            }
            12..=14 if disk.health() == Health::Good => {
                let slow = Duration::from_millis(self.rng.random_range(20..400));
                disk.set_health(Health::Slow(slow));
                let at = step + self.rng.random_range(500..5_000);
                self.pending.push((at, Pending::DiskGood));
                report.disk_faults += 1;
            }
            15 if disk.health() == Health::Good && !down => {
                disk.set_health(Health::Failing);
                report.disk_faults += 1;
            }
            // Messages held on a link and then delivered late, but within a call's
            // timeout: a client that gave up on a call must not see it land afterwards.
            16..=19 if opts.clients > 0 => {
                let c = format!("c{}", self.rng.random_range(0..opts.clients));
                self.sim.hold(c.as_str(), "nn");
                let at = step + self.rng.random_range(10..3_000);
                self.pending.push((at, Pending::Release(c, "nn".into())));
                report.partitions += 1;
            }
            roll @ 20..=44 if opts.datanodes > 0 => {
                // The heavier DataNode schedule takes rolls 20–44, power cuts and dead
                // disks included; the default, 23–29, only partitions.
                let roll = match (opts.dn_faults_heavy, roll) {
                    (true, r) => r,
                    (false, 23..=26) => 27,
                    (false, 27..=29) => 37,
                    (false, _) => return,
                };
                self.inject_dn(roll, step, opts, report)
            }
            _ => {}
        }
    }

    /// DataNode faults: a power cut and restart of one node at a time, a writer cut off
    /// from a node (its pipeline recovers around it), a node cut off from the NameNode
    /// (long enough, and it is declared dead and its blocks copied elsewhere).
    fn inject_dn(&mut self, roll: u32, step: u64, opts: &Options, report: &mut Report) {
        let dn = self.rng.random_range(0..opts.datanodes);
        let name = crate::datanode::host(dn);
        let dn_down = self
            .pending
            .iter()
            .any(|(_, p)| matches!(p, Pending::BounceDn(_) | Pending::ReplaceDnDisk(_)));
        let spaced = self
            .dn_restarted_at
            .is_none_or(|at| step >= at + DN_CRASH_SPACING);
        match roll {
            20..=24 if !dn_down && spaced => {
                self.hosts.crash(self.sim, &name);
                let rng = &mut *self.rng;
                self.dn_disks[dn].lock().crash(&mut |n| {
                    if n == 0 {
                        0
                    } else {
                        rng.random_range(0..=n)
                    }
                });
                self.trace
                    .lock()
                    .push(format!("{name} crashed at {:?}", self.sim.elapsed()));
                let at = step + self.rng.random_range(1_000..30_000);
                self.pending.push((at, Pending::BounceDn(dn)));
                self.data_faults[dn].fetch_add(1, Ordering::SeqCst);
                report.crashes += 1;
            }
            25..=26 if !dn_down && spaced => {
                // The disk dies under the running node (every read and write fails); an
                // operator replaces it a few seconds later.
                self.dn_disks[dn].lock().fail();
                self.trace
                    .lock()
                    .push(format!("{name}'s disk died at {:?}", self.sim.elapsed()));
                let at = step + self.rng.random_range(2_000..10_000);
                self.pending.push((at, Pending::ReplaceDnDisk(dn)));
                self.data_faults[dn].fetch_add(1, Ordering::SeqCst);
                report.disk_faults += 1;
            }
            27..=36 if opts.file_clients > 0 => {
                let w = format!("w{}", self.rng.random_range(0..opts.file_clients));
                let at = step + self.rng.random_range(100..8_000);
                self.partition(w, name, at);
                report.partitions += 1;
            }
            37..=44 => {
                let at = step + self.rng.random_range(100..40_000);
                self.partition(name, "nn".into(), at);
                report.partitions += 1;
            }
            _ => {}
        }
    }

    fn partition(&mut self, a: String, b: String, until: u64) {
        self.sim.partition(a.as_str(), b.as_str());
        self.trace.lock().push(format!(
            "{a} and {b} partitioned at {:?} for {}ms",
            self.sim.elapsed(),
            until.saturating_sub(self.sim.elapsed().as_millis() as u64)
        ));
        self.pending.push((until, Pending::Repair(a, b)));
    }
}

/// What a fault is undone with.
struct Undo<'a, 'b> {
    sim: &'a mut turmoil::Sim<'b>,
    hosts: &'a Hosts,
    disk: &'a Disk,
    dn_disks: &'a DnDisks,
    trace: &'a Trace,
}

impl Undo<'_, '_> {
    /// Undoes the faults due by `step`.
    fn due(&mut self, pending: &mut Vec<(u64, Pending)>, step: u64) {
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(pending)
            .into_iter()
            .partition(|(at, _)| *at <= step);
        *pending = later;
        for (_, p) in due {
            self.undo(p);
        }
    }

    fn undo(&mut self, p: Pending) {
        let (sim, trace) = (&mut *self.sim, self.trace);
        match p {
            Pending::Bounce => {
                sim.bounce("nn");
                trace
                    .lock()
                    .push(format!("nn restarted at {:?}", sim.elapsed()));
            }
            Pending::BounceDn(i) => {
                let name = crate::datanode::host(i);
                sim.bounce(name.as_str());
                trace
                    .lock()
                    .push(format!("{name} restarted at {:?}", sim.elapsed()));
            }
            Pending::ReplaceDnDisk(i) => {
                let name = crate::datanode::host(i);
                self.hosts.crash(sim, &name);
                *self.dn_disks[i].lock() = crate::datanode::disk();
                sim.bounce(name.as_str());
                trace.lock().push(format!(
                    "{name} restarted on a new disk at {:?}",
                    sim.elapsed()
                ));
            }
            Pending::Repair(a, b) => sim.repair(a.as_str(), b.as_str()),
            Pending::Release(a, b) => sim.release(a.as_str(), b.as_str()),
            Pending::DiskGood => {
                if self.disk.health() != Health::Failing {
                    self.disk.set_health(Health::Good)
                }
            }
        }
    }
}

/// A seed's replay command, for a failure's message: with the options that differ from
/// the defaults, so the replay is the same run.
pub fn replay_hint(seed: u64, opts: &Options) -> String {
    let d = Options::default();
    let mut cmd = format!("cargo run -p ferrite-sim -- --seed {seed}");
    for (flag, v, default) in [
        ("--clients", opts.clients, d.clients),
        ("--ops", opts.ops_per_client, d.ops_per_client),
        ("--datanodes", opts.datanodes, d.datanodes),
        ("--writers", opts.file_clients, d.file_clients),
        (
            "--writer-ops",
            opts.ops_per_file_client,
            d.ops_per_file_client,
        ),
    ] {
        if v != default {
            cmd += &format!(" {flag} {v}");
        }
    }
    if !opts.faults {
        cmd += " --no-faults";
    }
    if !opts.retry_calls {
        cmd += " --no-retry";
    }
    if opts.dn_faults_heavy {
        cmd += " --dn-faults-heavy";
    }
    cmd
}

/// Wall-clock seconds since the epoch, for a default first seed.
pub fn time_seed() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
