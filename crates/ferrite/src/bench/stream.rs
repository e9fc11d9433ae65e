//! `ferrite bench stream`: how fast a DataNode sends a file, with the client out of the way.
//! Each block is read with READ_BLOCK over one kept-alive connection per DataNode; packets
//! are received into a buffer and, unless `--verify`, not checked, so the figure is the
//! server's (and loopback's) rate, not a client's CRC speed. Works against any DataNode
//! that speaks DataTransferProtocol, Apache HDFS's included.

use std::collections::HashMap;
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Args;
use ferrite_client::block_reader::op_header;
use ferrite_client::FileSystem;
use ferrite_proto::hdfs::*;
use ferrite_transfer::checksum::{Checksum, Kind};
use ferrite_transfer::io::{read_delimited, write_delimited, write_op};
use ferrite_transfer::{op, packet};
use tokio::io::BufReader;
use tokio::net::TcpStream;

#[derive(Args, Debug)]
pub(crate) struct StreamArgs {
    /// The file system (hdfs://HOST:PORT).
    #[arg(long = "fs")]
    fs: String,
    /// The file to read.
    path: String,
    /// Passes over the file; one line each.
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Check every chunk's CRC as a client would.
    #[arg(long)]
    verify: bool,
}

pub(super) async fn run(a: StreamArgs) -> anyhow::Result<()> {
    let fs = FileSystem::connect(&a.fs).await?;
    let blocks = fs.block_locations(&a.path).await?.blocks;
    for rep in 0..a.reps {
        let mut conns: HashMap<String, BufReader<TcpStream>> = HashMap::new();
        let started = Instant::now();
        let mut bytes = 0u64;
        for lb in &blocks {
            let d = lb.locs.first().context("a block without locations")?;
            let addr = format!("{}:{}", d.id.ip_addr, d.id.xfer_port);
            if !conns.contains_key(&addr) {
                let s = TcpStream::connect(&addr).await?;
                s.set_nodelay(true)?;
                conns.insert(addr.clone(), BufReader::with_capacity(16 << 10, s));
            }
            let s = conns.get_mut(&addr).expect("inserted above");
            bytes += read_block(s, lb, a.verify).await?;
        }
        let secs = started.elapsed().as_secs_f64();
        println!(
            "stream rep={rep} bytes={bytes} mib_per_s={:.1} verify={}",
            bytes as f64 / secs / (1 << 20) as f64,
            a.verify
        );
    }
    Ok(())
}

async fn read_block(
    s: &mut BufReader<TcpStream>,
    lb: &LocatedBlockProto,
    verify: bool,
) -> anyhow::Result<u64> {
    let len = lb.b.num_bytes.unwrap_or(0);
    let o = OpReadBlockProto {
        header: op_header(lb, "ferrite-bench-stream"),
        offset: 0,
        len,
        send_checksums: Some(true),
        caching_strategy: None,
    };
    write_op(s.get_mut(), op::READ_BLOCK, &o).await?;
    let resp: BlockOpResponseProto = read_delimited(s).await?;
    if resp.status != Status::Success as i32 {
        bail!("READ_BLOCK refused: {}", resp.message.unwrap_or_default());
    }
    let info = resp.read_op_checksum_info.context("no checksum info")?;
    let c = Checksum {
        kind: Kind::from_proto(info.checksum.r#type).context("checksum type")?,
        bytes_per_checksum: info.checksum.bytes_per_checksum,
    };
    let mut got = 0u64;
    loop {
        let p = packet::read(s, 16 << 20).await?;
        if p.header.last {
            break;
        }
        if verify {
            c.verify(&p.data, &p.sums)
                .map_err(|i| anyhow::anyhow!("chunk {i} of blk_{} is corrupt", lb.b.block_id))?;
        }
        got += p.data.len() as u64;
    }
    let st = ClientReadStatusProto {
        status: Status::ChecksumOk as i32,
    };
    write_delimited(s.get_mut(), &st).await?;
    Ok(got)
}
