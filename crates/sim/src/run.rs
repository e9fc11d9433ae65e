//! One simulated run: a NameNode host, DataNode hosts, clients, and a fault schedule drawn
//! from the seed, stepped a millisecond at a time until every client has checked its work.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use ferrite_datanode::storage::memory_files::MemoryFiles;
use ferrite_raft::MemoryDisk;

use crate::client::{Client, Findings};
use crate::disk::{Disk, Health};
use crate::file_client::{EndGate, FileClient};
use crate::ha_namenode::Leaders;
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
    /// NameNodes: one, or the members of an HA nameservice (its Raft group), which
    /// are crashed and cut off from each other and the rest one at a time.
    pub namenodes: usize,
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
            namenodes: 1,
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
/// cluster no time to register, report and recover between them — but an HA group,
/// which rides out the loss of any one member, is hit more often than a lone NameNode.
fn fault_every(opts: &Options) -> u64 {
    match (opts.datanodes > 0, opts.namenodes > 1) {
        (true, false) => 1_000,
        (true, true) => 400,
        (false, _) => 40,
    }
}
/// How often the kernel writes DataNodes' dirty pages back (Linux's
/// `dirty_expire_centisecs` is 30 s).
const WRITEBACK_EVERY: u64 = 30_000;
/// The least time between a DataNode's restart and the next DataNode crash: longer than
/// writeback, so one power cut never meets another node's unwritten replicas. (HDFS loses
/// data too when every node holding a block loses power within that window.)
const DN_CRASH_SPACING: u64 = 35_000;

/// The run's NameNode hosts, and what outlives their crashes: a lone NameNode's journal
/// disk (which can also turn slow or fail), or each HA member's Raft log.
enum NameNodes {
    Single(Arc<Disk>),
    Ha {
        disks: Vec<MemoryDisk>,
        /// Per member, set when it stopped itself and its process exited.
        exited: Arc<Vec<AtomicBool>>,
    },
}

impl NameNodes {
    fn count(&self) -> usize {
        match self {
            NameNodes::Single(_) => 1,
            NameNodes::Ha { disks, .. } => disks.len(),
        }
    }

    fn host(&self, k: usize) -> String {
        crate::namenode::host(k, self.count())
    }

    /// The lone NameNode's journal disk, whose health the schedule changes.
    fn journal(&self) -> Option<&Disk> {
        match self {
            NameNodes::Single(disk) => Some(disk),
            NameNodes::Ha { .. } => None,
        }
    }

    /// A power cut of NameNode `k`: the host stops at once, and its disk keeps what was
    /// synced and a seeded part of the rest.
    fn crash(
        &self,
        k: usize,
        sim: &mut turmoil::Sim<'_>,
        hosts: &Hosts,
        rng: &mut SmallRng,
        trace: &Trace,
    ) {
        let host = self.host(k);
        hosts.crash(sim, &host);
        match self {
            NameNodes::Single(disk) => disk.crash(rng),
            NameNodes::Ha { disks, .. } => {
                disks[k].crash(|unsynced| rng.random_range(0..=unsynced))
            }
        }
        trace
            .lock()
            .push(format!("{host} crashed at {:?}", sim.elapsed()));
    }

    /// An HA member whose process exited by itself, if one did (its flag is cleared).
    fn take_exited(&self) -> Option<usize> {
        let NameNodes::Ha { exited, .. } = self else {
            return None;
        };
        let k = exited.iter().position(|e| e.load(Ordering::SeqCst))?;
        exited[k].store(false, Ordering::SeqCst);
        Some(k)
    }
}

/// Starts the run's NameNode hosts.
fn start_namenodes(
    sim: &mut turmoil::Sim<'_>,
    hosts: &Hosts,
    seed: u64,
    opts: &Options,
    findings: &Findings,
) -> NameNodes {
    let n = opts.namenodes.max(1);
    if n == 1 {
        let disk = Arc::new(Disk::default());
        let lives = Arc::new(AtomicU64::new(0));
        let (d, sockets) = (disk.clone(), hosts.sockets("nn"));
        sim.host("nn", move || {
            let life = lives.fetch_add(1, Ordering::SeqCst);
            crate::namenode::run(d.clone(), sockets.clone(), seed, life)
        });
        return NameNodes::Single(disk);
    }
    // openraft draws its election timeouts from this thread's generator.
    ferrite_raft::seed_elections(seed);
    let leaders = Leaders::default();
    let disks: Vec<MemoryDisk> = (0..n).map(|_| MemoryDisk::default()).collect();
    let exited: Arc<Vec<AtomicBool>> = Arc::new((0..n).map(|_| AtomicBool::new(false)).collect());
    for (k, disk) in disks.iter().enumerate() {
        let host = crate::namenode::host(k, n);
        let sockets = hosts.sockets(&host);
        let (disk, leaders, findings) = (disk.clone(), leaders.clone(), findings.clone());
        let exited = exited.clone();
        sim.host(host, move || {
            let (sockets, leaders) = (sockets.clone(), leaders.clone());
            let (findings, exited) = (findings.clone(), exited.clone());
            crate::ha_namenode::run(k, n, disk.clone(), sockets, leaders, findings, exited)
        });
    }
    NameNodes::Ha { disks, exited }
}

/// Faults waiting to be undone, by the step they end at.
enum Pending {
    /// NameNode `k` restarts.
    Bounce(usize),
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
    let hosts = Hosts::default();
    let findings: Findings = Arc::new(Mutex::new(Vec::new()));
    let nns = start_namenodes(&mut sim, &hosts, seed, opts, &findings);
    let dn_disks: DnDisks = (0..opts.datanodes)
        .map(|_| Arc::new(Mutex::new(crate::datanode::disk())))
        .collect();
    let gate = EndGate::new(opts.datanodes);
    for (i, d) in dn_disks.iter().enumerate() {
        let (d, serving) = (d.clone(), gate.serving.clone());
        let name = crate::datanode::host(i);
        let sockets = hosts.sockets(&name);
        let n = nns.count();
        sim.host(name, move || {
            crate::datanode::run(i, d.lock().clone(), sockets.clone(), serving.clone(), n)
        });
    }
    let trace = Arc::new(Mutex::new(Vec::new()));
    for id in 0..opts.file_clients {
        let mut c = FileClient::new(id, seed, findings.clone(), trace.clone(), gate.clone());
        c.echo = opts.echo;
        c.namenodes = nns.count();
        sim.client(
            format!("w{id}"),
            c.run(opts.ops_per_file_client, opts.datanodes),
        );
    }
    for id in 0..opts.clients {
        let mut c = Client::new(id, seed, findings.clone(), trace.clone());
        c.retry_calls = opts.retry_calls;
        c.echo = opts.echo;
        c.namenodes = nns.count();
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
            nns: &nns,
            dn_disks: &dn_disks,
            trace: &trace,
        };
        if healing {
            // The file clients are done: every fault ends now, for their final checks.
            undo.due(&mut pending, u64::MAX);
            if let Some(disk) = nns.journal() {
                disk.set_health(Health::Good);
            }
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
        if let Some(k) = nns.take_exited() {
            // Its process is gone (nothing lost from the page cache); a supervisor
            // starts it again a second later.
            let host = nns.host(k);
            hosts.crash(&mut sim, &host);
            trace
                .lock()
                .push(format!("{host} stopped itself at {:?}", sim.elapsed()));
            pending.retain(|(_, p)| !matches!(p, Pending::Bounce(b) if *b == k));
            pending.push((step + 1_000, Pending::Bounce(k)));
        }
        let journal_failed = nns.journal().is_some_and(Disk::failed);
        if journal_failed && !pending.iter().any(|(_, p)| matches!(p, Pending::Bounce(_))) {
            // A failed journal stops the NameNode; an operator replaces the disk.
            nns.crash(0, &mut sim, &hosts, &mut rng, &trace);
            nns.journal().expect("a lone NameNode").replace();
            pending.push((step + 500, Pending::Bounce(0)));
            report.crashes += 1;
        }
        if opts.faults
            && !gate.healed.load(Ordering::SeqCst)
            && step.is_multiple_of(fault_every(opts))
        {
            let mut at = Injection {
                sim: &mut sim,
                hosts: &hosts,
                nns: &nns,
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

type Trace = Arc<Mutex<Vec<String>>>;

/// Each DataNode's disk, replaceable when one dies.
type DnDisks = Vec<Arc<Mutex<Arc<MemoryFiles>>>>;

/// What a fault is injected with.
struct Injection<'a, 'b> {
    sim: &'a mut turmoil::Sim<'b>,
    hosts: &'a Hosts,
    nns: &'a NameNodes,
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
            .any(|(_, p)| matches!(p, Pending::Bounce(_)));
        let journal = self.nns.journal();
        let nn = self.pick_namenode();
        let nn_host = self.nns.host(nn);
        match self.rng.random_range(0..100) {
            // One NameNode down at a time: an HA group keeps its majority.
            0..=5 if !down => {
                self.nns
                    .crash(nn, self.sim, self.hosts, self.rng, self.trace);
                let at = step + self.rng.random_range(1..2_000);
                self.pending.push((at, Pending::Bounce(nn)));
                report.crashes += 1;
            }
            6..=11 if opts.clients > 0 => {
                let c = format!("c{}", self.rng.random_range(0..opts.clients));
                let at = step + self.rng.random_range(100..8_000);
                self.partition(c, nn_host, at);
                report.partitions += 1;
            }
            roll @ 12..=15 => match journal {
                Some(disk) => self.journal_fault(disk, roll, step, down, report),
                None => {
                    // Two members of the HA group cut off from each other: the leader
                    // from a follower, or from both in turn (its lease runs out).
                    let other =
                        (nn + self.rng.random_range(1..self.nns.count())) % self.nns.count();
                    let at = step + self.rng.random_range(100..8_000);
                    self.partition(nn_host, self.nns.host(other), at);
                    report.partitions += 1;
                }
            },
            // Messages held on a link and then delivered late, but within a call's
            // timeout: a client that gave up on a call must not see it land afterwards.
            16..=19 if opts.clients > 0 => {
                let c = format!("c{}", self.rng.random_range(0..opts.clients));
                self.sim.hold(c.as_str(), nn_host.as_str());
                let at = step + self.rng.random_range(10..3_000);
                self.pending.push((at, Pending::Release(c, nn_host)));
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

    /// One of the NameNodes, drawn from the seed (a lone one draws nothing, so its runs
    /// tell the story they told before HA runs existed).
    fn pick_namenode(&mut self) -> usize {
        match self.nns.count() {
            1 => 0,
            n => self.rng.random_range(0..n),
        }
    }

    /// A lone NameNode's journal disk turns slow for a while, or fails for good (the run
    /// then replaces it).
    fn journal_fault(
        &mut self,
        disk: &Disk,
        roll: u32,
        step: u64,
        down: bool,
        report: &mut Report,
    ) {
        if disk.health() != Health::Good {
            return;
        }
        if roll < 15 {
            let slow = Duration::from_millis(self.rng.random_range(20..400));
            disk.set_health(Health::Slow(slow));
            let at = step + self.rng.random_range(500..5_000);
            self.pending.push((at, Pending::DiskGood));
            report.disk_faults += 1;
        } else if !down {
            disk.set_health(Health::Failing);
            report.disk_faults += 1;
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
                let nn = self.pick_namenode();
                self.partition(name, self.nns.host(nn), at);
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
    nns: &'a NameNodes,
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
            Pending::Bounce(k) => {
                let host = self.nns.host(k);
                sim.bounce(host.as_str());
                trace
                    .lock()
                    .push(format!("{host} restarted at {:?}", sim.elapsed()));
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
                if let Some(disk) = self.nns.journal().filter(|d| d.health() != Health::Failing) {
                    disk.set_health(Health::Good)
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
        ("--namenodes", opts.namenodes, d.namenodes),
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
