//! What the replicated log drives: each committed batch goes to an [`Applier`] (on a
//! NameNode, its namespace) in log order, and a snapshot is the applier's whole state at a
//! log position — kept beside the log so a restarted node starts from it, and sent to a
//! follower too far behind for the entries the log no longer holds.

use std::io::{self, Cursor};
use std::sync::Arc;

use ferrite_proto::ferrite::raft as pb;
use openraft::storage::RaftStateMachine;
use openraft::{
    BasicNode, Entry, EntryPayload, ErrorSubject, ErrorVerb, LogId, OptionalSend,
    RaftSnapshotBuilder, Snapshot, SnapshotMeta, StorageError, StoredMembership,
};
use parking_lot::Mutex;
use prost::Message;

use crate::log_store::Blobs;
use crate::wire;
use crate::{Batch, NodeId, TypeConfig};

const SNAPSHOT: &str = "raft.snapshot";
/// How soon a snapshot is tried again when the state is not at rest.
const SNAPSHOT_RETRY: std::time::Duration = std::time::Duration::from_millis(2);

/// The state a replicated log builds, fed committed batches in order.
pub trait Applier: Send + 'static {
    /// Applies the batch committed at `index`.
    fn apply(&mut self, index: u64, batch: &Batch) -> io::Result<()>;
    /// The whole state, for a snapshot of what the log applied so far — or None while
    /// the state holds more than that (a leader's own changes, applied before they
    /// commit): a snapshot must never carry what the group may not commit. The builder
    /// asks again shortly.
    fn snapshot(&mut self) -> io::Result<Option<Vec<u8>>>;
    /// Replaces the whole state with a snapshot's.
    fn restore(&mut self, state: &[u8]) -> io::Result<()>;
}

struct Inner {
    applier: Box<dyn Applier>,
    last_applied: Option<LogId<NodeId>>,
    membership: StoredMembership<NodeId, BasicNode>,
    current: Option<(SnapshotMeta<NodeId, BasicNode>, Vec<u8>)>,
    blobs: Blobs,
    built: u64,
}

/// openraft's state machine and snapshot builder (clones share one state).
#[derive(Clone)]
pub struct StateMachine(Arc<Mutex<Inner>>);

fn sm_err(verb: ErrorVerb, e: io::Error) -> StorageError<NodeId> {
    StorageError::from_io_error(ErrorSubject::StateMachine, verb, e)
}

impl StateMachine {
    /// The state machine over `applier`, restored from the snapshot kept in `blobs` if any.
    pub fn open(mut applier: Box<dyn Applier>, blobs: Blobs) -> io::Result<StateMachine> {
        let mut inner = Inner {
            applier: Box::new(Nothing),
            last_applied: None,
            membership: StoredMembership::default(),
            current: None,
            blobs,
            built: 0,
        };
        if let Some(b) = inner.blobs.get(SNAPSHOT)? {
            let s = pb::SnapshotProto::decode(&b[..]).map_err(io::Error::other)?;
            let meta = s
                .meta
                .ok_or_else(|| io::Error::other("a snapshot without meta"));
            let meta = wire::snapshot_meta_from(meta?).map_err(io::Error::other)?;
            applier.restore(&s.data)?;
            inner.last_applied = meta.last_log_id;
            inner.membership = meta.last_membership.clone();
            inner.current = Some((meta, s.data.to_vec()));
        }
        inner.applier = applier;
        Ok(StateMachine(Arc::new(Mutex::new(inner))))
    }

    /// The log position applied last.
    pub fn last_applied(&self) -> Option<LogId<NodeId>> {
        self.0.lock().last_applied
    }

    fn keep(
        inner: &mut Inner,
        meta: SnapshotMeta<NodeId, BasicNode>,
        data: Vec<u8>,
    ) -> io::Result<()> {
        let s = pb::SnapshotProto {
            meta: Some(wire::snapshot_meta_to(&meta)),
            data: data.clone(),
        };
        inner.blobs.put(SNAPSHOT, &s.encode_to_vec())?;
        inner.current = Some((meta, data));
        Ok(())
    }
}

/// Stands in for the applier while the snapshot is read at start.
struct Nothing;

impl Applier for Nothing {
    fn apply(&mut self, _: u64, _: &Batch) -> io::Result<()> {
        Ok(())
    }
    fn snapshot(&mut self) -> io::Result<Option<Vec<u8>>> {
        Ok(Some(Vec::new()))
    }
    fn restore(&mut self, _: &[u8]) -> io::Result<()> {
        Ok(())
    }
}

impl StateMachine {
    /// A snapshot of the state now, kept as the current one; None if the state is not at
    /// rest (see [`Applier::snapshot`]).
    fn try_snapshot(&self) -> io::Result<Option<Snapshot<TypeConfig>>> {
        let mut inner = self.0.lock();
        let Some(data) = inner.applier.snapshot()? else {
            return Ok(None);
        };
        inner.built += 1;
        let id = match inner.last_applied {
            Some(l) => format!("{}-{}-{}", l.leader_id.term, l.index, inner.built),
            None => format!("0-0-{}", inner.built),
        };
        let meta = SnapshotMeta {
            last_log_id: inner.last_applied,
            last_membership: inner.membership.clone(),
            snapshot_id: id,
        };
        Self::keep(&mut inner, meta.clone(), data.clone())?;
        Ok(Some(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        }))
    }
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<NodeId>> {
        // openraft builds in a task of its own, so waiting here holds up no apply: the
        // entries in flight commit meanwhile, and the state comes to rest between them.
        loop {
            let built = self.try_snapshot();
            if let Some(snapshot) = built.map_err(|e| sm_err(ErrorVerb::Write, e))? {
                return Ok(snapshot);
            }
            tokio::time::sleep(SNAPSHOT_RETRY).await;
        }
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = StateMachine;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<NodeId>>, StoredMembership<NodeId, BasicNode>), StorageError<NodeId>>
    {
        let inner = self.0.lock();
        Ok((inner.last_applied, inner.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<()>, StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut inner = self.0.lock();
        let mut out = Vec::new();
        for e in entries {
            match &e.payload {
                EntryPayload::Blank => {}
                EntryPayload::Normal(b) => {
                    inner.applier.apply(e.log_id.index, b).map_err(|err| {
                        StorageError::from_io_error(
                            ErrorSubject::Apply(e.log_id),
                            ErrorVerb::Write,
                            err,
                        )
                    })?
                }
                EntryPayload::Membership(m) => {
                    inner.membership = StoredMembership::new(Some(e.log_id), m.clone());
                }
            }
            inner.last_applied = Some(e.log_id);
            out.push(());
        }
        Ok(out)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<Cursor<Vec<u8>>>, StorageError<NodeId>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, BasicNode>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError<NodeId>> {
        let data = snapshot.into_inner();
        let mut inner = self.0.lock();
        inner
            .applier
            .restore(&data)
            .map_err(|e| sm_err(ErrorVerb::Write, e))?;
        inner.last_applied = meta.last_log_id;
        inner.membership = meta.last_membership.clone();
        Self::keep(&mut inner, meta.clone(), data).map_err(|e| sm_err(ErrorVerb::Write, e))
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, StorageError<NodeId>> {
        let inner = self.0.lock();
        Ok(inner.current.as_ref().map(|(meta, data)| Snapshot {
            meta: meta.clone(),
            snapshot: Box::new(Cursor::new(data.clone())),
        }))
    }
}
