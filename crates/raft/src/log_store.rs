//! The Raft log on a [`LogDisk`]: each entry a frame (length, CRC-32C, `EntryProto`),
//! appended and synced before openraft hears it is durable, so an entry a majority
//! acknowledged is on a majority's disks. At start the frames are read back up to the first
//! that is short or fails its checksum — the tail a power cut tore, which no one was told
//! was durable — and the log is cut there. The vote and the purge point live in a small
//! blob beside it; the entries stay in memory too, as few as the last snapshot leaves.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io;
use std::ops::RangeBounds;
use std::sync::Arc;

use ferrite_proto::ferrite::raft as pb;
use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{
    Entry, ErrorSubject, ErrorVerb, LogId, LogState, OptionalSend, RaftLogReader, StorageError,
    Vote,
};
use parking_lot::Mutex;
use prost::Message;

use crate::log_disk::LogDisk;
use crate::wire;
use crate::{NodeId, TypeConfig};

const META: &str = "raft.meta";
/// Length and checksum before each entry.
const FRAME_HEAD: usize = 8;

struct Inner {
    disk: Box<dyn LogDisk>,
    entries: BTreeMap<u64, Entry<TypeConfig>>,
    /// Where each entry's frame starts in the log.
    offsets: BTreeMap<u64, u64>,
    /// The log's length in bytes.
    end: u64,
    vote: Option<Vote<NodeId>>,
    purged: Option<LogId<NodeId>>,
}

/// openraft's log storage and log reader (clones share one log).
#[derive(Clone)]
pub struct LogStore(Arc<Mutex<Inner>>);

/// The named blobs kept on the log's disk (the state machine keeps its snapshot there).
#[derive(Clone)]
pub struct Blobs(Arc<Mutex<Inner>>);

impl Blobs {
    pub(crate) fn put(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.0.lock().disk.put(name, bytes)
    }

    pub(crate) fn get(&self, name: &str) -> io::Result<Option<Vec<u8>>> {
        self.0.lock().disk.get(name)
    }
}

fn frame(e: &Entry<TypeConfig>) -> Vec<u8> {
    let body = wire::entry_to(e).encode_to_vec();
    let mut out = Vec::with_capacity(FRAME_HEAD + body.len());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// The whole frames at the front of `log` (with each one's offset), and the length they
/// take: what follows is a torn tail.
fn whole_frames(log: &[u8]) -> (Vec<(u64, pb::EntryProto)>, usize) {
    let mut at = 0;
    let mut out = Vec::new();
    while log.len() - at >= FRAME_HEAD {
        let len = u32::from_le_bytes(log[at..at + 4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(log[at + 4..at + 8].try_into().expect("4 bytes"));
        let Some(body) = log.get(at + FRAME_HEAD..at + FRAME_HEAD + len) else {
            break;
        };
        if crc32c::crc32c(body) != crc {
            break;
        }
        let Ok(e) = pb::EntryProto::decode(body) else {
            break;
        };
        out.push((at as u64, e));
        at += FRAME_HEAD + len;
    }
    (out, at)
}

fn io_err(subject: ErrorSubject<NodeId>, verb: ErrorVerb, e: io::Error) -> StorageError<NodeId> {
    StorageError::from_io_error(subject, verb, e)
}

impl LogStore {
    /// Reads the log on `disk` back, cutting off a torn tail.
    pub fn open(mut disk: Box<dyn LogDisk>) -> io::Result<LogStore> {
        let meta = match disk.get(META)? {
            Some(b) => pb::LogMetaProto::decode(&b[..]).map_err(io::Error::other)?,
            None => pb::LogMetaProto::default(),
        };
        let vote = meta.vote.map(|v| wire::vote_from(Some(v))).transpose();
        let vote = vote.map_err(io::Error::other)?;
        let purged = wire::log_id_from(meta.purged).map_err(io::Error::other)?;
        let log = disk.read_log()?;
        let (frames, whole) = whole_frames(&log);
        if whole < log.len() {
            tracing::warn!(
                kept = whole,
                cut = log.len() - whole,
                "Raft log: a torn tail was cut off"
            );
            disk.truncate(whole as u64)?;
        }
        let mut inner = Inner {
            disk,
            entries: BTreeMap::new(),
            offsets: BTreeMap::new(),
            end: whole as u64,
            vote,
            purged,
        };
        for (offset, e) in frames {
            let e = wire::entry_from(e).map_err(io::Error::other)?;
            let index = e.log_id.index;
            inner.offsets.insert(index, offset);
            if purged.is_none_or(|p| index > p.index) {
                inner.entries.insert(index, e);
            }
        }
        Ok(LogStore(Arc::new(Mutex::new(inner))))
    }

    /// The blobs on this log's disk.
    pub fn blobs(&self) -> Blobs {
        Blobs(self.0.clone())
    }

    fn save_meta(inner: &mut Inner) -> io::Result<()> {
        let meta = pb::LogMetaProto {
            vote: inner.vote.as_ref().map(wire::vote_to),
            purged: inner.purged.as_ref().map(wire::log_id_to),
        };
        inner.disk.put(META, &meta.encode_to_vec())
    }

    fn append_now(inner: &mut Inner, entries: Vec<Entry<TypeConfig>>) -> io::Result<()> {
        let mut bytes = Vec::new();
        for e in entries {
            let index = e.log_id.index;
            inner.offsets.insert(index, inner.end + bytes.len() as u64);
            bytes.extend_from_slice(&frame(&e));
            inner.entries.insert(index, e);
        }
        inner.end += bytes.len() as u64;
        inner.disk.append(&bytes)?;
        inner.disk.sync()
    }

    /// Rewrites the log without its purged prefix once that prefix is most of it.
    fn compact_if_mostly_purged(inner: &mut Inner) -> io::Result<()> {
        let live_from = inner
            .entries
            .keys()
            .next()
            .and_then(|i| inner.offsets.get(i).copied())
            .unwrap_or(inner.end);
        if live_from * 2 <= inner.end {
            return Ok(());
        }
        let mut bytes = Vec::new();
        let mut offsets = BTreeMap::new();
        for (i, e) in &inner.entries {
            offsets.insert(*i, bytes.len() as u64);
            bytes.extend_from_slice(&frame(e));
        }
        inner.disk.replace_log(&bytes)?;
        inner.offsets = offsets;
        inner.end = bytes.len() as u64;
        Ok(())
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<TypeConfig>>, StorageError<NodeId>> {
        let inner = self.0.lock();
        Ok(inner.entries.range(range).map(|(_, e)| e.clone()).collect())
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<NodeId>> {
        let inner = self.0.lock();
        let last = inner.entries.values().next_back().map(|e| e.log_id);
        Ok(LogState {
            last_purged_log_id: inner.purged,
            last_log_id: last.or(inner.purged),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError<NodeId>> {
        let mut inner = self.0.lock();
        inner.vote = Some(*vote);
        Self::save_meta(&mut inner).map_err(|e| io_err(ErrorSubject::Vote, ErrorVerb::Write, e))
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError<NodeId>> {
        Ok(self.0.lock().vote)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let done = Self::append_now(&mut self.0.lock(), entries.into_iter().collect());
        match done {
            Ok(()) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                callback.log_io_completed(Err(io::Error::new(e.kind(), e.to_string())));
                Err(io_err(ErrorSubject::Logs, ErrorVerb::Write, e))
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        let mut inner = self.0.lock();
        let Some(&cut) = inner.offsets.get(&log_id.index) else {
            return Ok(());
        };
        inner.entries.split_off(&log_id.index);
        inner.offsets.split_off(&log_id.index);
        inner.end = cut;
        inner
            .disk
            .truncate(cut)
            .map_err(|e| io_err(ErrorSubject::Logs, ErrorVerb::Delete, e))
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        let mut inner = self.0.lock();
        inner.purged = Some(log_id);
        let keep = inner.entries.split_off(&(log_id.index + 1));
        inner.entries = keep;
        Self::save_meta(&mut inner)
            .and_then(|()| Self::compact_if_mostly_purged(&mut inner))
            .map_err(|e| io_err(ErrorSubject::Logs, ErrorVerb::Delete, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log_disk::MemoryDisk;
    use crate::Batch;
    use openraft::{CommittedLeaderId, EntryPayload};

    fn entry(index: u64, term: u64, body: &'static [u8]) -> Entry<TypeConfig> {
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(term, 1), index),
            payload: EntryPayload::Normal(Batch(bytes::Bytes::from_static(body))),
        }
    }

    fn add(store: &LogStore, entries: Vec<Entry<TypeConfig>>) {
        LogStore::append_now(&mut store.0.lock(), entries).unwrap();
    }

    fn indexes(store: &LogStore) -> Vec<(u64, u64)> {
        let inner = store.0.lock();
        inner
            .entries
            .values()
            .map(|e| (e.log_id.index, e.log_id.leader_id.term))
            .collect()
    }

    #[tokio::test]
    async fn a_torn_tail_is_cut_and_synced_entries_survive() {
        let disk = MemoryDisk::default();
        let mut store = LogStore::open(Box::new(disk.clone())).unwrap();
        add(&store, vec![entry(1, 1, b"a"), entry(2, 1, b"bb")]);
        store.save_vote(&Vote::new(1, 1)).await.unwrap();
        // An append the disk took but never synced, torn by the power cut.
        disk.clone()
            .append(&frame(&entry(3, 1, b"ccc"))[..5])
            .unwrap();
        disk.crash(|n| n);
        let mut store = LogStore::open(Box::new(disk.clone())).unwrap();
        assert_eq!(indexes(&store), [(1, 1), (2, 1)]);
        assert_eq!(store.read_vote().await.unwrap(), Some(Vote::new(1, 1)));
        // The cut is durable: a new entry follows the whole ones.
        add(&store, vec![entry(3, 2, b"new")]);
        let store = LogStore::open(Box::new(disk)).unwrap();
        assert_eq!(indexes(&store), [(1, 1), (2, 1), (3, 2)]);
    }

    #[tokio::test]
    async fn a_new_leader_cuts_the_tail_and_a_purge_compacts() {
        let disk = MemoryDisk::default();
        let mut store = LogStore::open(Box::new(disk.clone())).unwrap();
        add(&store, (1..=6).map(|i| entry(i, 1, b"x")).collect());
        store
            .truncate(LogId::new(CommittedLeaderId::new(1, 1), 5))
            .await
            .unwrap();
        add(&store, vec![entry(5, 2, b"y")]);
        store
            .purge(LogId::new(CommittedLeaderId::new(1, 1), 4))
            .await
            .unwrap();
        let state = store.get_log_state().await.unwrap();
        assert_eq!(state.last_purged_log_id.unwrap().index, 4);
        assert_eq!(state.last_log_id.unwrap().index, 5);
        let mut store = LogStore::open(Box::new(disk)).unwrap();
        assert_eq!(indexes(&store), [(5, 2)]);
        assert_eq!(store.try_get_log_entries(5..6).await.unwrap().len(), 1);
        assert!(store.try_get_log_entries(1..5).await.unwrap().is_empty());
    }
}
