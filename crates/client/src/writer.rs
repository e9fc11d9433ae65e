//! Writing a file: data is cut into packets of whole chunks, blocks are allocated with
//! addBlock as each fills, and close() finishes the last block and completes the file.
//! A pipeline that cannot be set up is abandoned and the bad DataNode excluded.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use ferrite_proto::hdfs::op_write_block_proto::BlockConstructionStage as Stage;
use ferrite_proto::hdfs::*;
use ferrite_transfer::checksum::Checksum;
use tracing::warn;

use crate::block_reader::xfer_addr;
use crate::block_writer::{BlockWriter, Failure, Setup};
use crate::error::{Error, Result};
use crate::replace;
use crate::shared::Inner;

/// Attempts to set up a block's pipeline (`dfs.client.block.write.retries` is 3).
const SETUP_ATTEMPTS: usize = 3;

pub struct FileWriter {
    fs: Arc<Inner>,
    path: String,
    file_id: u64,
    block_size: u64,
    packet_bytes: usize,
    checksum: Checksum,
    buf: Vec<u8>,
    /// The block being written and the pipeline writing it.
    block: Option<(BlockWriter, LocatedBlockProto)>,
    previous: Option<ExtendedBlockProto>,
    written: u64,
    closed: bool,
    /// The file's replication: how many nodes a pipeline should have.
    replication: u16,
    /// An hflush (or an append) made written bytes acknowledged: a pipeline that loses
    /// a node gets another (see `replace`).
    flushed: bool,
}

impl FileWriter {
    pub(crate) fn new(
        fs: Arc<Inner>,
        path: &str,
        file_id: u64,
        block_size: u64,
        replication: u16,
    ) -> Self {
        fs.open_writers.fetch_add(1, Ordering::SeqCst);
        let checksum = Checksum::CRC32C_512;
        // As Java sizes packets: whole chunks within the 64 KiB write packet.
        let chunks = ((64 << 10) - 33) / (checksum.bytes_per_checksum as usize + 4);
        FileWriter {
            fs,
            path: path.to_string(),
            file_id,
            block_size,
            packet_bytes: chunks * checksum.bytes_per_checksum as usize,
            checksum,
            buf: Vec::with_capacity(64 << 10),
            block: None,
            previous: None,
            written: 0,
            closed: false,
            replication,
            flushed: false,
        }
    }

    /// A writer that goes on at the end of a file of `len` bytes that append reopened:
    /// in `last`, the file's partial last block, when the NameNode handed it back (the
    /// DataNodes reopen their replicas for it), else in a new block.
    pub(crate) async fn appending(
        fs: Arc<Inner>,
        path: &str,
        file_id: u64,
        block_size: u64,
        replication: u16,
        len: u64,
        last: Option<LocatedBlockProto>,
    ) -> Result<Self> {
        let mut w = FileWriter::new(fs, path, file_id, block_size, replication);
        w.written = len;
        w.flushed = true;
        if let Some(mut lb) = last {
            let in_block = lb.b.num_bytes.unwrap_or(0);
            // As Java's client appends: a new generation stamp first, so that a replica
            // left out of this pipeline keeps the old stamp and is known to be stale.
            let old = lb.b.clone();
            let gs = w.new_stamp(&mut lb).await?;
            let setup = Setup {
                stage: Stage::PipelineSetupAppend,
                acked: in_block,
                sent: in_block,
                gs,
            };
            let bw = w.open_pipeline(&lb, setup).await.map_err(|f| f.error)?;
            lb.b.generation_stamp = gs;
            w.update_pipeline(old, &lb).await?;
            w.block = Some((bw, lb));
        }
        Ok(w)
    }

    /// Sets up `lb`'s pipeline: WRITE_BLOCK to its first node, which forwards to the rest.
    async fn open_pipeline(
        &self,
        lb: &LocatedBlockProto,
        setup: Setup,
    ) -> std::result::Result<BlockWriter, crate::block_writer::SetupFailure> {
        BlockWriter::open(
            &*self.fs.dial,
            lb,
            &self.fs.client_name,
            self.checksum,
            setup,
        )
        .await
    }

    /// updateBlockForPipeline: a new generation stamp for the block being written, and
    /// the token that goes with it.
    async fn new_stamp(&self, lb: &mut LocatedBlockProto) -> Result<u64> {
        let req = UpdateBlockForPipelineRequestProto {
            block: lb.b.clone(),
            client_name: self.fs.client_name.clone(),
        };
        let ub: UpdateBlockForPipelineResponseProto =
            self.fs.nn.call("updateBlockForPipeline", &req).await?;
        lb.block_token = ub.block.block_token;
        Ok(ub.block.b.generation_stamp)
    }

    /// updatePipeline: the NameNode learns the block's new stamp and its pipeline.
    async fn update_pipeline(&self, old: ExtendedBlockProto, lb: &LocatedBlockProto) -> Result<()> {
        let req = UpdatePipelineRequestProto {
            client_name: self.fs.client_name.clone(),
            old_block: old,
            new_block: lb.b.clone(),
            new_nodes: lb.locs.iter().map(|d| d.id.clone()).collect(),
            storage_i_ds: lb.storage_i_ds.clone(),
        };
        let _: UpdatePipelineResponseProto = self.fs.nn.call("updatePipeline", &req).await?;
        Ok(())
    }

    pub fn bytes_written(&self) -> u64 {
        self.written + self.buf.len() as u64
    }

    pub async fn write(&mut self, mut data: &[u8]) -> Result<()> {
        while !data.is_empty() {
            let in_block = self.written % self.block_size;
            let room_block = (self.block_size - in_block) as usize - self.buf.len();
            // After an append the block ends inside a chunk: the first packet finishes
            // that chunk, so that every later one starts on a chunk boundary again.
            let bpc = self.checksum.bytes_per_checksum as u64;
            let packet = match self.written % bpc {
                0 => self.packet_bytes,
                partial => (bpc - partial) as usize,
            };
            let room = (packet - self.buf.len()).min(room_block);
            let take = room.min(data.len());
            self.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.buf.len() == packet || take == room_block {
                self.flush_packet().await?;
            }
        }
        Ok(())
    }

    /// hflush: everything written so far is in every pipeline node's replica, so that a
    /// reader opening the file from now on can read it (`FSDataOutputStream.hflush`). A
    /// partial chunk goes out as it is; the next packet finishes that chunk, as an
    /// append's first packet does.
    pub async fn hflush(&mut self) -> Result<()> {
        self.flushed = true;
        self.flush_packet().await?;
        while let Some((bw, _)) = self.block.as_mut() {
            match bw.wait_acked().await {
                Ok(()) => return Ok(()),
                Err(f) => self.recover(f).await?,
            }
        }
        Ok(())
    }

    async fn flush_packet(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        if self.block.is_none() {
            self.start_block().await?;
        }
        let (bw, _) = self.block.as_mut().expect("started");
        if let Err(f) = bw.send(&self.buf).await {
            self.recover(f).await?;
        }
        self.written += self.buf.len() as u64;
        self.buf.clear();
        if self.written % self.block_size == 0 {
            self.end_block().await?;
        }
        Ok(())
    }

    async fn start_block(&mut self) -> Result<()> {
        let mut excluded: Vec<DatanodeInfoProto> = Vec::new();
        for attempt in 1..=SETUP_ATTEMPTS {
            let lb = self.add_block(&excluded).await?;
            let setup = Setup::create(&lb);
            match self.open_pipeline(&lb, setup).await {
                Ok(bw) => {
                    self.block = Some((bw, lb));
                    return Ok(());
                }
                Err(f) => {
                    warn!(attempt, bad = %f.bad_node, error = %f.error, "pipeline setup failed; abandoning the block");
                    let req = AbandonBlockRequestProto {
                        b: lb.b.clone(),
                        src: self.path.clone(),
                        holder: self.fs.client_name.clone(),
                        file_id: Some(self.file_id),
                    };
                    self.fs
                        .nn
                        .call::<_, AbandonBlockResponseProto>("abandonBlock", &req)
                        .await?;
                    if let Some(d) = lb.locs.iter().find(|d| xfer_addr(d) == f.bad_node) {
                        excluded.push(d.clone());
                    }
                    if attempt == SETUP_ATTEMPTS {
                        return Err(f.error);
                    }
                }
            }
        }
        unreachable!("the loop returns")
    }

    /// addBlock, waiting out NotReplicatedYetException as HDFS clients do.
    async fn add_block(&self, excluded: &[DatanodeInfoProto]) -> Result<LocatedBlockProto> {
        let req = AddBlockRequestProto {
            src: self.path.clone(),
            client_name: self.fs.client_name.clone(),
            previous: self.previous.clone(),
            exclude_nodes: excluded.to_vec(),
            file_id: Some(self.file_id),
            favored_nodes: Vec::new(),
            flags: Vec::new(),
        };
        let mut wait = Duration::from_millis(100);
        for _ in 0..8 {
            match self
                .fs
                .nn
                .call::<_, AddBlockResponseProto>("addBlock", &req)
                .await
            {
                Ok(r) => return Ok(r.block),
                Err(e)
                    if e.class()
                        .is_some_and(|c| c.ends_with("NotReplicatedYetException")) =>
                {
                    tokio::time::sleep(wait).await;
                    wait *= 2;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(Error::DataNode(format!(
            "{}: previous block never reached its minimum replication",
            self.path
        )))
    }

    async fn end_block(&mut self) -> Result<()> {
        // After a recovery the last packet is among those sent again.
        let mut last_sent = false;
        while let Some((bw, _)) = self.block.as_mut() {
            match bw.finish(last_sent).await {
                Ok(n) => {
                    let (_, lb) = self.block.take().expect("present");
                    let mut b = lb.b;
                    b.num_bytes = Some(n);
                    self.previous = Some(b);
                }
                Err(f) => {
                    self.recover(f).await?;
                    last_sent = true;
                }
            }
        }
        Ok(())
    }

    /// Pipeline recovery, as HDFS clients do it: drop the failed node, get a new
    /// generation stamp, set the pipeline up again on the survivors (they cut their
    /// replicas back to what all of them acknowledged), send the unacknowledged packets
    /// again, and tell the NameNode the new pipeline. A node that fails during recovery
    /// is dropped too, while at least one remains.
    async fn recover(&mut self, failure: Failure) -> Result<()> {
        let (bw, mut lb) = self.block.take().expect("a pipeline to recover");
        let (mut packets, mut acked) = bw.leftovers();
        drop(bw);
        let (mut bad, mut error) = (failure.bad_index, failure.error);
        let mut lost = Vec::new();
        while lb.locs.len() > 1 {
            let i = bad.unwrap_or(0).min(lb.locs.len() - 1);
            warn!(path = %self.path, dropped = %xfer_addr(&lb.locs[i]), %error, "recovering the write pipeline");
            lost.push(lb.locs.remove(i));
            for v in [
                &mut lb.storage_types as &mut dyn VecRemove,
                &mut lb.storage_i_ds,
                &mut lb.is_cached,
            ] {
                v.remove_at(i);
            }
            self.replace_lost(&mut lb, &lost, acked).await;
            let gs = self.new_stamp(&mut lb).await?;
            let closing = packets.last().is_some_and(|p| p.last);
            let setup = Setup {
                stage: if closing {
                    Stage::PipelineCloseRecovery
                } else {
                    Stage::PipelineSetupStreamingRecovery
                },
                acked,
                sent: packets.last().map(|p| p.end).unwrap_or(acked),
                gs,
            };
            let mut bw = match self.open_pipeline(&lb, setup).await {
                Ok(bw) => bw,
                Err(sf) => {
                    bad = lb.locs.iter().position(|d| xfer_addr(d) == sf.bad_node);
                    error = sf.error;
                    continue;
                }
            };
            if let Err(f) = bw.resend(packets.clone()).await {
                (packets, acked) = bw.leftovers();
                (bad, error) = (f.bad_index, f.error);
                continue;
            }
            let old = lb.b.clone();
            lb.b.generation_stamp = gs;
            lb.b.num_bytes = Some(acked);
            self.update_pipeline(old, &lb).await?;
            self.block = Some((bw, lb));
            return Ok(());
        }
        Err(error)
    }

    /// Adds a node in place of the `lost` ones when HDFS's default policy asks for it.
    /// Best effort (as `replace-datanode-on-failure.best-effort`): with no node to add,
    /// or a copy that fails, the pipeline goes on with the nodes it has.
    async fn replace_lost(
        &self,
        lb: &mut LocatedBlockProto,
        lost: &[DatanodeInfoProto],
        acked: u64,
    ) {
        if !replace::wanted(self.replication, lb.locs.len(), self.flushed) {
            return;
        }
        let added = replace::add_node(&self.fs, &self.path, self.file_id, lb, lost, acked).await;
        if let Err(e) = added {
            warn!(path = %self.path, error = %e, "no DataNode replaces the lost ones");
        }
    }

    /// Finishes the last block and completes the file (retrying while the NameNode waits
    /// for replicas, as HDFS clients do).
    pub async fn close(mut self) -> Result<()> {
        self.flush_packet().await?;
        self.end_block().await?;
        let req = CompleteRequestProto {
            src: self.path.clone(),
            client_name: self.fs.client_name.clone(),
            last: self.previous.clone(),
            file_id: Some(self.file_id),
        };
        let mut wait = Duration::from_millis(100);
        for _ in 0..10 {
            let r: CompleteResponseProto = self.fs.nn.call("complete", &req).await?;
            if r.result {
                self.closed = true;
                return Ok(());
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(Duration::from_secs(2));
        }
        Err(Error::DataNode(format!(
            "Unable to close file {} because the last block does not have enough number of replicas",
            self.path
        )))
    }
}

impl Drop for FileWriter {
    fn drop(&mut self) {
        self.fs.open_writers.fetch_sub(1, Ordering::SeqCst);
        if !self.closed {
            tracing::debug!(path = %self.path, "writer dropped before close; the lease will expire");
        }
    }
}

/// Removing the entry of a dropped node from a LocatedBlock's per-node lists (which may
/// be shorter than `locs`).
trait VecRemove {
    fn remove_at(&mut self, i: usize);
}

impl<T> VecRemove for Vec<T> {
    fn remove_at(&mut self, i: usize) {
        if i < self.len() {
            self.remove(i);
        }
    }
}
