//! The DataNode's read server on real processes: ranges that start and end mid-chunk,
//! several blocks over one kept-alive connection, a cached handle whose block is deleted,
//! the open-file cap under pressure, cached pages by sendfile and cold ones by copy, and a
//! slow volume that must not hold up reads from another.

mod common;

use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::*;
use ferrite_client::block_reader::op_header;
use ferrite_client::{CreateOptions, FileSystem};
use ferrite_ipc::client::IpcClient;
use ferrite_ipc::DATANODE_STATS_PROTOCOL;
use ferrite_proto::ferrite::{GetReadStatsRequestProto, ReadStatsProto};
use ferrite_proto::hdfs::*;
use ferrite_transfer::checksum::{Checksum, Kind};
use ferrite_transfer::io::{read_delimited, write_delimited, write_op};
use ferrite_transfer::{op, packet};
use tokio::net::TcpStream;

/// Block size for these tests: four 512-byte chunks, so ranges can cross chunk ends.
const BS: u64 = 2048;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One DataNode with `dirs` volumes and extra configuration; returns it and its IPC address.
fn datanode(c: &Cluster, dirs: &[PathBuf], conf: &[&str]) -> (Proc, SocketAddr) {
    let ipc = free_port();
    let mut args: Vec<String> = [
        "datanode",
        "--namenode",
        c.url.trim_start_matches("hdfs://"),
        "--port",
        "0",
        "--ipc-port",
        &ipc.to_string(),
        "--data",
        &dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(","),
        "--conf",
        "dfs.heartbeat.interval=1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for k in conf {
        args.extend(["--conf".to_string(), k.to_string()]);
    }
    (spawn(&args), ([127, 0, 0, 1], ipc).into())
}

async fn stats(ipc: SocketAddr) -> ReadStatsProto {
    let c = IpcClient::connect(ipc, "tester", DATANODE_STATS_PROTOCOL)
        .await
        .unwrap();
    c.call("getReadStats", &GetReadStatsRequestProto {})
        .await
        .unwrap()
}

async fn put_with(fs: &FileSystem, path: &str, bytes: &[u8]) {
    let opts = CreateOptions {
        block_size: Some(BS),
        replication: Some(1),
        overwrite: true,
        ..Default::default()
    };
    let mut w = fs.create(path, &opts).await.unwrap();
    w.write(bytes).await.unwrap();
    w.close().await.unwrap();
}

/// A cluster with one DataNode of `volumes` volumes (and `conf`), replication 1.
async fn one_datanode(
    root: &Path,
    volumes: usize,
    conf: &[&str],
) -> (Cluster, Proc, SocketAddr, FileSystem) {
    let cluster = Cluster::start_with(root, 0, &["dfs.replication=1"], false);
    let dirs: Vec<PathBuf> = (0..volumes)
        .map(|v| root.join(format!("dn/v{v}")))
        .collect();
    let (dn, ipc) = datanode(&cluster, &dirs, conf);
    let fs = FileSystem::connect(&cluster.url).await.unwrap();
    (cluster, dn, ipc, fs)
}

/// Sends READ_BLOCK for `[offset, offset + len)` of `lb` on `s` and returns the data, having
/// checked every chunk's CRC and the range the DataNode chose; the connection stays usable.
async fn read_range(
    s: &mut TcpStream,
    lb: &LocatedBlockProto,
    offset: u64,
    len: u64,
) -> Result<Vec<u8>, String> {
    let o = OpReadBlockProto {
        header: op_header(lb, "readserver-test"),
        offset,
        len,
        send_checksums: Some(true),
        caching_strategy: None,
    };
    write_op(s, op::READ_BLOCK, &o).await.unwrap();
    let resp: BlockOpResponseProto = read_delimited(s).await.unwrap();
    if resp.status != Status::Success as i32 {
        return Err(resp.message.unwrap_or_default());
    }
    let info = resp.read_op_checksum_info.unwrap();
    let c = Checksum {
        kind: Kind::from_proto(info.checksum.r#type).unwrap(),
        bytes_per_checksum: info.checksum.bytes_per_checksum,
    };
    let mut pos = info.chunk_offset;
    assert!(pos <= offset && offset - pos < 512, "chunk-aligned start");
    let mut out = Vec::new();
    loop {
        let p = packet::read(s, 16 << 20).await.unwrap();
        if p.header.last {
            assert!(p.data.is_empty());
            break;
        }
        assert_eq!(p.header.offset_in_block as u64, pos);
        c.verify(&p.data, &p.sums)
            .expect("every chunk's CRC matches");
        pos += p.data.len() as u64;
        out.extend_from_slice(&p.data);
    }
    let st = ClientReadStatusProto {
        status: Status::ChecksumOk as i32,
    };
    write_delimited(s, &st).await.unwrap();
    let skip = (offset - info.chunk_offset) as usize;
    Ok(out[skip..skip + len as usize].to_vec())
}

fn xfer(lb: &LocatedBlockProto) -> String {
    format!("{}:{}", lb.locs[0].id.ip_addr, lb.locs[0].id.xfer_port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ranges_and_blocks_back_to_back_on_one_connection() {
    let root = tempfile::tempdir().unwrap();
    let (cluster, _dn, ipc, fs) = one_datanode(root.path(), 1, &[]).await;
    let body = data(3 * BS as usize + 777, 11);
    put_with(&fs, "/r", &body).await;
    let blocks = fs.block_locations("/r").await.unwrap().blocks;
    assert_eq!(blocks.len(), 4);
    let mut s = TcpStream::connect(xfer(&blocks[0])).await.unwrap();
    let cases: &[(usize, u64, u64)] = &[
        (0, 0, BS),           // a whole block
        (1, 100, 1),          // one byte mid-chunk
        (1, 500, 30),         // across a chunk end
        (2, 511, 1000),       // from the last byte of a chunk, ending mid-chunk
        (2, 1536, BS - 1536), // the last chunk of a block
        (3, 700, 77),         // into the file's short last chunk
        (3, 0, 777),          // the file's short last block, whole
        (3, 777, 0),          // nothing at its end
        (0, 1023, 1025),      // ending exactly on a chunk
    ];
    for &(b, off, len) in cases {
        let got = read_range(&mut s, &blocks[b], off, len).await.unwrap();
        let at = b * BS as usize + off as usize;
        assert_eq!(
            got,
            body[at..at + len as usize],
            "block {b} [{off}, +{len})"
        );
    }
    let st = stats(ipc).await;
    assert_eq!(st.reads, cases.len() as u64);
    assert_eq!(st.cache_misses, 4, "each block opened once");
    assert!(st.cache_hits >= 4);
    assert_eq!(st.active_reads, 0);
    // A range past the end is refused with the DataNode's message, on the same connection.
    let e = read_range(&mut s, &blocks[3], 700, 100).await.unwrap_err();
    assert!(e.contains("don't match block"), "{e}");
    drop(fs);
    cluster.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_block_is_refused_and_its_handle_let_go() {
    let root = tempfile::tempdir().unwrap();
    let (cluster, _dn, ipc, fs) = one_datanode(root.path(), 1, &[]).await;
    put_with(&fs, "/gone", &data(1000, 3)).await;
    put_with(&fs, "/stays", &data(1000, 4)).await;
    let gone = fs.block_locations("/gone").await.unwrap().blocks[0].clone();
    let stays = fs.block_locations("/stays").await.unwrap().blocks[0].clone();
    let mut s = TcpStream::connect(xfer(&gone)).await.unwrap();
    read_range(&mut s, &gone, 0, 1000).await.unwrap();
    read_range(&mut s, &stays, 0, 1000).await.unwrap();
    assert_eq!(stats(ipc).await.handles_cached, 2);
    assert!(fs.delete("/gone", false).await.unwrap());
    let deadline = Instant::now() + Duration::from_secs(30);
    while stats(ipc).await.handles_cached != 1 {
        assert!(
            Instant::now() < deadline,
            "the DataNode never deleted the replica"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut s = TcpStream::connect(xfer(&gone)).await.unwrap();
    let e = read_range(&mut s, &gone, 0, 1000).await.unwrap_err();
    assert!(e.contains("Replica not found"), "{e}");
    let mut s = TcpStream::connect(xfer(&stays)).await.unwrap();
    assert_eq!(
        read_range(&mut s, &stays, 0, 1000).await.unwrap(),
        data(1000, 4)
    );
    assert_eq!(
        stats(ipc).await.handles_open,
        1,
        "the deleted block's files are closed"
    );
    drop(fs);
    cluster.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_open_file_cap_holds_under_pressure() {
    let root = tempfile::tempdir().unwrap();
    let conf = ["ferrite.datanode.read.handle.cache=4"];
    let (cluster, _dn, ipc, fs) = one_datanode(root.path(), 1, &conf).await;
    let body = data(40 * BS as usize, 5);
    put_with(&fs, "/many", &body).await;
    let fs = std::sync::Arc::new(fs);
    let readers: Vec<_> = (0..8)
        .map(|t| {
            let fs = fs.clone();
            tokio::spawn(async move {
                let f = fs.open("/many").await.unwrap();
                for round in 0..3u64 {
                    for b in 0..40u64 {
                        let b = (b * 7 + t * 5 + round) % 40;
                        let got = f.pread(b * BS, BS as usize).await.unwrap();
                        assert_eq!(got.len(), BS as usize);
                    }
                }
            })
        })
        .collect();
    for r in readers {
        r.await.unwrap();
    }
    let st = stats(ipc).await;
    assert!(st.handles_cached <= 4, "{st:?}");
    assert!(
        st.handles_open <= 4,
        "idle handles beyond the cap are closed: {st:?}"
    );
    assert!(st.cache_evictions > 0 && st.cache_misses > 40, "{st:?}");
    assert_eq!(
        fs.open("/many").await.unwrap().read_to_end().await.unwrap(),
        body
    );
    cluster.stop();
}

/// Writes a file's pages back and drops them from the page cache. The kernel may keep pages
/// that are still under writeback (the full suite runs other tests at once), so the advice
/// is repeated until `mincore` sees none of them resident.
fn drop_cache(path: &Path) {
    let f = std::fs::File::open(path).unwrap();
    for _ in 0..100 {
        f.sync_data().unwrap();
        // SAFETY: a valid descriptor; advice only.
        let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        assert_eq!(r, 0);
        if resident_pages(&f) == 0 {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!(
        "the kernel kept {} pages of {path:?} cached",
        resident_pages(&f)
    );
}

/// How many of a file's pages are in the page cache.
fn resident_pages(f: &std::fs::File) -> usize {
    let len = f.metadata().unwrap().len() as usize;
    if len == 0 {
        return 0;
    }
    // SAFETY: a read-only shared mapping of a file we hold open, unmapped before returning;
    // mincore only reports on it.
    unsafe {
        let m = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        );
        assert_ne!(m, libc::MAP_FAILED);
        let mut vec = vec![0u8; len.div_ceil(4096)];
        let r = libc::mincore(m, len, vec.as_mut_ptr());
        libc::munmap(m, len);
        assert_eq!(r, 0);
        vec.iter().filter(|b| **b & 1 == 1).count()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_pages_go_by_sendfile_and_cold_ones_by_copy() {
    let root = tempfile::tempdir().unwrap();
    let (cluster, _dn, ipc, fs) = one_datanode(root.path(), 1, &[]).await;
    let body = data(BS as usize, 6);
    put_with(&fs, "/warm", &body).await;
    let lb = fs.block_locations("/warm").await.unwrap().blocks[0].clone();
    let mut s = TcpStream::connect(xfer(&lb)).await.unwrap();
    assert_eq!(read_range(&mut s, &lb, 0, BS).await.unwrap(), body);
    let warm = stats(ipc).await;
    assert_eq!(warm.bytes_sendfile, BS, "{warm:?}");
    let mut files = Vec::new();
    find(
        &root.path().join("dn"),
        &format!("blk_{}", lb.b.block_id),
        &mut files,
    );
    assert!(!files.is_empty());
    for f in &files {
        drop_cache(f);
    }
    assert_eq!(read_range(&mut s, &lb, 0, BS).await.unwrap(), body);
    let cold = stats(ipc).await;
    assert_eq!(cold.bytes_copy - warm.bytes_copy, BS, "{cold:?}");

    // A cold block bigger than a copied packet: several packets, read on the I/O pool.
    let big = data(300 << 10, 9);
    let opts = CreateOptions {
        block_size: Some(1 << 20),
        replication: Some(1),
        ..Default::default()
    };
    let mut w = fs.create("/cold", &opts).await.unwrap();
    w.write(&big).await.unwrap();
    w.close().await.unwrap();
    let lb = fs.block_locations("/cold").await.unwrap().blocks[0].clone();
    let mut files = Vec::new();
    find(
        &root.path().join("dn"),
        &format!("blk_{}", lb.b.block_id),
        &mut files,
    );
    for f in &files {
        drop_cache(f);
    }
    let len = big.len() as u64;
    assert_eq!(read_range(&mut s, &lb, 0, len).await.unwrap(), big);
    let after = stats(ipc).await;
    // The first packet is read from disk (at most 128 KiB); the kernel's readahead may
    // bring the rest into the cache, which then goes out with sendfile.
    let copied = after.bytes_copy - cold.bytes_copy;
    let sent = after.bytes_sendfile - cold.bytes_sendfile;
    assert!(copied >= 128 << 10, "{after:?}");
    assert_eq!(copied + sent, len, "{after:?}");
    drop(fs);
    cluster.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_volume_does_not_hold_up_another() {
    let root = tempfile::tempdir().unwrap();
    let conf = ["ferrite.datanode.fault.read.delay=0:60000"];
    let (cluster, _dn, _ipc, fs) = one_datanode(root.path(), 2, &conf).await;
    // Volumes take new blocks in turn: files on both.
    let mut on = [None, None];
    for i in 0..6 {
        let path = format!("/v{i}");
        put_with(&fs, &path, &data(1000, i)).await;
        let lb = fs.block_locations(&path).await.unwrap().blocks[0].clone();
        let mut hits = Vec::new();
        find(
            &root.path().join("dn/v0"),
            &format!("blk_{}", lb.b.block_id),
            &mut hits,
        );
        let vol = if hits.is_empty() { 1 } else { 0 };
        on[vol].get_or_insert((lb, i));
    }
    let ((slow_lb, _), (fast_lb, fast_seed)) = (on[0].clone().unwrap(), on[1].clone().unwrap());
    let slow = tokio::spawn(async move {
        let mut s = TcpStream::connect(xfer(&slow_lb)).await.unwrap();
        read_range(&mut s, &slow_lb, 0, 1000).await
    });
    // Give the slow read time to reach its volume's I/O queue first (a head start, not a
    // measurement: the assertion below is about order).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut s = TcpStream::connect(xfer(&fast_lb)).await.unwrap();
    assert_eq!(
        read_range(&mut s, &fast_lb, 0, 1000).await.unwrap(),
        data(1000, fast_seed)
    );
    assert!(
        !slow.is_finished(),
        "the slow volume's read is still waiting on its disk"
    );
    slow.abort();
    drop(fs);
    cluster.stop();
}
