//! The data path against a cluster of real processes: a `ferrite namenode` and three
//! `ferrite datanode`s on ephemeral loopback ports, driven by Ferrite's own client and by
//! hand-made data-transfer frames for the fault cases.

use std::path::Path;
use std::time::Duration;

mod common;

use common::*;
use ferrite_client::{CreateOptions, FileSystem};
use ferrite_proto::hdfs::*;
use ferrite_transfer::checksum::Checksum;
use ferrite_transfer::io::{read_delimited, write_op};
use ferrite_transfer::packet::{self, Header};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader as TokioBufReader};
use tokio::net::TcpStream;

const SIZES: [usize; 8] = [0, 1, 511, 512, 513, 1024, 5 * 1024 + 77, 64 * 1024 + 3];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_read_replicate_restart() {
    let root = tempfile::tempdir().unwrap();
    let cluster = Cluster::start(root.path(), 0);
    let fs = FileSystem::connect(&cluster.url).await.unwrap();
    for (i, &n) in SIZES.iter().enumerate() {
        let bytes = data(n, i as u64);
        let path = format!("/d/f{n}");
        put(&fs, &path, &bytes).await;
        assert_eq!(get(&fs, &path).await, bytes, "size {n}");
        let st = fs.status(&path).await.unwrap().unwrap();
        assert_eq!(st.len, n as u64);
        // Every block has three replicas on three distinct DataNodes.
        let lbs = fs.block_locations(&path).await.unwrap();
        assert_eq!(lbs.blocks.len(), n.div_ceil(BLOCK as usize));
        for lb in &lbs.blocks {
            let mut nodes: Vec<_> = lb.locs.iter().map(|d| d.id.xfer_port).collect();
            nodes.sort();
            nodes.dedup();
            assert_eq!(nodes.len(), 3, "block {} of {path}", lb.b.block_id);
            assert_eq!(lb.storage_i_ds.len(), 3);
        }
    }
    // Positional reads at random offsets, across block boundaries.
    let big = data(64 * 1024 + 3, 7);
    let r = fs.open("/d/f65539").await.unwrap();
    let mut x = 12345u64;
    for _ in 0..200 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let off = (x >> 33) as usize % big.len();
        let len = ((x >> 13) as usize % 3000).min(big.len() - off);
        assert_eq!(
            r.pread(off as u64, len).await.unwrap(),
            &big[off..off + len]
        );
    }
    // The whole cluster restarts on the same folders and ports. Until the DataNodes have
    // reported the blocks, the NameNode stays in start-up safe mode and refuses changes.
    let port = cluster.port();
    cluster.stop();
    let mut cluster = Cluster::start_with(root.path(), port, &[], false);
    let fs = FileSystem::connect(&cluster.url).await.unwrap();
    let err = fs.mkdirs("/after", 0o755, true).await.unwrap_err();
    assert_eq!(
        err.class(),
        Some("org.apache.hadoop.hdfs.server.namenode.SafeModeException")
    );
    assert!(
        err.to_string()
            .contains("The reported blocks 0 needs additional"),
        "{err}"
    );
    cluster.start_datanodes();
    let mut left = false;
    for _ in 0..100 {
        if fs.mkdirs("/after", 0o755, true).await.is_ok() {
            left = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(left, "safe mode did not end once the blocks were reported");
    // Everything is there.
    for (i, &n) in SIZES.iter().enumerate() {
        let path = format!("/d/f{n}");
        assert_eq!(
            get(&fs, &path).await,
            data(n, i as u64),
            "after restart, size {n}"
        );
    }
    cluster.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_replica_is_skipped_and_reported() {
    let root = tempfile::tempdir().unwrap();
    let cluster = Cluster::start(root.path(), 0);
    let fs = FileSystem::connect(&cluster.url).await.unwrap();
    let bytes = data(3000, 99);
    put(&fs, "/c", &bytes).await;
    let lbs = fs.block_locations("/c").await.unwrap();
    let first = lbs.blocks[0].clone();
    // Damage the copy on the DataNode that readers are sent to first.
    let victim = first.locs[0].id.xfer_port;
    let files = cluster.block_files(first.b.block_id);
    assert_eq!(files.len(), 3);
    let dn_dir = (0..3)
        .find(|&i| cluster.dn_addr(i).port() as u32 == victim)
        .map(|i| root.path().join(format!("dn{i}")))
        .unwrap();
    let file = files.iter().find(|p| p.starts_with(&dn_dir)).unwrap();
    let mut raw = std::fs::read(file).unwrap();
    raw[100] ^= 0xff;
    std::fs::write(file, raw).unwrap();
    // Reads still return the right bytes, from another replica...
    assert_eq!(get(&fs, "/c").await, bytes);
    assert_eq!(
        fs.open("/c").await.unwrap().pread(50, 100).await.unwrap(),
        &bytes[50..150]
    );
    // ...and the NameNode no longer hands out the bad one.
    let lbs = fs.block_locations("/c").await.unwrap();
    let ports: Vec<u32> = lbs.blocks[0].locs.iter().map(|d| d.id.xfer_port).collect();
    assert!(
        !ports.contains(&victim),
        "corrupt replica still listed: {ports:?}"
    );
    // Re-replication replaces the bad copy: three good replicas again, all readable.
    wait_for_replicas(&fs, "/c", 3).await;
    let file = cluster
        .block_files(first.b.block_id)
        .into_iter()
        .find(|p| p.starts_with(&dn_dir))
        .expect("a fresh copy on the victim");
    assert_eq!(std::fs::read(file).unwrap(), &bytes[..1024]);
    cluster.stop();
}

/// Waits (bounded) until every block of `path` has `n` listed replicas.
async fn wait_for_replicas(fs: &FileSystem, path: &str, n: usize) {
    for _ in 0..200 {
        let lbs = fs.block_locations(path).await.unwrap();
        if lbs.blocks.iter().all(|b| b.locs.len() == n) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{path} did not reach {n} replicas");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_replication_adds_and_removes_copies() {
    let root = tempfile::tempdir().unwrap();
    let cluster = Cluster::start(root.path(), 0);
    let fs = FileSystem::connect(&cluster.url).await.unwrap();
    let bytes = data(2100, 3);
    put(&fs, "/r", &bytes).await;
    assert!(fs.set_replication("/r", 1).await.unwrap());
    wait_for_replicas(&fs, "/r", 1).await;
    let id = fs.block_locations("/r").await.unwrap().blocks[0].b.block_id;
    for _ in 0..100 {
        if cluster.block_files(id).len() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(cluster.block_files(id).len(), 1, "surplus replicas deleted");
    assert!(fs.set_replication("/r", 3).await.unwrap());
    wait_for_replicas(&fs, "/r", 3).await;
    assert_eq!(cluster.block_files(id).len(), 3);
    assert_eq!(get(&fs, "/r").await, bytes);
    cluster.stop();
}

/// Creates `path` and opens a WRITE_BLOCK for its first block on one DataNode, by hand,
/// as a client named "raw" (so the test controls every packet).
async fn raw_write(cluster: &Cluster, path: &str) -> (TcpStream, LocatedBlockProto) {
    let (s, lb, resp) = raw_write_with(cluster, path, |_| {}).await;
    assert_eq!(resp.status, Status::Success as i32);
    (s, lb)
}

/// Creates `path` and sends its first block's WRITE_BLOCK, changed by `edit`, to the first
/// DataNode chosen; returns the DataNode's answer to it.
async fn raw_write_with(
    cluster: &Cluster,
    path: &str,
    edit: impl FnOnce(&mut OpWriteBlockProto),
) -> (TcpStream, LocatedBlockProto, BlockOpResponseProto) {
    let nn = ferrite_ipc::client::IpcClient::connect(
        cluster.url.trim_start_matches("hdfs://").parse().unwrap(),
        "root",
        ferrite_ipc::CLIENT_PROTOCOL,
    )
    .await
    .unwrap();
    let create = CreateRequestProto {
        src: path.to_string(),
        masked: FsPermissionProto { perm: 0o644 },
        client_name: "raw".into(),
        create_flag: 1,
        create_parent: true,
        replication: 1,
        block_size: BLOCK,
        ..Default::default()
    };
    let c: CreateResponseProto = nn.call("create", &create).await.unwrap();
    let add = AddBlockRequestProto {
        src: path.to_string(),
        client_name: "raw".into(),
        file_id: c.fs.unwrap().file_id,
        ..Default::default()
    };
    let lb = nn
        .call::<_, AddBlockResponseProto>("addBlock", &add)
        .await
        .unwrap()
        .block;
    let dn = &lb.locs[0];
    let mut s = TcpStream::connect(format!("{}:{}", dn.id.ip_addr, dn.id.xfer_port))
        .await
        .unwrap();
    let mut op = OpWriteBlockProto {
        header: ClientOperationHeaderProto {
            base_header: BaseHeaderProto {
                block: lb.b.clone(),
                token: Some(lb.block_token.clone()),
                trace_info: None,
            },
            client_name: "raw".into(),
        },
        stage: 6,
        pipeline_size: 1,
        latest_generation_stamp: lb.b.generation_stamp,
        requested_checksum: ChecksumProto {
            r#type: 2,
            bytes_per_checksum: 512,
        },
        ..Default::default()
    };
    edit(&mut op);
    write_op(&mut s, ferrite_transfer::op::WRITE_BLOCK, &op)
        .await
        .unwrap();
    let resp: BlockOpResponseProto = read_delimited(&mut s).await.unwrap();
    (s, lb, resp)
}

fn packet_bytes(seqno: i64, offset: u64, payload: &[u8], corrupt: bool, last: bool) -> Vec<u8> {
    let mut sums = Vec::new();
    Checksum::CRC32C_512.compute_into(payload, &mut sums);
    if corrupt {
        sums[0] ^= 1;
    }
    let mut out = bytes::BytesMut::new();
    let h = Header {
        offset_in_block: offset as i64,
        seqno,
        last,
        data_len: payload.len() as i32,
        sync: false,
    };
    packet::encode(&h, &sums, payload, &mut out);
    out.to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_on_the_data_port() {
    let root = tempfile::tempdir().unwrap();
    let cluster = Cluster::start(root.path(), 0);
    let fs = FileSystem::connect(&cluster.url).await.unwrap();
    put(&fs, "/keep", &data(2500, 5)).await;

    // A packet whose checksum does not match: an error ack, and no finalized replica.
    let (mut s, lb) = raw_write(&cluster, "/bad").await;
    s.write_all(&packet_bytes(0, 0, &[9u8; 512], true, false))
        .await
        .unwrap();
    let ack: PipelineAckProto = read_delimited(&mut s).await.unwrap();
    assert_eq!(ack.seqno, 0);
    assert_eq!(ack.reply, vec![Status::ErrorChecksum as i32]);
    drop(s);
    assert!(cluster.block_files(lb.b.block_id).is_empty());

    // A writer that disconnects mid-block leaves no finalized replica behind.
    let (mut s, lb) = raw_write(&cluster, "/gone").await;
    s.write_all(&packet_bytes(0, 0, &[1u8; 512], false, false))
        .await
        .unwrap();
    let ack: PipelineAckProto = read_delimited(&mut s).await.unwrap();
    assert_eq!(ack.reply, vec![Status::Success as i32]);
    drop(s);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(cluster.block_files(lb.b.block_id).is_empty());

    // A block bigger than any volume's free space is refused up front, with HDFS's
    // "out of space" message, rather than failing partway through with ENOSPC.
    let (_, lb, resp) = raw_write_with(&cluster, "/huge", |op| {
        op.header.base_header.block.num_bytes = Some(1 << 60);
    })
    .await;
    assert_eq!(resp.status, Status::Error as i32);
    let msg = resp.message.unwrap_or_default();
    assert!(
        msg.contains("out of space") && msg.contains(&(1u64 << 60).to_string()),
        "{msg}"
    );
    assert!(cluster.block_files(lb.b.block_id).is_empty());

    // An unknown op code: an error response, then the connection closes.
    let mut s = TcpStream::connect(cluster.dn_addr(0)).await.unwrap();
    s.write_all(&[0, 28, 99]).await.unwrap();
    let mut rd = TokioBufReader::new(s);
    let resp: BlockOpResponseProto = read_delimited(&mut rd).await.unwrap();
    assert_eq!(resp.status, Status::ErrorUnsupported as i32);
    assert!(resp.message.unwrap().contains("99"));
    let mut rest = Vec::new();
    assert_eq!(rd.read_to_end(&mut rest).await.unwrap(), 0);

    // A wrong protocol version and a truncated op are refused too.
    let mut s = TcpStream::connect(cluster.dn_addr(1)).await.unwrap();
    s.write_all(&[0, 27, 81]).await.unwrap();
    let resp: BlockOpResponseProto = read_delimited(&mut s).await.unwrap();
    assert_eq!(resp.status, Status::Error as i32);
    let mut s = TcpStream::connect(cluster.dn_addr(2)).await.unwrap();
    s.write_all(&[0, 28, 81, 0x7f]).await.unwrap();
    drop(s);

    // Every DataNode still serves, and the other file is intact.
    assert_eq!(get(&fs, "/keep").await, data(2500, 5));
    put(&fs, "/after", &data(1500, 6)).await;
    assert_eq!(get(&fs, "/after").await, data(1500, 6));
    cluster.stop();
}

/// The DataNodes holding the first block of `path`, by index in the cluster.
async fn holders(fs: &FileSystem, cluster: &Cluster, path: &str) -> Vec<usize> {
    let lbs = fs.block_locations(path).await.unwrap();
    lbs.blocks[0]
        .locs
        .iter()
        .map(|d| {
            (0..cluster.dns.len())
                .find(|&i| cluster.dn_addr(i).port() as u32 == d.id.xfer_port)
                .unwrap()
        })
        .collect()
}

/// Waits (bounded) until the first block of `path` sits on `n` nodes, none of them `gone`.
async fn wait_for_holders(fs: &FileSystem, cluster: &Cluster, path: &str, n: usize, gone: usize) {
    for _ in 0..600 {
        let h = holders(fs, cluster, path).await;
        if h.len() == n && !h.contains(&gone) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{path} never left DataNode {gone}");
}

/// A cluster and a 1,500-byte file at `path` with replication 2 (so a third node is free).
async fn two_replica_file(root: &Path, path: &str) -> (Cluster, FileSystem, Vec<u8>) {
    // Dead after 2 x 1 s + 10 heartbeats of 1 s.
    let cluster = Cluster::start_with(
        root,
        0,
        &["dfs.namenode.heartbeat.recheck-interval=1000"],
        true,
    );
    let fs = FileSystem::connect(&cluster.url).await.unwrap();
    let opts = CreateOptions {
        block_size: Some(BLOCK),
        replication: Some(2),
        ..Default::default()
    };
    let bytes = data(1500, 11);
    let mut w = fs.create(path, &opts).await.unwrap();
    w.write(&bytes).await.unwrap();
    w.close().await.unwrap();
    (cluster, fs, bytes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_volume_is_taken_out_and_its_blocks_copied() {
    let root = tempfile::tempdir().unwrap();
    let (cluster, fs, bytes) = two_replica_file(root.path(), "/vol").await;
    // The volume disappears under a running DataNode: its replicas are reported lost and
    // copied to the node that did not have one.
    let victim = holders(&fs, &cluster, "/vol").await[0];
    let volume = root.path().join(format!("dn{victim}"));
    std::fs::remove_dir_all(volume.join("current")).unwrap();
    wait_for_holders(&fs, &cluster, "/vol", 2, victim).await;
    assert_eq!(get(&fs, "/vol").await, bytes);
    // Monitoring sees it as in HDFS: the DataNode's /jmx counts and names the volume...
    let dn_http = cluster.dns[victim].http.expect("a DataNode serves /jmx");
    let state = jmx_bean(dn_http, "Hadoop:service=DataNode,name=FSDatasetState-*");
    assert_eq!(state["NumFailedVolumes"], 1, "{state}");
    let failed = state["FailedStorageLocations"].as_array().unwrap();
    assert_eq!(failed, &[serde_json::json!(volume.display().to_string())]);
    // ...and the NameNode's LiveNodes has its failed volume, and says where its /jmx is.
    let nn_http = cluster
        .nn
        .as_ref()
        .and_then(|p| p.http)
        .expect("NameNode /jmx");
    let xfer = &cluster.dns[victim].ready;
    let mut entry = serde_json::Value::Null;
    for _ in 0..100 {
        let info = jmx_bean(nn_http, "Hadoop:service=NameNode,name=NameNodeInfo");
        let live = json_attr(&info, "LiveNodes");
        entry = live
            .as_object()
            .unwrap()
            .values()
            .find(|n| n["xferaddr"] == xfer.as_str())
            .cloned()
            .unwrap_or_default();
        if entry["volfails"] == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(entry["volfails"], 1, "{entry}");
    assert_eq!(entry["infoAddr"], dn_http.to_string(), "{entry}");
    cluster.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_datanode_is_declared_and_its_blocks_copied() {
    let root = tempfile::tempdir().unwrap();
    let (mut cluster, fs, bytes) = two_replica_file(root.path(), "/dead").await;
    let victim = holders(&fs, &cluster, "/dead").await[0];
    cluster.kill_datanode(victim);
    wait_for_holders(&fs, &cluster, "/dead", 2, victim).await;
    assert_eq!(get(&fs, "/dead").await, bytes);
    cluster.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_files_keep_their_lease_while_the_client_renews_it() {
    let root = tempfile::tempdir().unwrap();
    let cluster = Cluster::start_with(
        root.path(),
        0,
        &["dfs.namenode.lease-hard-limit-sec=2"],
        true,
    );
    let renewing = ferrite_client::ClientOptions {
        lease_renewal: Duration::from_millis(300),
        ..Default::default()
    };
    let fs = FileSystem::connect_with(&cluster.url, &renewing)
        .await
        .unwrap();
    let opts = CreateOptions {
        block_size: Some(BLOCK),
        ..Default::default()
    };
    let mut w = fs.create("/slow", &opts).await.unwrap();
    w.write(&data(700, 1)).await.unwrap();
    // Well past the hard limit: the lease holds because it is renewed.
    tokio::time::sleep(Duration::from_secs(4)).await;
    w.write(&data(700, 2)).await.unwrap();
    w.close().await.unwrap();
    assert_eq!(fs.status("/slow").await.unwrap().unwrap().len, 1400);

    // A client that does not renew loses the file to lease recovery.
    let lazy = ferrite_client::ClientOptions {
        lease_renewal: Duration::from_secs(3600),
        ..Default::default()
    };
    let fs2 = FileSystem::connect_with(&cluster.url, &lazy).await.unwrap();
    let mut w = fs2.create("/abandoned", &opts).await.unwrap();
    w.write(&data(700, 3)).await.unwrap();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let err = w.close().await.unwrap_err();
    assert_eq!(
        err.class(),
        Some("org.apache.hadoop.hdfs.server.namenode.LeaseExpiredException"),
        "{err}"
    );
    cluster.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hflushed_bytes_are_readable_before_close() {
    let root = tempfile::tempdir().unwrap();
    let cluster = Cluster::start(root.path(), 0);
    let fs = FileSystem::connect(&cluster.url).await.unwrap();
    let reader = FileSystem::connect(&cluster.url).await.unwrap();
    let opts = CreateOptions {
        block_size: Some(BLOCK),
        ..Default::default()
    };
    let bytes = data(3 * BLOCK as usize / 2 + 700, 41);
    let mut w = fs.create("/flushed", &opts).await.unwrap();
    // Ends inside a chunk, and then inside the second block.
    for cut in [700, BLOCK as usize + 300, bytes.len()] {
        let from = w.bytes_written() as usize;
        w.write(&bytes[from..cut]).await.unwrap();
        w.hflush().await.unwrap();
        assert_eq!(get(&reader, "/flushed").await, &bytes[..cut], "after {cut}");
    }
    w.close().await.unwrap();
    assert_eq!(get(&reader, "/flushed").await, bytes);
    cluster.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_writer_recovers_its_pipeline_when_a_datanode_dies() {
    let root = tempfile::tempdir().unwrap();
    let mut cluster = Cluster::start(root.path(), 0);
    let fs = FileSystem::connect(&cluster.url).await.unwrap();
    let opts = CreateOptions {
        block_size: Some(8 << 20),
        ..Default::default()
    };
    let bytes = data(6 << 20, 21);
    let mut w = fs.create("/survivor", &opts).await.unwrap();
    w.write(&bytes[..2 << 20]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Every node of the pipeline holds the block now; one of them dies.
    cluster.kill_datanode(1);
    w.write(&bytes[2 << 20..]).await.unwrap();
    w.close().await.unwrap();
    assert_eq!(get(&fs, "/survivor").await, bytes);
    let lbs = fs.block_locations("/survivor").await.unwrap();
    let dead = cluster.dn_addr(1).port() as u32;
    assert_eq!(lbs.blocks[0].locs.len(), 2);
    assert!(lbs.blocks[0].locs.iter().all(|d| d.id.xfer_port != dead));
    cluster.stop();
}

/// As HDFS clients do by default, a pipeline that loses a node after an hflush gets a
/// new one holding the flushed bytes, so the block keeps three copies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_writer_replaces_a_lost_datanode_after_an_hflush() {
    let root = tempfile::tempdir().unwrap();
    let mut cluster = Cluster::start(root.path(), 0);
    cluster.add_datanode();
    wait_for_live_datanodes(&cluster, 4).await;
    let fs = FileSystem::connect(&cluster.url).await.unwrap();
    let opts = CreateOptions {
        block_size: Some(8 << 20),
        ..Default::default()
    };
    let bytes = data(3 << 20, 23);
    let mut w = fs.create("/replaced", &opts).await.unwrap();
    w.write(&bytes[..1 << 20]).await.unwrap();
    w.hflush().await.unwrap();
    let pipeline = fs.block_locations("/replaced").await.unwrap().blocks[0]
        .locs
        .clone();
    assert_eq!(pipeline.len(), 3);
    let victim = (0..4)
        .find(|&i| pipeline[1].id.xfer_port == cluster.dn_addr(i).port() as u32)
        .expect("the pipeline's second node is one of ours");
    cluster.kill_datanode(victim);
    w.write(&bytes[1 << 20..]).await.unwrap();
    w.close().await.unwrap();
    assert_eq!(get(&fs, "/replaced").await, bytes);
    let locs = &fs.block_locations("/replaced").await.unwrap().blocks[0].locs;
    let dead = cluster.dn_addr(victim).port() as u32;
    assert_eq!(locs.len(), 3, "a new node took the lost one's place");
    assert!(locs.iter().all(|d| d.id.xfer_port != dead));
    cluster.stop();
}

/// Waits until the NameNode counts `n` live DataNodes.
async fn wait_for_live_datanodes(cluster: &Cluster, n: usize) {
    let nn = ferrite_ipc::client::IpcClient::connect(
        cluster.url.trim_start_matches("hdfs://").parse().unwrap(),
        "root",
        ferrite_ipc::CLIENT_PROTOCOL,
    )
    .await
    .unwrap();
    let req = GetDatanodeReportRequestProto {
        r#type: DatanodeReportTypeProto::Live as i32,
    };
    for _ in 0..100 {
        let r: GetDatanodeReportResponseProto = nn.call("getDatanodeReport", &req).await.unwrap();
        if r.di.len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("fewer than {n} live DataNodes after 10 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn datanodes_rejoin_a_restarted_namenode() {
    let root = tempfile::tempdir().unwrap();
    let mut cluster = Cluster::start(root.path(), 0);
    let fs = FileSystem::connect(&cluster.url).await.unwrap();
    let bytes = data(5000, 31);
    put(&fs, "/kept", &bytes).await;
    // Only the NameNode restarts; the DataNodes keep running, reconnect, are asked to
    // register again, and report their blocks, which ends start-up safe mode.
    let port = cluster.port();
    let mut nn = cluster.nn.take().unwrap();
    term(&mut nn.child);
    drop(nn);
    let fresh = Cluster::start_with(root.path(), port, &[], false);
    cluster.nn = Some(fresh.into_namenode());
    let fs = FileSystem::connect(&cluster.url).await.unwrap();
    let mut ok = false;
    for _ in 0..100 {
        if fs.mkdirs("/after", 0o755, true).await.is_ok() {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ok, "the DataNodes did not report to the restarted NameNode");
    assert_eq!(get(&fs, "/kept").await, bytes);
    wait_for_replicas(&fs, "/kept", 3).await;
    put(&fs, "/new", &bytes).await;
    assert_eq!(get(&fs, "/new").await, bytes);
    cluster.stop();
}

/// When the next node of a pipeline dies mid-block, the node before it sends an ack naming
/// it, and then leaves the connection for the writer to close: the writer can go on
/// sending (HDFS's writers do, until they read the ack) without meeting a reset. A node
/// that closed at once with packets unread reset the connection, and a writer that met the
/// reset before the ack blamed the wrong node (hdfs-native then stalled).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_next_node_is_named_in_an_ack_and_the_writer_is_not_reset() {
    const PAYLOAD: usize = 32 << 10;
    let root = tempfile::tempdir().unwrap();
    let cluster = Cluster::start(root.path(), 0);
    // The next node: takes the op, says yes, reads a few packets and dies.
    let next = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let next_port = next.local_addr().unwrap().port();
    let dies = tokio::spawn(async move {
        let (mut s, _) = next.accept().await.unwrap();
        let mut buf = vec![0u8; 64 << 10];
        let n = s.read(&mut buf).await.unwrap();
        assert!(n > 0, "the op arrives");
        let ok = BlockOpResponseProto {
            status: Status::Success as i32,
            ..Default::default()
        };
        ferrite_transfer::io::write_delimited(&mut s, &ok)
            .await
            .unwrap();
        let mut got = 0;
        while got < 4 * PAYLOAD {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got += n,
            }
        }
    });
    let target = DatanodeInfoProto {
        id: DatanodeIdProto {
            ip_addr: "127.0.0.1".into(),
            host_name: "localhost".into(),
            datanode_uuid: "gone".into(),
            xfer_port: next_port as u32,
            ..Default::default()
        },
        ..Default::default()
    };
    let (s, _, resp) = raw_write_with(&cluster, "/next-dies", |op| {
        op.targets = vec![target];
        op.pipeline_size = 2;
    })
    .await;
    assert_eq!(resp.status, Status::Success as i32);

    let (mut rd, mut wr) = s.into_split();
    let acked_error = std::sync::Arc::new(tokio::sync::Notify::new());
    let heard = acked_error.clone();
    // Packets until the error ack is read, then 400 more (12.5 MiB, more than the socket
    // buffers hold): after a close they would meet the reset.
    let writer = tokio::spawn(async move {
        let payload = vec![7u8; PAYLOAD];
        let mut after = None::<usize>;
        for seqno in 0..2_000i64 {
            let pkt = packet_bytes(seqno, seqno as u64 * PAYLOAD as u64, &payload, false, false);
            wr.write_all(&pkt).await?;
            if after.is_none()
                && tokio::time::timeout(Duration::ZERO, heard.notified())
                    .await
                    .is_ok()
            {
                after = Some(0);
            }
            if let Some(n) = after.as_mut() {
                *n += 1;
                if *n == 400 {
                    return Ok::<_, std::io::Error>(seqno);
                }
            }
        }
        Ok(-1)
    });
    let error_ack = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let ack: PipelineAckProto = read_delimited(&mut rd).await.unwrap();
            if ack.reply.iter().any(|&r| r != Status::Success as i32) {
                break ack;
            }
        }
    })
    .await
    .expect("an error ack");
    acked_error.notify_one();
    assert_eq!(
        error_ack.reply,
        [Status::Success as i32, Status::Error as i32],
        "the ack names the next node, not this one"
    );
    let sent = tokio::time::timeout(Duration::from_secs(60), writer)
        .await
        .expect("the writer finishes")
        .unwrap()
        .expect("no reset while the writer still sends");
    assert!(sent > 400, "{sent} packets");
    dies.await.unwrap();
}
