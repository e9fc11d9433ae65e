//! Reading a range of one replica: READ_BLOCK, then packets whose every chunk is checked
//! against its CRC, then CHECKSUM_OK back to the DataNode.

use std::time::Duration;

use bytes::Bytes;
use ferrite_ipc::net::{BoxRead, BoxWrite, Dial, Dialed};
use ferrite_proto::hdfs::*;
use ferrite_transfer::checksum::{Checksum, Kind};
use ferrite_transfer::io::{read_delimited, write_delimited, write_op};
use ferrite_transfer::op;
use ferrite_transfer::packet;
use tokio::io::BufReader;

use crate::error::{Error, Result};

const TIMEOUT: Duration = Duration::from_secs(60);

/// `ip:xferPort` of a DataNode.
pub fn xfer_addr(dn: &DatanodeInfoProto) -> String {
    format!("{}:{}", dn.id.ip_addr, dn.id.xfer_port)
}

/// A data-transfer connection's halves.
pub type DataIn = BoxRead;
pub type DataOut = BoxWrite;

/// A data-transfer connection, bounded in time.
pub async fn connect(dial: &dyn Dial, addr: &str) -> Result<(DataIn, DataOut)> {
    let Dialed { read, write } = tokio::time::timeout(TIMEOUT, dial.dial(addr))
        .await
        .map_err(|_| Error::DataNode(format!("connect to {addr} timed out")))??;
    Ok((read, write))
}

/// The header every client op carries: the block, its token, who is asking.
pub fn op_header(lb: &LocatedBlockProto, client_name: &str) -> ClientOperationHeaderProto {
    ClientOperationHeaderProto {
        base_header: BaseHeaderProto {
            block: lb.b.clone(),
            token: Some(lb.block_token.clone()),
            trace_info: None,
        },
        client_name: client_name.to_string(),
    }
}

pub struct BlockReader {
    rd: BufReader<DataIn>,
    wr: DataOut,
    checksum: Checksum,
    /// Block offset of the next byte the DataNode will send.
    next: u64,
    /// The caller's range.
    start: u64,
    end: u64,
    last_seqno: i64,
    done: bool,
    pub datanode: String,
}

impl BlockReader {
    /// Asks `dn` for `[offset, offset + len)` of the block.
    pub async fn open(
        dial: &dyn Dial,
        dn: &DatanodeInfoProto,
        lb: &LocatedBlockProto,
        client_name: &str,
        offset: u64,
        len: u64,
    ) -> Result<BlockReader> {
        let addr = xfer_addr(dn);
        let (rd, mut wr) = connect(dial, &addr).await?;
        let op = OpReadBlockProto {
            header: op_header(lb, client_name),
            offset,
            len,
            send_checksums: Some(true),
            caching_strategy: None,
        };
        write_op(&mut wr, op::READ_BLOCK, &op).await?;
        let mut rd = BufReader::with_capacity(256 << 10, rd);
        let resp: BlockOpResponseProto = tokio::time::timeout(TIMEOUT, read_delimited(&mut rd))
            .await
            .map_err(|_| Error::DataNode(format!("{addr}: no answer to READ_BLOCK")))??;
        if resp.status != Status::Success as i32 {
            let msg = format!(
                "{addr}: READ_BLOCK of blk_{} refused (status {}): {}",
                lb.b.block_id,
                resp.status,
                resp.message.unwrap_or_default()
            );
            return Err(if resp.status == Status::ErrorAccessToken as i32 {
                Error::AccessToken(msg)
            } else {
                Error::DataNode(msg)
            });
        }
        let info = resp
            .read_op_checksum_info
            .ok_or_else(|| Error::DataNode(format!("{addr}: no checksum info")))?;
        let kind = Kind::from_proto(info.checksum.r#type)
            .ok_or_else(|| Error::DataNode(format!("{addr}: unknown checksum type")))?;
        let bpc = info.checksum.bytes_per_checksum as u64;
        if bpc == 0 || info.chunk_offset > offset || info.chunk_offset + bpc <= offset {
            return Err(Error::DataNode(format!(
                "{addr}: bad chunk offset {} for offset {offset}",
                info.chunk_offset
            )));
        }
        Ok(BlockReader {
            rd,
            wr,
            checksum: Checksum {
                kind,
                bytes_per_checksum: bpc as u32,
            },
            next: info.chunk_offset,
            start: offset,
            end: offset + len,
            last_seqno: -1,
            done: len == 0,
            datanode: addr,
        })
    }

    /// The next verified piece of the range, or `None` at its end.
    pub async fn next(&mut self) -> Result<Option<Bytes>> {
        loop {
            if self.done {
                return Ok(None);
            }
            let p = tokio::time::timeout(TIMEOUT, packet::read(&mut self.rd, packet::MAX_PACKET))
                .await
                .map_err(|_| Error::DataNode(format!("{}: read timed out", self.datanode)))??;
            let h = p.header;
            if h.seqno != self.last_seqno + 1 {
                return Err(Error::DataNode(format!(
                    "{}: packet {} after {}",
                    self.datanode, h.seqno, self.last_seqno
                )));
            }
            self.last_seqno = h.seqno;
            if h.last || h.data_len == 0 {
                self.finish_status().await;
                if self.next < self.end {
                    // The replica ended before the range did: try another one.
                    return Err(Error::DataNode(format!(
                        "{}: replica ended at {} before {}",
                        self.datanode, self.next, self.end
                    )));
                }
                return Ok(None);
            }
            if h.offset_in_block as u64 != self.next {
                return Err(Error::DataNode(format!(
                    "{}: packet at {} while expecting {}",
                    self.datanode, h.offset_in_block, self.next
                )));
            }
            if let Err(chunk) = self.checksum.verify(&p.data, &p.sums) {
                return Err(Error::Checksum(format!(
                    "checksum error at block offset {} (chunk {chunk}) from {}",
                    self.next, self.datanode
                )));
            }
            let pkt_start = self.next;
            self.next += p.data.len() as u64;
            // Trim to the caller's range: the DataNode starts at a chunk boundary.
            let from = self.start.saturating_sub(pkt_start) as usize;
            let to = (self.end.min(self.next) - pkt_start) as usize;
            if self.next >= self.end {
                // The empty last packet still follows; read it so the connection is clean.
                self.done_after_last().await?;
            }
            if from < to {
                return Ok(Some(p.data.slice(from..to)));
            }
        }
    }

    async fn done_after_last(&mut self) -> Result<()> {
        let p = tokio::time::timeout(TIMEOUT, packet::read(&mut self.rd, packet::MAX_PACKET))
            .await
            .map_err(|_| Error::DataNode(format!("{}: read timed out", self.datanode)))??;
        if !(p.header.last || p.header.data_len == 0) {
            return Err(Error::DataNode(format!(
                "{}: data past the requested range",
                self.datanode
            )));
        }
        self.finish_status().await;
        Ok(())
    }

    async fn finish_status(&mut self) {
        self.done = true;
        let st = ClientReadStatusProto {
            status: Status::ChecksumOk as i32,
        };
        let _ = write_delimited(&mut self.wr, &st).await;
    }
}
