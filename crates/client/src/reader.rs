//! Reading a file: its blocks come from getBlockLocations; each range is read from the
//! closest replica, and a replica that fails or returns a bad checksum is skipped (bad
//! checksums are reported to the NameNode) in favour of the next.

use std::sync::Arc;

use bytes::Bytes;
use ferrite_ipc::client::IpcClient;
use ferrite_ipc::CLIENT_DATANODE_PROTOCOL;
use ferrite_proto::hdfs::{
    GetBlockLocationsRequestProto, GetBlockLocationsResponseProto,
    GetReplicaVisibleLengthRequestProto, GetReplicaVisibleLengthResponseProto, LocatedBlockProto,
    LocatedBlocksProto, ReportBadBlocksRequestProto, ReportBadBlocksResponseProto,
};
use tracing::warn;

use crate::block_reader::{xfer_addr, BlockReader};
use crate::error::{Error, Result};
use crate::shared::Inner;

/// The located blocks of a whole file, with fresh block tokens.
pub(crate) async fn block_locations(fs: &Inner, path: &str) -> Result<LocatedBlocksProto> {
    let req = GetBlockLocationsRequestProto {
        src: path.into(),
        offset: 0,
        length: i64::MAX as u64,
    };
    let r: GetBlockLocationsResponseProto = fs.nn.call("getBlockLocations", &req).await?;
    r.locations
        .ok_or_else(|| Error::NotFound(format!("File does not exist: {path}")))
}

/// A file's readable length and its blocks (the one being written included).
pub(crate) async fn locate(fs: &Inner, path: &str) -> Result<(u64, Vec<LocatedBlockProto>)> {
    let lbs = block_locations(fs, path).await?;
    let mut blocks = lbs.blocks;
    if let Some(last) = lbs.last_block {
        if !blocks.iter().any(|b| b.b.block_id == last.b.block_id) {
            blocks.push(last);
        }
    }
    if lbs.under_construction && !lbs.is_last_block_complete {
        if let Some(last) = blocks.last_mut() {
            // What the writer has hflushed is known to its DataNodes, not the NameNode.
            let len = visible_length(fs, last).await?;
            last.b.num_bytes = Some(len);
        }
    }
    let len = blocks
        .iter()
        .map(|b| b.offset + b.b.num_bytes.unwrap_or(0))
        .max()
        .unwrap_or(0)
        .max(lbs.file_length);
    Ok((len, blocks))
}

/// The length a block being written can be read to, from the first of its DataNodes
/// that answers `getReplicaVisibleLength`, as HDFS's readers ask; a block no DataNode
/// holds yet (no locations) has nothing to read.
async fn visible_length(fs: &Inner, lb: &LocatedBlockProto) -> Result<u64> {
    if lb.locs.is_empty() {
        return Ok(lb.b.num_bytes.unwrap_or(0));
    }
    let req = GetReplicaVisibleLengthRequestProto {
        block: lb.b.clone(),
    };
    let mut last_error = None;
    for dn in &lb.locs {
        let addr = format!("{}:{}", dn.id.ip_addr, dn.id.ipc_port);
        let asked = async {
            let c = IpcClient::dial(&*fs.dial, &addr, &fs.user, CLIENT_DATANODE_PROTOCOL).await?;
            c.call::<_, GetReplicaVisibleLengthResponseProto>("getReplicaVisibleLength", &req)
                .await
        };
        match tokio::time::timeout(VISIBLE_LENGTH_TIMEOUT, asked).await {
            Ok(Ok(r)) if r.length >= 0 => return Ok(r.length as u64),
            // A replica waiting for recovery shows no bytes: ask the next DataNode.
            Ok(Ok(_)) => last_error = Some(format!("{addr}: replica not readable")),
            Ok(Err(e)) => last_error = Some(e.to_string()),
            Err(_) => last_error = Some(format!("{addr}: no answer")),
        }
    }
    Err(Error::DataNode(format!(
        "Cannot obtain block length for blk_{}: {}",
        lb.b.block_id,
        last_error.unwrap_or_default()
    )))
}

/// How long a DataNode may take to say how much of a block being written is readable.
const VISIBLE_LENGTH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

pub struct FileReader {
    fs: Arc<Inner>,
    path: String,
    len: u64,
    blocks: Vec<LocatedBlockProto>,
    pos: u64,
    current: Option<(BlockReader, u64)>,
    pending: Bytes,
    /// Replicas of the current block that failed us; never retried for it.
    failed: Vec<String>,
    /// The offset at which tokens were last refreshed: once per block, not in a loop.
    refreshed_at: Option<u64>,
}

impl FileReader {
    pub(crate) fn new(
        fs: Arc<Inner>,
        path: &str,
        (len, blocks): (u64, Vec<LocatedBlockProto>),
    ) -> Self {
        FileReader {
            fs,
            path: path.to_string(),
            len,
            blocks,
            pos: 0,
            current: None,
            pending: Bytes::new(),
            failed: Vec::new(),
            refreshed_at: None,
        }
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Moves the sequential position.
    pub fn seek(&mut self, pos: u64) {
        self.pos = pos.min(self.len);
        self.current = None;
        self.pending = Bytes::new();
    }

    fn block_at(&self, pos: u64) -> Option<&LocatedBlockProto> {
        self.blocks
            .iter()
            .find(|b| b.offset <= pos && pos < b.offset + b.b.num_bytes.unwrap_or(0))
    }

    /// The next piece of the file at the sequential position; empty at the end.
    pub async fn read_chunk(&mut self) -> Result<Bytes> {
        loop {
            if !self.pending.is_empty() {
                let out = std::mem::take(&mut self.pending);
                self.pos += out.len() as u64;
                return Ok(out);
            }
            if self.pos >= self.len {
                return Ok(Bytes::new());
            }
            if self.current.is_none() {
                let mut lb = self.block_at(self.pos).cloned().ok_or_else(|| {
                    Error::Invalid(format!(
                        "no block holds offset {} of {}",
                        self.pos, self.path
                    ))
                })?;
                lb.locs.retain(|d| !self.failed.contains(&xfer_addr(d)));
                let in_block = self.pos - lb.offset;
                let len = lb.b.num_bytes.unwrap_or(0) - in_block;
                let r = match self.open_any(&lb, in_block, len).await {
                    Err(Error::AccessToken(e)) if self.refreshed_at != Some(self.pos) => {
                        // As Java's DFSInputStream: tokens ran out (a long read), so fetch
                        // fresh ones and try this block again.
                        warn!(path = %self.path, error = %e, "block token refused; fetching fresh tokens");
                        self.refreshed_at = Some(self.pos);
                        self.blocks = locate(&self.fs, &self.path).await?.1;
                        continue;
                    }
                    r => r?,
                };
                self.current = Some((r, lb.offset));
            }
            let (r, _) = self.current.as_mut().expect("opened above");
            match r.next().await {
                Ok(Some(b)) => self.pending = b,
                Ok(None) => {
                    self.current = None;
                    self.failed.clear();
                }
                Err(e) => {
                    // Start the rest of this block again on another replica.
                    let bad = r.datanode.clone();
                    warn!(datanode = %bad, error = %e, "read failed; trying another replica");
                    self.current = None;
                    if matches!(e, Error::Checksum(_)) {
                        let lb = self.block_at(self.pos).cloned().expect("was found");
                        self.report_bad(&lb, &bad).await;
                    }
                    self.failed.push(bad);
                }
            }
        }
    }

    /// Reads until `buf` is full or the file ends; returns the bytes read.
    pub async fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            if self.pending.is_empty() {
                let chunk = self.read_chunk().await?;
                if chunk.is_empty() {
                    break;
                }
                // read_chunk advanced pos past the whole chunk; give back what we keep.
                self.pos -= chunk.len() as u64;
                self.pending = chunk;
            }
            let take = self.pending.len().min(buf.len() - n);
            buf[n..n + take].copy_from_slice(&self.pending[..take]);
            self.pending = self.pending.slice(take..);
            self.pos += take as u64;
            n += take;
        }
        Ok(n)
    }

    /// Reads the whole rest of the file.
    pub async fn read_to_end(&mut self) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity((self.len - self.pos) as usize);
        loop {
            let c = self.read_chunk().await?;
            if c.is_empty() {
                return Ok(out);
            }
            out.extend_from_slice(&c);
        }
    }

    /// Reads `len` bytes at `offset` without moving the sequential position.
    pub async fn pread(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let end = (offset + len as u64).min(self.len);
        let mut out = Vec::with_capacity(len);
        let mut pos = offset;
        while pos < end {
            let lb = self
                .block_at(pos)
                .cloned()
                .ok_or_else(|| Error::Invalid(format!("no block holds offset {pos}")))?;
            let in_block = pos - lb.offset;
            let n = (lb.offset + lb.b.num_bytes.unwrap_or(0)).min(end) - pos;
            let data = match self.read_range(&lb, in_block, n).await {
                Err(Error::AccessToken(_)) => {
                    let fresh = locate(&self.fs, &self.path).await?.1;
                    let lb = fresh
                        .into_iter()
                        .find(|b| b.b.block_id == lb.b.block_id)
                        .ok_or_else(|| no_replica(&lb))?;
                    self.read_range(&lb, in_block, n).await?
                }
                r => r?,
            };
            out.extend_from_slice(&data);
            pos += n;
        }
        Ok(out)
    }

    /// A whole range from one replica, trying the others on failure.
    async fn read_range(&self, lb: &LocatedBlockProto, offset: u64, len: u64) -> Result<Vec<u8>> {
        let mut last_err = None;
        for dn in &lb.locs {
            let attempt = async {
                let mut r =
                    BlockReader::open(&*self.fs.dial, dn, lb, &self.fs.client_name, offset, len)
                        .await?;
                let mut out = Vec::with_capacity(len as usize);
                while let Some(b) = r.next().await? {
                    out.extend_from_slice(&b);
                }
                Ok::<_, Error>(out)
            };
            match attempt.await {
                Ok(v) if v.len() as u64 == len => return Ok(v),
                Ok(v) => {
                    last_err = Some(Error::DataNode(format!("short read: {} of {len}", v.len())))
                }
                Err(e) => {
                    let addr = xfer_addr(dn);
                    warn!(datanode = %addr, error = %e, "read failed; trying another replica");
                    if matches!(e, Error::Checksum(_)) {
                        self.report_bad(lb, &addr).await;
                    }
                    keep_worst(&mut last_err, e);
                }
            }
        }
        Err(last_err.unwrap_or_else(|| no_replica(lb)))
    }

    async fn open_any(&self, lb: &LocatedBlockProto, offset: u64, len: u64) -> Result<BlockReader> {
        let mut last_err = None;
        for dn in &lb.locs {
            match BlockReader::open(&*self.fs.dial, dn, lb, &self.fs.client_name, offset, len).await
            {
                Ok(r) => return Ok(r),
                Err(e) => {
                    warn!(datanode = %dn.id.ip_addr, error = %e, "cannot read from replica");
                    keep_worst(&mut last_err, e);
                }
            }
        }
        Err(last_err.unwrap_or_else(|| no_replica(lb)))
    }

    /// Tells the NameNode that the replica on `addr` is corrupt.
    async fn report_bad(&self, lb: &LocatedBlockProto, addr: &str) {
        let mut bad = lb.clone();
        bad.locs.retain(|d| xfer_addr(d) == addr);
        let req = ReportBadBlocksRequestProto { blocks: vec![bad] };
        if let Err(e) = self
            .fs
            .nn
            .call::<_, ReportBadBlocksResponseProto>("reportBadBlocks", &req)
            .await
        {
            warn!(error = %e, "reportBadBlocks failed");
        }
    }
}

/// The error to report after trying every replica: a refused token wins, because fresh
/// tokens may then succeed where the other replicas' errors say nothing more.
fn keep_worst(last: &mut Option<Error>, e: Error) {
    if !matches!(last, Some(Error::AccessToken(_))) {
        *last = Some(e);
    }
}

fn no_replica(lb: &LocatedBlockProto) -> Error {
    Error::DataNode(format!(
        "Could not obtain block: {}:blk_{}_{} (no live replica)",
        lb.b.pool_id, lb.b.block_id, lb.b.generation_stamp
    ))
}
