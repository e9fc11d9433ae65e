//! One simulated run: a NameNode host, clients, and a fault schedule drawn from the seed,
//! stepped a millisecond at a time until every client has checked its directory.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::client::{Client, Findings};
use crate::disk::{Disk, Health};

/// What a run is made of.
#[derive(Clone, Debug)]
pub struct Options {
    pub clients: usize,
    pub ops_per_client: usize,
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

/// How often (in one-millisecond steps) the schedule may start a fault.
const FAULT_EVERY: u64 = 40;

/// Faults waiting to be undone, by the step they end at.
enum Pending {
    Bounce,
    Repair(String),
    Release(String),
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
        .build();
    let disk = Arc::new(Disk::default());
    let lives = Arc::new(AtomicU64::new(0));
    {
        let (disk, lives) = (disk.clone(), lives.clone());
        sim.host("nn", move || {
            let life = lives.fetch_add(1, Ordering::SeqCst);
            crate::namenode::run(disk.clone(), seed, life)
        });
    }
    let findings: Findings = Arc::new(Mutex::new(Vec::new()));
    let trace = Arc::new(Mutex::new(Vec::new()));
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
        undo_due(&mut sim, &disk, &mut pending, step, &trace);
        if disk.failed() && !pending.iter().any(|(_, p)| matches!(p, Pending::Bounce)) {
            // A failed journal stops the NameNode; an operator replaces the disk.
            crash(&mut sim, &disk, &mut rng, &trace);
            disk.replace();
            pending.push((step + 500, Pending::Bounce));
            report.crashes += 1;
        }
        if opts.faults && step.is_multiple_of(FAULT_EVERY) {
            let mut at = Injection {
                sim: &mut sim,
                disk: &disk,
                rng: &mut rng,
                pending: &mut pending,
                trace: &trace,
            };
            at.inject(step, opts, &mut report);
        }
    }
    report.simulated = sim.elapsed();
    report.findings = std::mem::take(&mut *findings.lock());
    report.trace = std::mem::take(&mut *trace.lock());
    report
}

fn crash(sim: &mut turmoil::Sim<'_>, disk: &Disk, rng: &mut SmallRng, trace: &Trace) {
    sim.crash("nn");
    disk.crash(rng);
    trace
        .lock()
        .push(format!("nn crashed at {:?}", sim.elapsed()));
}

type Trace = Arc<Mutex<Vec<String>>>;

/// What a fault is injected with.
struct Injection<'a, 'b> {
    sim: &'a mut turmoil::Sim<'b>,
    disk: &'a Disk,
    rng: &'a mut SmallRng,
    pending: &'a mut Vec<(u64, Pending)>,
    trace: &'a Trace,
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
                crash(self.sim, disk, self.rng, self.trace);
                let at = step + self.rng.random_range(1..2_000);
                self.pending.push((at, Pending::Bounce));
                report.crashes += 1;
            }
            6..=11 => {
                let c = format!("c{}", self.rng.random_range(0..opts.clients));
                self.sim.partition(c.as_str(), "nn");
                let at = step + self.rng.random_range(100..8_000);
                self.pending.push((at, Pending::Repair(c)));
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
            16..=19 => {
                let c = format!("c{}", self.rng.random_range(0..opts.clients));
                self.sim.hold(c.as_str(), "nn");
                let at = step + self.rng.random_range(10..3_000);
                self.pending.push((at, Pending::Release(c)));
                report.partitions += 1;
            }
            _ => {}
        }
    }
}

fn undo_due(
    sim: &mut turmoil::Sim<'_>,
    disk: &Disk,
    pending: &mut Vec<(u64, Pending)>,
    step: u64,
    trace: &Trace,
) {
    let (due, later): (Vec<_>, Vec<_>) = std::mem::take(pending)
        .into_iter()
        .partition(|(at, _)| *at <= step);
    *pending = later;
    for (_, p) in due {
        match p {
            Pending::Bounce => {
                sim.bounce("nn");
                trace
                    .lock()
                    .push(format!("nn restarted at {:?}", sim.elapsed()));
            }
            Pending::Repair(c) => sim.repair(c.as_str(), "nn"),
            Pending::Release(c) => sim.release(c.as_str(), "nn"),
            Pending::DiskGood => {
                if disk.health() != Health::Failing {
                    disk.set_health(Health::Good)
                }
            }
        }
    }
}

/// A seed's replay command, for a failure's message.
pub fn replay_hint(seed: u64) -> String {
    format!("cargo run -p ferrite-sim -- --seed {seed}")
}

/// Wall-clock seconds since the epoch, for a default first seed.
pub fn time_seed() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
