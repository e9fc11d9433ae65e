//! A simulated client: Ferrite's IPC client speaking ClientProtocol to the NameNode over the
//! simulated network, working in a directory of its own and checking every answer against
//! the [`Model`].
//!
//! An answer that never came (a crash, a partition, a timeout) or a failure the journal
//! caused leaves the operation's outcome unknown. The client then reconnects, looks at its
//! directory, and makes what it saw durable with a barrier (a mutation that changes nothing
//! waits for every record appended before it) before it believes it: a NameNode may show
//! a change it has not synced, and lose it in a crash.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ferrite_ipc::client::{ClientError, IpcClient};
use ferrite_ipc::CLIENT_PROTOCOL;
use ferrite_proto::hdfs::*;
use parking_lot::Mutex;
use prost::Message;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::model::{Expect, Kind, Model, Op, Tree};
use crate::namenode::SUPERUSER;
use crate::net::SimConn;

/// How long a call may take before its answer counts as lost.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// The pause between attempts to reach a NameNode that does not answer.
const RETRY_PAUSE: Duration = Duration::from_millis(250);
/// Attempts at one call before its answer counts as lost (Hadoop's failover proxy makes
/// up to 15 by default; fewer keeps runs short, and a lost answer is then settled).
const ATTEMPTS: i32 = 4;

/// What the run found wrong, shared by every client.
pub(crate) type Findings = Arc<Mutex<Vec<String>>>;

/// What a call came back with.
enum Outcome<T> {
    Answered(T),
    /// The NameNode refused it: nothing changed.
    Refused(String),
    /// Unknown whether it took effect.
    Lost(Lost),
}

enum Lost {
    /// No answer came (a crash, a partition, a timeout): the call is sent again.
    NoAnswer(String),
    /// The NameNode answered that it could not make the change durable: sending it again
    /// would not tell more, so the client looks instead.
    Unsure(String),
}

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Lost::NoAnswer(w) | Lost::Unsure(w) => f.write_str(w),
        }
    }
}

impl<T> Outcome<T> {
    fn map<U>(self, f: impl FnOnce(T) -> U) -> Outcome<U> {
        match self {
            Outcome::Answered(t) => Outcome::Answered(f(t)),
            Outcome::Refused(e) => Outcome::Refused(e),
            Outcome::Lost(l) => Outcome::Lost(l),
        }
    }
}

pub(crate) struct Client {
    pub id: usize,
    user: String,
    root: String,
    rng: SmallRng,
    conn: Option<IpcClient>,
    pub model: Model,
    findings: Findings,
    /// What happened, in order: two runs of one seed must tell the same story.
    pub trace: Arc<Mutex<Vec<String>>>,
    next_name: u32,
    /// This client's clientId on every connection, and its last callId.
    client_id: [u8; 16],
    next_call: i32,
    /// Connections made so far: each one after the first follows a crash, a partition
    /// or a timeout, and the directory is checked whole before the next operation.
    connections: u32,
    checked_at: u32,
    /// Whether a call whose answer was lost is sent again (see `Options::retry_calls`).
    pub retry_calls: bool,
    /// Print each trace line as it happens (a replay).
    pub echo: bool,
    /// The run's NameNodes (several: an HA nameservice), and the one the next
    /// connection goes to: each new connection tries the next, as a failover proxy does.
    pub namenodes: usize,
    next_nn: usize,
}

impl Client {
    pub(crate) fn new(
        id: usize,
        seed: u64,
        findings: Findings,
        trace: Arc<Mutex<Vec<String>>>,
    ) -> Self {
        Client {
            id,
            user: format!("u{id}"),
            root: format!("/c{id}"),
            rng: SmallRng::seed_from_u64(seed.wrapping_mul(31).wrapping_add(id as u64)),
            conn: None,
            model: Model::default(),
            findings,
            trace,
            next_name: 0,
            client_id: [id as u8 + 1; 16],
            next_call: 0,
            connections: 0,
            checked_at: 1,
            retry_calls: false,
            echo: false,
            namenodes: 1,
            next_nn: 0,
        }
    }

    /// Connects as `user` to the next NameNode in turn.
    async fn connect_next(
        &mut self,
        user: &str,
        client_id: [u8; 16],
    ) -> Result<IpcClient, ClientError> {
        let addrs = crate::namenode::addrs(self.namenodes);
        let addr = addrs[self.next_nn % addrs.len()];
        self.next_nn += 1;
        connect(addr, user, client_id).await
    }

    fn note(&self, line: String) {
        let line = format!("c{} {line}", self.id);
        if self.echo {
            // A replay prints as it goes: a run that aborts still shows how it got there.
            eprintln!("{line}");
        }
        self.trace.lock().push(line);
    }

    fn find(&self, what: String) {
        self.findings
            .lock()
            .push(format!("client c{}: {what}", self.id));
    }

    /// Runs `ops` operations, then checks the whole directory against the model.
    pub(crate) async fn run(mut self, ops: usize) -> turmoil::Result {
        self.setup().await;
        for _ in 0..ops {
            if self.connections > self.checked_at {
                // Whatever the fault was, nothing acknowledged may be gone.
                self.checked_at = self.connections;
                self.verify("after reconnecting").await;
            }
            let op = self.pick();
            self.step(op).await;
        }
        self.verify("at the end").await;
        Ok(())
    }

    /// The client's directory, owned by it and snapshottable (made by the superuser).
    async fn setup(&mut self) {
        let root = self.root.clone();
        loop {
            let Ok(admin) = self.connect_next(SUPERUSER, [0; 16]).await else {
                tokio::time::sleep(RETRY_PAUSE).await;
                continue;
            };
            let done = async {
                call::<_, MkdirsResponseProto>(&admin, "mkdirs", &mkdirs(&root)).await?;
                let own = SetOwnerRequestProto {
                    src: root.clone(),
                    username: Some(self.user.clone()),
                    groupname: None,
                };
                call::<_, SetOwnerResponseProto>(&admin, "setOwner", &own).await?;
                let allow = AllowSnapshotRequestProto {
                    snapshot_root: root.clone(),
                };
                call::<_, AllowSnapshotResponseProto>(&admin, "allowSnapshot", &allow).await
            };
            if done.await.is_ok() {
                return;
            }
            tokio::time::sleep(RETRY_PAUSE).await;
        }
    }

    fn fresh(&mut self, prefix: &str) -> String {
        self.next_name += 1;
        format!("{prefix}{}", self.next_name)
    }

    /// A path that exists now, or none.
    fn existing(&mut self) -> Option<String> {
        let n = self.model.tree.len();
        (n > 0).then(|| {
            let i = self.rng.random_range(0..n);
            self.model.tree.keys().nth(i).cloned().expect("in range")
        })
    }

    /// A new path: under an existing directory, or at the top.
    fn new_path(&mut self, prefix: &str) -> String {
        let name = self.fresh(prefix);
        match self.existing() {
            Some(p) if self.model.tree[&p] == Kind::Dir && self.rng.random_bool(0.7) => {
                format!("{p}/{name}")
            }
            _ => name,
        }
    }

    /// The next operation: mostly ones that succeed, some that must fail.
    fn pick(&mut self) -> Op {
        let roll = self.rng.random_range(0..100);
        let existing = self.existing();
        match (roll, existing) {
            (0..=24, _) => Op::Mkdir(self.new_path("d")),
            (25..=49, _) => Op::Create(self.new_path("f")),
            (50..=56, Some(src)) => Op::Rename(src, self.new_path("r")),
            (57..=64, Some(src)) => {
                // Onto an existing path half the time: the overwrite rules.
                let dst = match self.rng.random_bool(0.5) {
                    true => self.existing().unwrap_or_else(|| self.fresh("r")),
                    false => self.new_path("r"),
                };
                let overwrite = self.rng.random_bool(0.7);
                Op::Rename2 {
                    src,
                    dst,
                    overwrite,
                }
            }
            (65..=74, Some(p)) => Op::Delete(p),
            (75..=82, _) => Op::Snapshot(self.fresh("s")),
            (83..=87, _) => {
                let names: Vec<String> = self.model.snapshots.keys().cloned().collect();
                match names.is_empty() {
                    true => Op::DeleteSnapshot("none".into()),
                    false => {
                        Op::DeleteSnapshot(names[self.rng.random_range(0..names.len())].clone())
                    }
                }
            }
            // Ones the model says must fail or change nothing.
            (88..=93, Some(p)) => Op::Create(p),
            (_, Some(p)) if self.model.tree[&p] == Kind::File => Op::Mkdir(format!("{p}/x")),
            _ => Op::Delete(self.fresh("missing")),
        }
    }

    async fn step(&mut self, op: Op) {
        let expect = self.model.expect(&op);
        let outcome = self.send(&op).await;
        match outcome {
            Outcome::Answered(got) => {
                self.note(format!("{op:?} -> {got}"));
                if Expect::Ok(got) != expect {
                    self.find(format!(
                        "{op:?} answered {got}, the model expects {expect:?}"
                    ));
                }
                if got {
                    self.model.apply(&op);
                }
            }
            Outcome::Refused(e) => {
                self.note(format!("{op:?} refused"));
                if expect != Expect::Fails {
                    self.find(format!(
                        "{op:?} refused ({e}), the model expects {expect:?}"
                    ));
                }
            }
            Outcome::Lost(why) => {
                self.note(format!("{op:?} lost ({why})"));
                self.settle(&op).await;
            }
        }
    }

    /// Runs one operation, each of its calls retried as an HA client's failover proxy
    /// retries: on a new connection, with the first attempt's clientId and callId, so the
    /// NameNode's retry cache answers a call that already ran.
    async fn send(&mut self, op: &Op) -> Outcome<bool> {
        let root = self.root.clone();
        let at = |p: &str| format!("{root}/{p}");
        match op {
            Op::Mkdir(p) => self
                .rpc::<_, MkdirsResponseProto>("mkdirs", &mkdirs(&at(p)))
                .await
                .map(|r| r.result),
            Op::Create(p) => {
                let client_name = format!("DFSClient_sim_{}", self.user);
                let req = CreateRequestProto {
                    src: at(p),
                    masked: FsPermissionProto { perm: 0o644 },
                    client_name: client_name.clone(),
                    create_flag: 0x01,
                    create_parent: true,
                    replication: 1,
                    block_size: 1 << 20,
                    ..Default::default()
                };
                let created = self.rpc::<_, CreateResponseProto>("create", &req).await;
                let Outcome::Answered(r) = created else {
                    return created.map(|_| true);
                };
                let done = CompleteRequestProto {
                    src: at(p),
                    client_name,
                    last: None,
                    file_id: r.fs.as_ref().and_then(|s| s.file_id),
                };
                self.rpc::<_, CompleteResponseProto>("complete", &done)
                    .await
                    .map(|r| r.result)
            }
            Op::Rename(src, dst) => {
                let req = RenameRequestProto {
                    src: at(src),
                    dst: at(dst),
                };
                self.rpc::<_, RenameResponseProto>("rename", &req)
                    .await
                    .map(|r| r.result)
            }
            Op::Rename2 {
                src,
                dst,
                overwrite,
            } => {
                let req = Rename2RequestProto {
                    src: at(src),
                    dst: at(dst),
                    overwrite_dest: *overwrite,
                    move_to_trash: None,
                };
                self.rpc::<_, Rename2ResponseProto>("rename2", &req)
                    .await
                    .map(|_| true)
            }
            Op::Delete(p) => {
                let req = DeleteRequestProto {
                    src: at(p),
                    recursive: true,
                };
                self.rpc::<_, DeleteResponseProto>("delete", &req)
                    .await
                    .map(|r| r.result)
            }
            Op::Snapshot(name) => {
                let req = CreateSnapshotRequestProto {
                    snapshot_root: root.clone(),
                    snapshot_name: Some(name.clone()),
                };
                self.rpc::<_, CreateSnapshotResponseProto>("createSnapshot", &req)
                    .await
                    .map(|_| true)
            }
            Op::DeleteSnapshot(name) => {
                let req = DeleteSnapshotRequestProto {
                    snapshot_root: root.clone(),
                    snapshot_name: name.clone(),
                };
                self.rpc::<_, DeleteSnapshotResponseProto>("deleteSnapshot", &req)
                    .await
                    .map(|_| true)
            }
        }
    }

    /// One call, sent again (same callId, the retry count up) while its answer is lost.
    async fn rpc<Req: Message, Resp: Message + Default>(
        &mut self,
        method: &str,
        req: &Req,
    ) -> Outcome<Resp> {
        self.next_call += 1;
        let call_id = self.next_call;
        let mut why = String::from("no connection");
        let attempts = if self.retry_calls { ATTEMPTS } else { 1 };
        for attempt in 0..attempts {
            if attempt > 0 {
                tokio::time::sleep(RETRY_PAUSE).await;
            }
            let Some(c) = self.connection().await else {
                continue;
            };
            if attempt > 0 {
                self.note(format!("{method} call {call_id} sent again ({why})"));
            }
            let sent = c.call_with_id(call_id, attempt, method, req);
            let answer = match tokio::time::timeout(CALL_TIMEOUT, sent).await {
                Ok(Ok(bytes)) => {
                    Resp::decode(bytes).map_err(|e| ClientError::BadReply(e.to_string()))
                }
                Ok(Err(e)) => Err(e),
                Err(_) => Err(ClientError::Closed),
            };
            match classify(answer) {
                Outcome::Lost(w) if !matches!(w, Lost::Unsure(_)) => why = w.to_string(),
                out => {
                    self.conn = Some(c);
                    return out;
                }
            }
        }
        Outcome::Lost(Lost::NoAnswer(why))
    }

    async fn connection(&mut self) -> Option<IpcClient> {
        if let Some(c) = self.conn.take().filter(|c| !c.is_closed()) {
            return Some(c);
        }
        let (user, id) = (self.user.clone(), self.client_id);
        let c = self.connect_next(&user, id).await.ok()?;
        self.connections += 1;
        Some(c)
    }

    /// Finds out whether `op`, whose answer was lost, took effect, and applies it if so.
    async fn settle(&mut self, op: &Op) {
        loop {
            tokio::time::sleep(RETRY_PAUSE).await;
            let Some(c) = self.connection().await else {
                continue;
            };
            let seen = async {
                let tree = list_tree(&c, &self.root).await?;
                let snaps = snapshot_names(&c, &self.root).await?;
                barrier(&c, &self.root).await?;
                Ok::<_, ClientError>((tree, snaps))
            };
            match tokio::time::timeout(CALL_TIMEOUT * 4, seen).await {
                Ok(Ok((tree, snaps))) => {
                    self.conn = Some(c);
                    let took = Model::took_effect(op, &tree, &snaps);
                    self.note(format!("{op:?} settled: {took}"));
                    if took {
                        self.model.apply(op);
                    }
                    return;
                }
                _ => continue,
            }
        }
    }

    /// The directory and its snapshots as the NameNode holds them, durably, against the
    /// model.
    async fn verify(&mut self, when: &str) {
        loop {
            let Some(c) = self.connection().await else {
                tokio::time::sleep(RETRY_PAUSE).await;
                continue;
            };
            let seen = async {
                barrier(&c, &self.root).await?;
                let tree = list_tree(&c, &self.root).await?;
                let mut snaps = BTreeMap::new();
                for name in snapshot_names(&c, &self.root).await? {
                    let at = format!("{}/.snapshot/{name}", self.root);
                    snaps.insert(name, list_tree(&c, &at).await?);
                }
                Ok::<_, ClientError>((tree, snaps))
            };
            match tokio::time::timeout(CALL_TIMEOUT * 8, seen).await {
                Ok(Ok((tree, snaps))) => {
                    if tree != self.model.tree {
                        self.find(format!(
                            "{when}, the directory holds {tree:?}, the model {:?}",
                            self.model.tree
                        ));
                    }
                    if snaps != self.model.snapshots {
                        self.find(format!(
                            "{when}, the snapshots hold {snaps:?}, the model {:?}",
                            self.model.snapshots
                        ));
                    }
                    self.conn = Some(c);
                    self.note(format!("verified {} entries {when}", tree.len()));
                    return;
                }
                _ => {
                    self.conn = None;
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
            }
        }
    }
}

async fn connect(
    addr: SocketAddr,
    user: &str,
    client_id: [u8; 16],
) -> Result<IpcClient, ClientError> {
    let stream = tokio::time::timeout(CALL_TIMEOUT, turmoil::net::TcpStream::connect(addr))
        .await
        .map_err(|_| ClientError::Closed)??;
    IpcClient::over_as(SimConn(stream, None), user, CLIENT_PROTOCOL, client_id).await
}

async fn call<Req: Message, Resp: Message + Default>(
    c: &IpcClient,
    method: &str,
    req: &Req,
) -> Result<Resp, ClientError> {
    match tokio::time::timeout(CALL_TIMEOUT, c.call(method, req)).await {
        Ok(r) => r,
        Err(_) => Err(ClientError::Closed),
    }
}

fn mkdirs(src: &str) -> MkdirsRequestProto {
    MkdirsRequestProto {
        src: src.into(),
        masked: FsPermissionProto { perm: 0o755 },
        create_parent: true,
        unmasked: None,
    }
}

/// Refusals that say nothing about whether the call took effect: the journal's failure
/// (applied in memory, maybe never durable) and a NameNode not ready to serve.
fn classify<T>(r: Result<T, ClientError>) -> Outcome<T> {
    match r {
        Ok(b) => Outcome::Answered(b),
        // A standby did nothing: the call goes to another NameNode (the retry cache
        // answers it there if an earlier active ran it).
        Err(ClientError::Remote { class, message, .. }) if class.ends_with("StandbyException") => {
            Outcome::Lost(Lost::NoAnswer(format!("{class}: {message}")))
        }
        Err(ClientError::Remote { class, message, .. }) => {
            let unsure = class.ends_with("RetriableException")
                || class.ends_with("SafeModeException")
                || (class == "java.io.IOException" && message.contains("journal"))
                || message.contains("disk failure");
            match unsure {
                true => Outcome::Lost(Lost::Unsure(format!("{class}: {message}"))),
                false => Outcome::Refused(format!("{class}: {message}")),
            }
        }
        Err(e) => Outcome::Lost(Lost::NoAnswer(e.to_string())),
    }
}

/// Waits until everything the NameNode appended so far is durable: `mkdirs` of the root,
/// which exists, changes nothing and answers only then.
async fn barrier(c: &IpcClient, root: &str) -> Result<(), ClientError> {
    let _: MkdirsResponseProto = call(c, "mkdirs", &mkdirs(root)).await?;
    Ok(())
}

/// Every entry under `root`, by relative path.
async fn list_tree(c: &IpcClient, root: &str) -> Result<Tree, ClientError> {
    let mut tree = Tree::new();
    let mut dirs = vec![String::new()];
    while let Some(rel) = dirs.pop() {
        let path = match rel.is_empty() {
            true => root.to_string(),
            false => format!("{root}/{rel}"),
        };
        let mut after = Vec::new();
        loop {
            let req = GetListingRequestProto {
                src: path.clone(),
                start_after: after.clone(),
                need_location: false,
            };
            let r: GetListingResponseProto = call(c, "getListing", &req).await?;
            let Some(list) = r.dir_list else { break };
            for st in &list.partial_listing {
                let name = String::from_utf8_lossy(&st.path).to_string();
                let child = match rel.is_empty() {
                    true => name,
                    false => format!("{rel}/{name}"),
                };
                let is_dir = st.file_type == hdfs_file_status_proto::FileType::IsDir as i32;
                if is_dir {
                    dirs.push(child.clone());
                }
                tree.insert(child, if is_dir { Kind::Dir } else { Kind::File });
            }
            match list.partial_listing.last() {
                Some(last) if list.remaining_entries > 0 => after = last.path.clone(),
                _ => break,
            }
        }
    }
    Ok(tree)
}

/// The names of the snapshots of `root`.
async fn snapshot_names(c: &IpcClient, root: &str) -> Result<Vec<String>, ClientError> {
    let req = GetListingRequestProto {
        src: format!("{root}/.snapshot"),
        start_after: Vec::new(),
        need_location: false,
    };
    let r: GetListingResponseProto = call(c, "getListing", &req).await?;
    Ok(r.dir_list
        .map(|l| {
            l.partial_listing
                .iter()
                .map(|s| String::from_utf8_lossy(&s.path).to_string())
                .collect()
        })
        .unwrap_or_default())
}
