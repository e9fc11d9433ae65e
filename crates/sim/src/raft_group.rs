//! A Raft group in the simulator: three nodes, each the real `ferrite-raft` node (openraft,
//! the synced log on a memory disk that a power cut trims to what was synced plus a seeded
//! prefix of the rest, the protobuf transport on turmoil's TCP), proposing batches while it
//! leads, under crashes, restarts and partitions. The checks are Raft's promises:
//!
//! - one leader per term at most;
//! - every node applies the same batch at each log index (across its lives too);
//! - a batch the leader acknowledged is applied, at the index it was acknowledged at, by
//!   every node once the faults are healed — however many leaders and power cuts passed.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use ferrite_raft::{Applier, Batch, MemoryDisk, NodeId, Timing};
use openraft::{BasicNode, ServerState};
use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio_util::sync::CancellationToken;

use crate::net::{Hosts, Reaper, SimDial, SimListener, Sockets};
use crate::run::Report;

/// The port each node's Raft transport listens on.
const RAFT_PORT: u16 = 7070;
/// How long the healed group has to agree before the run counts it as stuck.
const CONVERGE_WITHIN: Duration = Duration::from_secs(60);
/// How often (in one-millisecond steps) the schedule may start a fault.
const FAULT_EVERY: u64 = 300;

/// What a Raft run is made of.
#[derive(Clone, Debug)]
pub struct RaftOptions {
    pub nodes: usize,
    /// Batches proposed over the run, by whichever node leads.
    pub proposals: u64,
    pub faults: bool,
    pub echo: bool,
    /// Every node gets the same election timeout (openraft draws one per node): nodes that
    /// start in the same instant then stand in the same instant, the worst case for split
    /// votes.
    pub one_election_timeout: bool,
}

impl Default for RaftOptions {
    fn default() -> Self {
        RaftOptions {
            nodes: 3,
            proposals: 200,
            faults: true,
            echo: false,
            one_election_timeout: false,
        }
    }
}

/// What every node and the checker write down, shared by the run.
#[derive(Default)]
struct History {
    /// The first batch applied at each index, by any node.
    applied: BTreeMap<u64, Bytes>,
    /// Batches a leader acknowledged, by index.
    acked: BTreeMap<u64, Bytes>,
    /// The leader of each term, as the nodes' metrics showed it.
    leaders: BTreeMap<u64, NodeId>,
    /// Per node, the last index its current life applied.
    last_applied: BTreeMap<NodeId, u64>,
    proposed: u64,
    findings: Vec<String>,
    trace: Vec<String>,
}

#[derive(Clone, Default)]
struct Shared {
    history: Arc<Mutex<History>>,
    /// Set once the faults are over, for the final checks.
    healed: Arc<AtomicBool>,
    echo: bool,
}

impl Shared {
    fn note(&self, line: String) {
        if self.echo {
            eprintln!("{line}");
        }
        self.history.lock().trace.push(line);
    }

    /// Writes a finding down once (a watcher may see the same thing many times).
    fn find(&self, line: String) {
        if self.history.lock().findings.contains(&line) {
            return;
        }
        self.note(format!("FOUND {line}"));
        self.history.lock().findings.push(line);
    }
}

fn host(id: NodeId) -> String {
    format!("r{id}")
}

/// One node's state machine: the batches it applied, checked against every other node's.
struct Applied {
    node: NodeId,
    shared: Shared,
    entries: Vec<(u64, Bytes)>,
}

impl Applied {
    fn take(&mut self, index: u64, batch: Bytes) {
        let mut h = self.shared.history.lock();
        match h.applied.get(&index) {
            Some(first) if *first != batch => {
                let line = format!(
                    "r{} applied {batch:?} at {index}, where {first:?} was applied",
                    self.node
                );
                h.findings.push(line);
            }
            Some(_) => {}
            None => {
                h.applied.insert(index, batch.clone());
            }
        }
        h.last_applied.insert(self.node, index);
        self.entries.push((index, batch));
    }
}

impl Applier for Applied {
    fn apply(&mut self, index: u64, batch: &Batch) -> io::Result<()> {
        self.take(index, batch.0.clone());
        Ok(())
    }

    fn snapshot(&mut self) -> io::Result<Option<Vec<u8>>> {
        let mut out = Vec::new();
        for (i, b) in &self.entries {
            out.extend_from_slice(&i.to_be_bytes());
            out.extend_from_slice(&(b.len() as u32).to_be_bytes());
            out.extend_from_slice(b);
        }
        Ok(Some(out))
    }

    fn restore(&mut self, mut state: &[u8]) -> io::Result<()> {
        self.entries.clear();
        while state.len() >= 12 {
            let index = u64::from_be_bytes(state[..8].try_into().expect("8 bytes"));
            let len = u32::from_be_bytes(state[8..12].try_into().expect("4 bytes")) as usize;
            let batch = Bytes::copy_from_slice(&state[12..12 + len]);
            state = &state[12 + len..];
            self.take(index, batch);
        }
        Ok(())
    }
}

fn timing(one_election_timeout: bool) -> Timing {
    let mut t = Timing {
        // Small, so runs take snapshots, purge and send snapshots to nodes left behind.
        snapshot_every: 40,
        ..Timing::default()
    };
    if one_election_timeout {
        t.election_max = t.election_min + Duration::from_millis(1);
    }
    t
}

fn members(nodes: usize) -> BTreeMap<NodeId, BasicNode> {
    (1..=nodes as NodeId)
        .map(|id| {
            let addr = SocketAddr::new(turmoil::lookup(host(id)), RAFT_PORT);
            (id, BasicNode::new(addr))
        })
        .collect()
}

/// One life of node `id`, on the disk its earlier lives left.
async fn node_life(
    id: NodeId,
    opts: RaftOptions,
    disk: MemoryDisk,
    sockets: Arc<Sockets>,
    shared: Shared,
) -> turmoil::Result {
    let _reaper = Reaper(sockets.clone());
    let applied = Applied {
        node: id,
        shared: shared.clone(),
        entries: Vec::new(),
    };
    let nodes = opts.nodes;
    let member = ferrite_raft::start(
        id,
        &timing(opts.one_election_timeout),
        Box::new(disk),
        Box::new(applied),
        Arc::new(SimDial(Some(sockets.clone()))),
    )
    .await?;
    let raft = member.raft;
    let me = turmoil::lookup(host(id));
    let listener = SimListener::bind(me, RAFT_PORT, &sockets).await?;
    tokio::spawn(ferrite_raft::serve(
        raft.clone(),
        listener,
        CancellationToken::new(),
    ));
    if !raft.is_initialized().await? {
        // Every node starts the group with the same members: whichever is heard first wins.
        let _ = raft.initialize(members(nodes)).await;
    }
    let watching = shared.clone();
    // A second leader in a term is a finding.
    tokio::spawn(watch_leaders(raft.clone(), move |term| {
        let other = *watching.history.lock().leaders.entry(term).or_insert(id);
        if other != id {
            watching.find(format!("r{other} and r{id} both led term {term}"));
        }
    }));
    let mut rng = SmallRng::seed_from_u64(id);
    loop {
        tokio::time::sleep(Duration::from_millis(rng.random_range(10..60))).await;
        if raft.metrics().borrow().state != ServerState::Leader {
            continue;
        }
        let n = {
            let mut h = shared.history.lock();
            h.proposed += 1;
            h.proposed
        };
        let batch = Bytes::from(format!("b{n} from r{id}"));
        let write = raft.client_write(Batch(batch.clone()));
        match tokio::time::timeout(Duration::from_secs(5), write).await {
            Ok(Ok(resp)) => {
                let index = resp.log_id.index;
                shared.note(format!("r{id} acked {batch:?} at {index}"));
                shared.history.lock().acked.insert(index, batch);
            }
            Ok(Err(e)) => shared.note(format!("r{id} refused {batch:?}: {e}")),
            Err(_) => shared.note(format!("r{id} no answer for {batch:?}")),
        }
    }
}

/// Calls `led(term)` for each term in which `raft`'s metrics show it leading (a term may
/// be seen more than once).
pub(crate) async fn watch_leaders(
    raft: ferrite_raft::Raft,
    mut led: impl FnMut(u64) + Send + 'static,
) {
    let mut rx = raft.metrics();
    loop {
        let (state, term) = {
            let m = rx.borrow_and_update();
            (m.state, m.current_term)
        };
        if state == ServerState::Leader {
            led(term);
        }
        if rx.changed().await.is_err() {
            return;
        }
    }
}

/// The checker: waits for the proposals, has the run heal every fault, then waits for the
/// group to agree and checks every acknowledged batch.
async fn checker(shared: Shared, opts: RaftOptions) -> turmoil::Result {
    let start = tokio::time::Instant::now();
    while shared.history.lock().proposed < opts.proposals {
        if shared.history.lock().proposed == 0 && start.elapsed() > CONVERGE_WITHIN {
            shared.find(format!("no leader took a batch in {CONVERGE_WITHIN:?}"));
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    shared.healed.store(true, Ordering::SeqCst);
    let ids: BTreeSet<NodeId> = (1..=opts.nodes as NodeId).collect();
    let deadline = tokio::time::Instant::now() + CONVERGE_WITHIN;
    loop {
        let (agreed, behind) = {
            let h = shared.history.lock();
            let want = h.acked.keys().next_back().copied().unwrap_or(0);
            let at: BTreeSet<u64> = ids
                .iter()
                .map(|i| h.last_applied.get(i).copied().unwrap_or(0))
                .collect();
            let top = at.iter().next_back().copied().unwrap_or(0);
            (
                at.len() == 1 && top >= want,
                format!("{:?}", h.last_applied),
            )
        };
        if agreed {
            break;
        }
        if tokio::time::Instant::now() >= deadline {
            shared.find(format!(
                "the healed group did not agree in {CONVERGE_WITHIN:?}: {behind}"
            ));
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let h = shared.history.lock();
    let lost: Vec<String> = h
        .acked
        .iter()
        .filter(|(i, b)| h.applied.get(i) != Some(b))
        .map(|(i, b)| format!("{b:?} at {i} (applied there: {:?})", h.applied.get(i)))
        .collect();
    drop(h);
    if !lost.is_empty() {
        shared.find(format!("acknowledged batches lost: {}", lost.join("; ")));
    }
    Ok(())
}

/// Runs one seed of the Raft group.
pub fn run_raft_seed(seed: u64, opts: &RaftOptions) -> Report {
    ferrite_raft::seed_elections(seed);
    let mut sim = turmoil::Builder::new()
        .rng_seed(seed)
        .simulation_duration(Duration::from_secs(1_800))
        .tick_duration(Duration::from_millis(1))
        .min_message_latency(Duration::from_micros(200))
        .max_message_latency(Duration::from_millis(5))
        .build();
    let shared = Shared {
        echo: opts.echo,
        ..Shared::default()
    };
    let disks: Vec<MemoryDisk> = (0..opts.nodes).map(|_| MemoryDisk::default()).collect();
    let hosts = Hosts::default();
    for (i, disk) in disks.iter().enumerate() {
        let id = i as NodeId + 1;
        let (disk, shared, node_opts) = (disk.clone(), shared.clone(), opts.clone());
        let sockets = hosts.sockets(&host(id));
        sim.host(host(id), move || {
            node_life(
                id,
                node_opts.clone(),
                disk.clone(),
                sockets.clone(),
                shared.clone(),
            )
        });
    }
    sim.client("check", checker(shared.clone(), opts.clone()));
    let mut report = Report {
        seed,
        ..Default::default()
    };
    let mut faults = Faults {
        rng: SmallRng::seed_from_u64(seed ^ 0x7af7_0000),
        pending: Vec::new(),
        down: None,
    };
    let mut step = 0u64;
    loop {
        match sim.step() {
            Ok(true) => break,
            Ok(false) => {}
            Err(e) => {
                shared.find(format!("the simulation stopped: {e}"));
                break;
            }
        }
        step += 1;
        let healed = shared.healed.load(Ordering::SeqCst);
        faults.undo_due(&mut sim, &shared, if healed { u64::MAX } else { step });
        if opts.faults && !healed && step.is_multiple_of(FAULT_EVERY) {
            faults.inject(&mut sim, &hosts, &disks, &shared, step, &mut report);
        }
    }
    report.simulated = sim.elapsed();
    let mut h = shared.history.lock();
    report.findings = std::mem::take(&mut h.findings);
    report.trace = std::mem::take(&mut h.trace);
    report
}

enum Undo {
    Restart(usize),
    Repair(String, String),
}

struct Faults {
    rng: SmallRng,
    pending: Vec<(u64, Undo)>,
    /// The node crashed now, if one is: one at a time, so a majority can always lead.
    down: Option<usize>,
}

impl Faults {
    fn inject(
        &mut self,
        sim: &mut turmoil::Sim<'_>,
        hosts: &Hosts,
        disks: &[MemoryDisk],
        shared: &Shared,
        step: u64,
        report: &mut Report,
    ) {
        let n = disks.len();
        match self.rng.random_range(0..100) {
            0..=9 if self.down.is_none() => {
                let i = self.rng.random_range(0..n);
                let name = host(i as NodeId + 1);
                hosts.crash(sim, &name);
                let rng = &mut self.rng;
                disks[i].crash(|unsynced| rng.random_range(0..=unsynced));
                shared.note(format!("{name} lost power at {:?}", sim.elapsed()));
                self.down = Some(i);
                let at = step + self.rng.random_range(500..8_000);
                self.pending.push((at, Undo::Restart(i)));
                report.crashes += 1;
            }
            10..=24 => {
                let a = self.rng.random_range(0..n);
                let b = (a + self.rng.random_range(1..n)) % n;
                let (a, b) = (host(a as NodeId + 1), host(b as NodeId + 1));
                sim.partition(a.as_str(), b.as_str());
                shared.note(format!("{a} and {b} partitioned at {:?}", sim.elapsed()));
                let at = step + self.rng.random_range(100..6_000);
                self.pending.push((at, Undo::Repair(a, b)));
                report.partitions += 1;
            }
            _ => {}
        }
    }

    fn undo_due(&mut self, sim: &mut turmoil::Sim<'_>, shared: &Shared, step: u64) {
        let (due, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|(at, _)| *at <= step);
        self.pending = rest;
        for (_, undo) in due {
            match undo {
                Undo::Restart(i) => {
                    let name = host(i as NodeId + 1);
                    sim.bounce(name.as_str());
                    shared.note(format!("{name} restarted at {:?}", sim.elapsed()));
                    self.down = None;
                }
                Undo::Repair(a, b) => sim.repair(a.as_str(), b.as_str()),
            }
        }
    }
}
