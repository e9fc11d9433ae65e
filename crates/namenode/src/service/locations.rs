//! Where a file's blocks are: replicas in reader order, as domain values for the replies
//! that carry a few blocks (addBlock, append, listings with locations), and through a
//! [`LocatedSink`] for getBlockLocations, whose reply is encoded straight from the block
//! map without copying a node per block.

use std::ops::Range;
use std::sync::atomic::Ordering;

use ferrite_blocktoken::{Modes, Token};

use super::{Admitted, NameNodeService};
use crate::blocks::placement::sort_for_reader;
use crate::blocks::registry::{Liveness, Node, NodeId, NodeIx, Registry};
use crate::blocks::BlockManager;
use crate::clock::now_ms;
use crate::error::FsError;
use crate::namespace::blocks::{BlockRange, Placed};
use crate::namespace::inode::Block;
use crate::namespace::perm;

/// A DataNode as a client is shown it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatanodeInfo {
    pub id: NodeId,
    pub capacity: u64,
    pub dfs_used: u64,
    pub remaining: u64,
    pub last_update_ms: i64,
    pub xceivers: u32,
    /// When its last full block report was processed (0: never).
    pub last_block_report_ms: i64,
    pub blocks: u64,
    /// Its volumes, as its last heartbeat reported them.
    pub storages: Vec<crate::blocks::registry::StorageState>,
    /// Its network location (`/default-rack` without a topology mapping).
    pub rack: String,
    pub admin: crate::blocks::registry::AdminState,
    /// While leaving: blocks still needing its replicas (see `Node::leaving_blocks`).
    pub leaving_blocks: u64,
}

impl DatanodeInfo {
    pub fn of(n: &Node) -> Self {
        DatanodeInfo {
            id: n.id.clone(),
            capacity: n.capacity(),
            dfs_used: n.dfs_used(),
            remaining: n.remaining(),
            last_update_ms: n.last_heartbeat_ms,
            xceivers: n.xceivers,
            last_block_report_ms: n.last_block_report_ms,
            blocks: n.blocks,
            storages: n.storages.clone(),
            rack: n.rack.clone(),
            admin: n.admin,
            leaving_blocks: n.leaving_blocks,
        }
    }
}

/// One replica's place: the node and the storage on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub node: DatanodeInfo,
    pub storage_uuid: String,
    /// `StorageTypeProto` of that storage.
    pub storage_type: u8,
}

/// A block with its replicas in the order a reader (or the pipeline) should use them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocatedBlock {
    pub block: Block,
    /// Where the block starts in its file.
    pub offset: u64,
    pub locations: Vec<Location>,
    /// `None` when block tokens are off (the wire then carries an empty token).
    pub token: Option<Token>,
}

impl LocatedBlock {
    /// The block at `p` on replicas `locs`, without a token.
    pub fn new(p: &Placed, reg: &Registry, locs: &[(NodeIx, u8)]) -> Self {
        LocatedBlock {
            block: p.block,
            offset: p.offset,
            locations: locs
                .iter()
                .map(|&(ix, s)| {
                    let n = reg.get(ix);
                    Location {
                        node: DatanodeInfo::of(n),
                        storage_uuid: n.storage_uuid(s),
                        storage_type: n.storage_type(s),
                    }
                })
                .collect(),
            token: None,
        }
    }
}

/// A file's blocks with their replicas.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocatedBlocks {
    pub file_len: u64,
    pub blocks: Vec<LocatedBlock>,
    pub under_construction: bool,
    pub last: Option<LocatedBlock>,
}

/// Receives a getBlockLocations answer block by block, straight from the block map (the
/// IPC front end encodes its reply this way; see `rpc/located_reply.rs`).
pub trait LocatedSink {
    /// Called once, first. `tokens` covers the blocks by index ranges, in the order they
    /// are pushed.
    fn start(
        pool: &str,
        file_len: u64,
        under_construction: bool,
        tokens: Vec<(Range<usize>, Option<Token>)>,
    ) -> Self;
    /// Each block in file order, the last block of a file being written last.
    fn push(&mut self, block: &Placed, replicas: &[(NodeIx, u8)], nodes: &Registry, is_last: bool);
}

/// What a look-up of a file's blocks found: the answer, or that the file's access time
/// must move first (its path, for the record).
enum Located<S> {
    Ready(S),
    Touch(String),
}

/// Who reads, and when: replicas are ordered by distance to `ip`, ties broken by `seed`.
#[derive(Clone, Copy)]
struct Reader<'a> {
    ip: &'a str,
    /// The reader's rack, when known (see [`NameNodeService::reader_rack`]).
    rack: Option<&'a str>,
    now: i64,
    seed: u64,
}

impl NameNodeService {
    /// A counter that varies placement and reader order between calls.
    pub(super) fn seed(&self) -> u64 {
        const STEP: u64 = 0x9e37_79b9_7f4a_7c15;
        self.placement_seed
            .fetch_add(STEP, Ordering::Relaxed)
            .wrapping_add(STEP)
    }

    /// The readable replicas of a block, closest to `reader_ip` first (ties broken by
    /// `seed`), into `locs`. Of a block being written, every replica; of a complete one,
    /// the finished ones only: a replica its DataNode has not finished since the block was
    /// last written (a node left out of an append's pipeline keeps the shorter old bytes)
    /// is not the block.
    fn reader_locations(
        &self,
        mgr: &BlockManager,
        (id, being_written): (u64, bool),
        reader: Reader<'_>,
        locs: &mut Vec<(NodeIx, u8)>,
    ) {
        let Reader {
            ip: reader_ip,
            rack: reader_rack,
            now,
            seed,
        } = reader;
        let dead_ms = self.cfg.dead_interval_ms();
        locs.clear();
        if let Some(e) = mgr.entry(id) {
            locs.extend(
                e.replicas
                    .iter()
                    .filter(|r| {
                        !r.corrupt
                            && (being_written || r.finalized)
                            && mgr.reg.get(r.node).liveness(now, u64::MAX, dead_ms)
                                != Liveness::Dead
                    })
                    .map(|r| (r.node, r.storage)),
            );
        }
        sort_for_reader(
            &mgr.reg,
            locs,
            (reader_ip, reader_rack),
            now,
            self.cfg.stale_interval_ms,
            seed,
        );
    }

    /// The rack of a reader at `ip`: its DataNode's, else what the topology mapping knows
    /// of the address (never running a script on a client's call). None without a
    /// mapping, where it would not change the order.
    fn reader_rack(&self, mgr: &BlockManager, ip: &str) -> Option<String> {
        if self.topology.is_flat() {
            return None;
        }
        match mgr.reg.rack_of_ip(ip) {
            Some(r) => Some(r.to_string()),
            None => self.topology.known(ip, ""),
        }
    }

    /// The block being written is as long as its finished replicas say, or as an hsync
    /// recorded, whichever is more.
    fn with_reported_len(mgr: &BlockManager, p: &Placed) -> Placed {
        let mut p = *p;
        let reported = mgr.entry(p.block.id).map_or(0, |e| e.reported_len);
        p.block.len = p.block.len.max(reported);
        p
    }

    /// getBlockLocations: the blocks of `src` covering `offset..offset+length`, readable
    /// replicas nearest `who` first, with one READ token for the reply. Moves the file's
    /// access time when due (journaled).
    pub async fn block_locations<S: LocatedSink>(
        &self,
        who: &Admitted,
        src: &str,
        offset: u64,
        length: u64,
    ) -> Result<S, FsError> {
        let caller = self.caller(who.user());
        let now = now_ms();
        // The common case answers without waiting for anything: no future to carry it.
        let path = match self.locate(&caller, who, src, (offset, length), now, true)? {
            Located::Ready(s) => return Ok(s),
            Located::Touch(path) => path,
        };
        // Rare (once per file per precision): boxed, so the commit's large future does not
        // grow every open's.
        Box::pin(self.record_access(&caller, &path, now)).await;
        match self.locate(&caller, who, src, (offset, length), now, false)? {
            Located::Ready(s) => Ok(s),
            Located::Touch(_) => Err(FsError::Io("access time moved twice".into())),
        }
    }

    /// The located blocks of `src` now, unless (with `touch`) its access time is due
    /// first: then the file's path, for the record that moves it.
    fn locate<S: LocatedSink>(
        &self,
        caller: &crate::namespace::Caller,
        who: &Admitted,
        src: &str,
        (offset, length): (u64, u64),
        now: i64,
        touch: bool,
    ) -> Result<Located<S>, FsError> {
        let range = {
            let ns = self.ns.read();
            let src = ns.resolve_reserved(src)?;
            // A file in a snapshot: its blocks then; its access time is not a snapshot's.
            if let Some(r) = ns.snapshot_block_range(caller, &src, offset, length)? {
                r
            } else {
                let slot = ns.file_slot(caller, &src)?;
                ns.check_access(caller, slot, perm::READ)?;
                ns.check_unreadable_by_superuser(caller, slot)?;
                if touch && self.access_time_due(ns.inode(slot).atime, now) {
                    return Ok(Located::Touch(ns.path_of(slot)));
                }
                ns.block_range(slot, offset, length)
            }
        };
        let pool = &self.identity.block_pool_id;
        let placed: Vec<Placed> = range
            .blocks
            .iter()
            .chain(range.last.as_ref())
            .copied()
            .collect();
        // One token, signed once, for every block of the reply (HDFS signs one per block).
        let ids: Vec<u64> = placed.iter().map(|p| p.block.id).collect();
        let tokens = self.tokens.for_reply(who.user(), pool, Modes::READ, &ids);
        let mut sink = S::start(pool, range.file_len, range.under_construction, tokens);
        let mgr = self.blocks.lock();
        let mut locs = Vec::new();
        let last_id = range.last.map(|l| l.block.id);
        // One draw per call (an atomic add); each block mixes in its id, so equal replicas
        // still come in different orders from block to block.
        let call_seed = self.seed();
        let rack = self.reader_rack(&mgr, who.ip());
        for (i, p) in placed.iter().enumerate() {
            let is_last = last_id.is_some() && i + 1 == placed.len();
            let being_written = range.under_construction && Some(p.block.id) == last_id;
            let p = if being_written {
                Self::with_reported_len(&mgr, p)
            } else {
                *p
            };
            let block_seed = call_seed ^ p.block.id.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let reader = Reader {
                ip: who.ip(),
                rack: rack.as_deref(),
                now,
                seed: block_seed,
            };
            self.reader_locations(&mgr, (p.block.id, being_written), reader, &mut locs);
            // In safe mode an empty list more likely means "not reported yet" than "no
            // replica": the reader is told to come back rather than read a file short.
            if locs.is_empty() && self.in_safe_mode() {
                // The refusal's reason counts blocks under the manager's lock.
                drop(mgr);
                return Err(self.safe_mode_refusal(format!("Zero blocklocations for {src}")));
            }
            sink.push(&p, &locs, &mgr.reg, is_last);
        }
        Ok(Located::Ready(sink))
    }

    /// A file's blocks with their replicas, for the statuses that carry them (a listing
    /// with locations, getLocatedFileInfo). No tokens, as in HDFS: a reader asks
    /// getBlockLocations when it opens the file.
    pub(super) fn located_blocks(
        &self,
        mgr: &BlockManager,
        range: &BlockRange,
        reader_ip: &str,
        now: i64,
    ) -> LocatedBlocks {
        let mut locs = Vec::new();
        let rack = self.reader_rack(mgr, reader_ip);
        let mut one = |p: &Placed, being_written: bool| {
            let p = if being_written {
                Self::with_reported_len(mgr, p)
            } else {
                *p
            };
            let reader = Reader {
                ip: reader_ip,
                rack: rack.as_deref(),
                now,
                seed: self.seed(),
            };
            self.reader_locations(mgr, (p.block.id, being_written), reader, &mut locs);
            LocatedBlock::new(&p, &mgr.reg, &locs)
        };
        let last_id = range.last.map(|l| l.block.id);
        let uc = range.under_construction;
        let blocks = range
            .blocks
            .iter()
            .map(|p| one(p, uc && Some(p.block.id) == last_id))
            .collect();
        LocatedBlocks {
            file_len: range.file_len,
            blocks,
            under_construction: uc,
            last: range.last.as_ref().map(|p| one(p, uc)),
        }
    }
}
