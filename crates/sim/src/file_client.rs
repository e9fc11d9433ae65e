//! A simulated file client: Ferrite's own client library (`FileSystem`, `FileWriter`,
//! `FileReader`) writing, hflushing, appending, reading and deleting files through the
//! simulated DataNodes, and checking what it reads against what it wrote.
//!
//! What the cluster acknowledged must never be lost: a file's bytes up to its last
//! successful hflush or close. What it did not acknowledge may or may not be there, but
//! a file never holds a byte that was not written to it. So, for every file, its content
//! is a prefix of what was written and at least as long as what was acknowledged; a file
//! closed cleanly holds exactly what was written. At the end, once the faults are healed,
//! every file left open is recovered (recoverLease), every block must reach its
//! replication factor, and every replica of every block must hold the same, right bytes.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ferrite_client::block_reader::BlockReader;
use ferrite_client::{ClientOptions, CreateOptions, FileSystem, FileWriter};
use ferrite_proto::hdfs::LocatedBlockProto;
use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};

use crate::client::Findings;
use crate::datanode::BLOCK_SIZE;
use crate::namenode::SUPERUSER;
use crate::net::SimDial;

/// Longest an operation may take before its outcome counts as unknown.
const OP_TIMEOUT: Duration = Duration::from_secs(30);
const PAUSE: Duration = Duration::from_millis(250);
/// The replication every file asks for (the run has more DataNodes than this).
pub(crate) const REPLICATION: usize = 3;
/// How long the end waits for every block to reach its replication.
const CONVERGE_WITHIN: Duration = Duration::from_secs(240);

/// What the client knows of one file.
#[derive(Debug, Default)]
struct Written {
    /// Every byte sent to it, in order.
    bytes: Vec<u8>,
    /// Bytes the cluster acknowledged (hflushed or closed): never to be lost.
    acked: usize,
    /// Closed by a close that succeeded, with nothing unsure since.
    closed: bool,
    /// A create or delete whose outcome is unknown: the file may be absent.
    may_be_absent: bool,
    /// Left open by its writer: where its last block starts, and the nodes holding it
    /// with their data-fault counts then.
    abandoned: Option<Abandoned>,
}

/// An open file's last block no one writes any more. Nothing copies such a block (HDFS
/// re-replicates complete blocks only), so once every node holding it has lost data —
/// a power cut takes unsynced bytes, a dead disk everything — its unsynced bytes may be
/// gone, in HDFS as here. Until then, every acknowledged byte must survive.
#[derive(Debug)]
struct Abandoned {
    block_start: usize,
    holders: Vec<(usize, u64)>,
}

/// Shared with the run: file clients in their final checks, whether the run has healed
/// every fault for them, and which DataNodes serve (one flag each, set by the host once
/// its DataNode has joined the NameNode, cleared when a new life of it begins).
#[derive(Clone, Default)]
pub(crate) struct EndGate {
    pub waiting: Arc<AtomicUsize>,
    pub healed: Arc<AtomicBool>,
    pub serving: Arc<Vec<AtomicBool>>,
    /// Per DataNode, the faults that lost data on it (power cuts, dead disks).
    pub data_faults: Arc<Vec<AtomicU64>>,
}

impl EndGate {
    pub(crate) fn new(datanodes: usize) -> Self {
        EndGate {
            serving: Arc::new((0..datanodes).map(|_| AtomicBool::new(false)).collect()),
            data_faults: Arc::new((0..datanodes).map(|_| AtomicU64::new(0)).collect()),
            ..Default::default()
        }
    }
}

pub(crate) struct FileClient {
    pub id: usize,
    rng: SmallRng,
    fs: Option<FileSystem>,
    files: BTreeMap<String, Written>,
    next_name: u32,
    /// NameNode connections made so far.
    connections: u32,
    findings: Findings,
    trace: Arc<Mutex<Vec<String>>>,
    gate: EndGate,
    pub echo: bool,
    /// The run's NameNodes: several make an HA nameservice, which the client fails over
    /// across by itself.
    pub namenodes: usize,
}

impl FileClient {
    pub(crate) fn new(
        id: usize,
        seed: u64,
        findings: Findings,
        trace: Arc<Mutex<Vec<String>>>,
        gate: EndGate,
    ) -> Self {
        FileClient {
            id,
            rng: SmallRng::seed_from_u64(seed.wrapping_mul(131).wrapping_add(7 + id as u64)),
            fs: None,
            files: BTreeMap::new(),
            next_name: 0,
            connections: 0,
            findings,
            trace,
            gate,
            echo: false,
            namenodes: 1,
        }
    }

    fn note(&self, line: String) {
        let line = format!("w{} {line}", self.id);
        if self.echo {
            eprintln!("{line}");
        }
        self.trace.lock().push(line);
    }

    /// Notes a failed operation. One that got no answer from a server leaves the
    /// NameNode connection in doubt (a crashed host sends no reset), so the next
    /// operation connects again.
    fn failed(&mut self, what: String, e: &ferrite_client::Error) {
        self.note(format!("{what}: {e}"));
        if e.class().is_none() {
            self.fs = None;
        }
    }

    fn find(&self, what: String) {
        self.findings
            .lock()
            .push(format!("file client w{}: {what}", self.id));
    }

    pub(crate) async fn run(mut self, ops: usize, datanodes: usize) -> turmoil::Result {
        self.await_datanodes(datanodes).await;
        for _ in 0..ops {
            if self.connected().await.is_none() {
                continue;
            }
            match self.rng.random_range(0..100) {
                0..=44 => self.write_new().await,
                45..=64 => self.append().await,
                65..=89 => self.read_back().await,
                _ => self.delete().await,
            }
        }
        self.gate.waiting.fetch_add(1, Ordering::SeqCst);
        while !self.gate.healed.load(Ordering::SeqCst) {
            tokio::time::sleep(PAUSE).await;
        }
        self.finish().await;
        Ok(())
    }

    /// Waits (a minute at most) until `n` DataNodes are live, as a cluster is started
    /// before it is written to: a block written while one node was up has one copy, and
    /// that node's dead disk loses it, in HDFS as here.
    async fn await_datanodes(&mut self, n: usize) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while tokio::time::Instant::now() < deadline {
            if let Some(fs) = self.connected().await {
                if let Ok(live) = timed(fs.live_datanodes()).await {
                    if live.len() >= n {
                        return;
                    }
                }
            }
            tokio::time::sleep(PAUSE).await;
        }
    }

    /// The NameNode connection, made again after it broke.
    async fn connected(&mut self) -> Option<FileSystem> {
        if let Some(fs) = self.fs.as_ref().filter(|fs| fs.is_connected()) {
            return Some(fs.clone());
        }
        self.fs = None;
        let nns = crate::namenode::addrs(self.namenodes);
        // A clientId of its own per connection, as each new client process has: callIds
        // start again at 0 on a new connection, and the NameNode's retry cache would take
        // a new call for an old one of the same clientId and callId.
        self.connections += 1;
        let mut client_id = [0x40 + self.id as u8; 16];
        client_id[..4].copy_from_slice(&self.connections.to_be_bytes());
        let opts = ClientOptions {
            user: SUPERUSER.into(),
            dial: Arc::new(SimDial::default()),
            client_id: Some(client_id),
            ..Default::default()
        };
        let made = tokio::time::timeout(OP_TIMEOUT, FileSystem::connect_any(&nns, &opts)).await;
        match made {
            Ok(Ok(fs)) => {
                self.fs = Some(fs.clone());
                Some(fs)
            }
            _ => {
                tokio::time::sleep(PAUSE).await;
                None
            }
        }
    }

    fn random_bytes(&mut self) -> Vec<u8> {
        let n = match self.rng.random_range(0..10) {
            0 => self.rng.random_range(1..100),
            1..=6 => self.rng.random_range(100..6_000),
            _ => self.rng.random_range(6_000..40_000),
        };
        let mut b = vec![0u8; n];
        self.rng.fill_bytes(&mut b);
        b
    }

    /// A closed file picked at random.
    fn closed_file(&mut self) -> Option<String> {
        let closed: Vec<&String> = self
            .files
            .iter()
            .filter(|(_, w)| w.closed)
            .map(|(p, _)| p)
            .collect();
        (!closed.is_empty()).then(|| closed[self.rng.random_range(0..closed.len())].clone())
    }

    async fn write_new(&mut self) {
        let Some(fs) = self.fs.clone() else { return };
        self.next_name += 1;
        let path = format!("/w{}/f{}", self.id, self.next_name);
        let opts = CreateOptions {
            replication: Some(REPLICATION as u16),
            block_size: Some(BLOCK_SIZE),
            ..Default::default()
        };
        self.files.insert(
            path.clone(),
            Written {
                may_be_absent: true,
                ..Default::default()
            },
        );
        match timed(fs.create(&path, &opts)).await {
            Ok(w) => {
                self.note(format!("create {path}: ok"));
                self.files.get_mut(&path).expect("inserted").may_be_absent = false;
                self.stream(&fs, &path, w).await;
            }
            Err(e) => self.failed(format!("create {path}"), &e),
        }
    }

    async fn append(&mut self) {
        let Some(fs) = self.fs.clone() else { return };
        let Some(path) = self.closed_file() else {
            return;
        };
        // Until the append closes again, its outcome is open.
        self.files.get_mut(&path).expect("picked").closed = false;
        match timed(fs.append(&path)).await {
            Ok(w) => {
                self.note(format!("append {path}: ok"));
                self.stream(&fs, &path, w).await;
            }
            Err(e) => self.failed(format!("append {path}"), &e),
        }
    }

    /// Writes a few chunks, hflushing some, then closes (or, now and then, walks away
    /// from the file, leaving it to lease recovery).
    async fn stream(&mut self, fs: &FileSystem, path: &str, mut w: FileWriter) {
        for _ in 0..self.rng.random_range(1..5) {
            let chunk = self.random_bytes();
            self.files
                .get_mut(path)
                .expect("tracked")
                .bytes
                .extend_from_slice(&chunk);
            if let Err(e) = timed(w.write(&chunk)).await {
                self.failed(format!("write {path} +{}", chunk.len()), &e);
                return;
            }
            if self.rng.random_bool(0.5) {
                if let Err(e) = timed(w.hflush()).await {
                    self.failed(format!("hflush {path}"), &e);
                    return;
                }
                let file = self.files.get_mut(path).expect("tracked");
                file.acked = file.bytes.len();
                let acked = file.acked;
                self.note(format!("hflush {path}: {acked} bytes"));
                if self.rng.random_bool(0.5) {
                    self.check_flushed(fs, path).await;
                }
            }
        }
        if self.rng.random_bool(0.1) {
            self.note(format!("abandon {path}"));
            let abandoned = self.last_block_holders(fs, path).await;
            self.files.get_mut(path).expect("tracked").abandoned = abandoned;
            return;
        }
        match timed(w.close()).await {
            Ok(()) => {
                let file = self.files.get_mut(path).expect("tracked");
                file.acked = file.bytes.len();
                file.closed = true;
                let acked = file.acked;
                self.note(format!("close {path}: {acked} bytes"));
            }
            Err(e) => self.failed(format!("close {path}"), &e),
        }
    }

    /// Where `path`'s last block starts and which DataNodes hold it (with their
    /// data-fault counts now), if the NameNode answers.
    async fn last_block_holders(&self, fs: &FileSystem, path: &str) -> Option<Abandoned> {
        let lbs = timed(fs.block_locations(path)).await.ok()?;
        let last = lbs.last_block.or_else(|| lbs.blocks.last().cloned())?;
        let holders = last
            .locs
            .iter()
            .filter_map(|l| {
                let i = (0..self.gate.data_faults.len()).find(|&i| {
                    turmoil::lookup(crate::datanode::host(i)).to_string() == l.id.ip_addr
                })?;
                Some((i, self.gate.data_faults[i].load(Ordering::SeqCst)))
            })
            .collect();
        Some(Abandoned {
            block_start: last.offset as usize,
            holders,
        })
    }

    /// The bytes of `path` that must have survived: all it acknowledged, unless it was
    /// abandoned and every holder of its last block has lost data since.
    fn must_survive(&self, path: &str) -> usize {
        let file = &self.files[path];
        match &file.abandoned {
            Some(a)
                if !a.holders.is_empty()
                    && a.holders.iter().all(|&(i, faults)| {
                        self.gate.data_faults[i].load(Ordering::SeqCst) > faults
                    }) =>
            {
                file.acked.min(a.block_start)
            }
            _ => file.acked,
        }
    }

    /// A new reader sees every hflushed byte, and nothing else.
    async fn check_flushed(&mut self, fs: &FileSystem, path: &str) {
        let got = match timed(read_all(fs, path)).await {
            Ok(b) => b,
            Err(e) => return self.failed(format!("read after hflush {path}"), &e),
        };
        let file = &self.files[path];
        if got != file.bytes[..file.acked] {
            self.find(format!(
                "{path}: after an hflush of {} bytes a reader got {} bytes{}",
                file.acked,
                got.len(),
                first_difference(&got, &file.bytes)
            ));
        }
    }

    async fn read_back(&mut self) {
        let Some(fs) = self.fs.clone() else { return };
        let Some(path) = self.closed_file() else {
            return;
        };
        match timed(read_all(&fs, &path)).await {
            Ok(got) => {
                let want = &self.files[&path].bytes;
                self.note(format!("read {path}: {} bytes", got.len()));
                if &got != want {
                    self.find(format!(
                        "{path}: read {} bytes of a closed file of {}{}",
                        got.len(),
                        want.len(),
                        first_difference(&got, want)
                    ));
                }
            }
            Err(e) => self.failed(format!("read {path}"), &e),
        }
    }

    async fn delete(&mut self) {
        let Some(fs) = self.fs.clone() else { return };
        let Some(path) = self.closed_file() else {
            return;
        };
        match timed(fs.delete(&path, false)).await {
            Ok(true) => {
                self.note(format!("delete {path}: ok"));
                self.files.remove(&path);
            }
            Ok(false) => self.find(format!("delete {path}: the closed file was not there")),
            Err(e) => {
                self.failed(format!("delete {path}"), &e);
                let file = self.files.get_mut(&path).expect("picked");
                file.may_be_absent = true;
                file.closed = false;
            }
        }
    }

    /// With the faults healed: recover what was left open, wait for every block to
    /// reach its replication, then check every file and every replica.
    async fn finish(&mut self) {
        let mut fs = loop {
            if let Some(fs) = self.connected().await {
                break fs;
            }
        };
        self.await_serving_datanodes().await;
        let paths: Vec<String> = self.files.keys().cloned().collect();
        for path in &paths {
            if !self.files[path].closed {
                self.recover(&mut fs, path).await;
            }
        }
        self.converge(&fs).await;
        for path in &paths {
            if self.files.contains_key(path) {
                self.check_file(&fs, path).await;
            }
        }
    }

    /// recoverLease until the file is closed (or found gone, where that may be).
    async fn recover(&mut self, fs: &mut FileSystem, path: &str) {
        for _ in 0..120 {
            match timed(fs.recover_lease(path)).await {
                Ok(true) => return,
                Ok(false) => {}
                Err(e)
                    if e.class()
                        .is_some_and(|c| c.ends_with("FileNotFoundException")) =>
                {
                    if !self.files[path].may_be_absent {
                        self.find(format!("{path} is gone, but was never deleted"));
                    }
                    self.files.remove(path);
                    return;
                }
                Err(e) => {
                    self.failed(format!("recoverLease {path}"), &e);
                    if let Some(again) = self.connected().await {
                        *fs = again;
                    }
                }
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        self.find(format!("{path}: its lease was never recovered"));
    }

    /// Waits until every block of every file has its replication, or reports those that
    /// never got there.
    async fn converge(&mut self, fs: &FileSystem) {
        let deadline = tokio::time::Instant::now() + CONVERGE_WITHIN;
        loop {
            let mut short = Vec::new();
            for path in self.files.keys() {
                match timed(fs.block_locations(path)).await {
                    Ok(lbs) => short.extend(
                        lbs.blocks
                            .iter()
                            .filter(|b| b.locs.len() != REPLICATION)
                            .map(|b| format!("{path} blk_{}: {}", b.b.block_id, b.locs.len())),
                    ),
                    Err(e) => short.push(format!("{path}: {e}")),
                }
            }
            if short.is_empty() {
                return;
            }
            if tokio::time::Instant::now() >= deadline {
                self.find(format!(
                    "replicas never converged to {REPLICATION} in {CONVERGE_WITHIN:?}: {}",
                    short.join("; ")
                ));
                return;
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    }

    /// Waits for every DataNode restarted by the healing to serve again. Until it has
    /// joined, the NameNode (which has not yet declared its last life dead) still lists
    /// its replicas, and reading them fails for a reason no client could avoid.
    async fn await_serving_datanodes(&mut self) {
        let deadline = tokio::time::Instant::now() + CONVERGE_WITHIN;
        let serving = self.gate.serving.clone();
        while let Some(i) = serving.iter().position(|s| !s.load(Ordering::SeqCst)) {
            if tokio::time::Instant::now() >= deadline {
                let host = crate::datanode::host(i);
                return self.find(format!(
                    "{host} did not serve again within {CONVERGE_WITHIN:?}"
                ));
            }
            tokio::time::sleep(PAUSE).await;
        }
    }

    /// The file holds a prefix of what was written, no shorter than what was
    /// acknowledged (all of it, if it was closed), and so does every replica.
    async fn check_file(&mut self, fs: &FileSystem, path: &str) {
        let file = &self.files[path];
        let got = match timed(read_all(fs, path)).await {
            Ok(b) => b,
            Err(e) => {
                if !(file.may_be_absent
                    && e.class().is_some_and(|c| c.ends_with("NotFoundException")))
                {
                    self.find(format!("{path}: unreadable at the end: {e}"));
                }
                return;
            }
        };
        let whole = file.closed && got.len() != file.bytes.len();
        let must = self.must_survive(path);
        if got.len() < file.acked && got.len() >= must {
            let lost = file.acked - got.len();
            self.note(format!(
                "{path}: {lost} acknowledged bytes lost with every holder of its open last block"
            ));
        }
        let file = &self.files[path];
        if whole || got.len() < must || !file.bytes.starts_with(&got) {
            self.find(format!(
                "{path}: holds {} bytes; {} were written, {} acknowledged ({must} to survive){}{}",
                got.len(),
                file.bytes.len(),
                file.acked,
                if file.closed {
                    ", and it was closed"
                } else {
                    ""
                },
                first_difference(&got, &file.bytes)
            ));
            return;
        }
        let blocks = match timed(fs.block_locations(path)).await {
            Ok(lbs) => lbs.blocks,
            Err(e) => return self.find(format!("{path}: no block locations at the end: {e}")),
        };
        let mut bad = Vec::new();
        for lb in &blocks {
            let at = lb.offset as usize;
            let len = lb.b.num_bytes.unwrap_or(0) as usize;
            let want = &got[at.min(got.len())..(at + len).min(got.len())];
            for i in 0..lb.locs.len() {
                match timed(read_replica(lb, i, len as u64)).await {
                    Ok(r) if r == want => {}
                    Ok(r) => bad.push(format!(
                        "blk_{} on {}: {} bytes, not the {} expected",
                        lb.b.block_id,
                        lb.locs[i].id.ip_addr,
                        r.len(),
                        want.len()
                    )),
                    // A surplus copy (a late replication made four) may be deleted
                    // between the listing and the read: only a listed one must read.
                    Err(_) if !still_listed(fs, path, lb, i).await => {}
                    Err(e) => bad.push(format!(
                        "blk_{} on {}: {e}",
                        lb.b.block_id, lb.locs[i].id.ip_addr
                    )),
                }
            }
        }
        if !bad.is_empty() {
            self.find(format!("{path}: replicas differ: {}", bad.join("; ")));
        }
    }
}

/// Whether the NameNode still lists replica `i` of block `lb` of `path`.
async fn still_listed(fs: &FileSystem, path: &str, lb: &LocatedBlockProto, i: usize) -> bool {
    let uuid = &lb.locs[i].id.datanode_uuid;
    match timed(fs.block_locations(path)).await {
        Ok(now) => now
            .blocks
            .iter()
            .filter(|b| b.b.block_id == lb.b.block_id)
            .any(|b| b.locs.iter().any(|l| &l.id.datanode_uuid == uuid)),
        Err(_) => true,
    }
}

/// Bounds an operation in time: one that hangs behind a partition counts as failed.
async fn timed<T>(
    f: impl std::future::Future<Output = ferrite_client::Result<T>>,
) -> ferrite_client::Result<T> {
    tokio::time::timeout(OP_TIMEOUT, f)
        .await
        .unwrap_or_else(|_| {
            Err(ferrite_client::Error::DataNode(format!(
                "no answer in {OP_TIMEOUT:?}"
            )))
        })
}

async fn read_all(fs: &FileSystem, path: &str) -> ferrite_client::Result<Vec<u8>> {
    fs.open(path).await?.read_to_end().await
}

/// A whole block as one of its DataNodes holds it.
async fn read_replica(
    lb: &LocatedBlockProto,
    i: usize,
    len: u64,
) -> ferrite_client::Result<Vec<u8>> {
    let mut r =
        BlockReader::open(&SimDial::default(), &lb.locs[i], lb, "sim-check", 0, len).await?;
    let mut out = Vec::with_capacity(len as usize);
    while let Some(b) = r.next().await? {
        out.extend_from_slice(&b);
    }
    Ok(out)
}

/// Where two byte strings first differ, for a finding's message.
fn first_difference(got: &[u8], want: &[u8]) -> String {
    match got.iter().zip(want).position(|(a, b)| a != b) {
        Some(i) => format!(" (first difference at byte {i})"),
        None => String::new(),
    }
}
