//! Block access tokens on a cluster of real processes: one token per getBlockLocations
//! reply, DataNodes refusing every kind of bad token (and going on serving), clients
//! refetching tokens that ran out during a long read, keys rolling under load.

mod common;

use std::time::Duration;

use common::*;
use ferrite_blocktoken::BlockTokenId;
use ferrite_client::FileSystem;
use ferrite_proto::common::TokenProto;
use ferrite_proto::hdfs::*;
use ferrite_transfer::io::{read_delimited, write_op};
use ferrite_transfer::op;
use tokio::net::TcpStream;

fn dn_of(lb: &LocatedBlockProto) -> String {
    let d = &lb.locs[0];
    format!("{}:{}", d.id.ip_addr, d.id.xfer_port)
}

/// Sends one op with `token` for `lb`'s block to its first replica; the DataNode's answer.
async fn ask(lb: &LocatedBlockProto, code: u8, token: &TokenProto) -> BlockOpResponseProto {
    let mut s = TcpStream::connect(dn_of(lb)).await.unwrap();
    let base = BaseHeaderProto {
        block: lb.b.clone(),
        token: Some(token.clone()),
        trace_info: None,
    };
    let header = ClientOperationHeaderProto {
        base_header: base.clone(),
        client_name: "tokens-test".into(),
    };
    match code {
        op::READ_BLOCK => {
            let o = OpReadBlockProto {
                header,
                offset: 0,
                len: lb.b.num_bytes.unwrap(),
                send_checksums: Some(true),
                caching_strategy: None,
            };
            write_op(&mut s, code, &o).await.unwrap();
        }
        op::WRITE_BLOCK => {
            let o = OpWriteBlockProto {
                header,
                stage: 6, // PIPELINE_SETUP_CREATE
                pipeline_size: 1,
                latest_generation_stamp: lb.b.generation_stamp,
                requested_checksum: ChecksumProto {
                    r#type: 2,
                    bytes_per_checksum: 512,
                },
                ..Default::default()
            };
            write_op(&mut s, code, &o).await.unwrap();
        }
        op::BLOCK_CHECKSUM => {
            let o = OpBlockChecksumProto {
                header: base,
                block_checksum_options: None,
            };
            write_op(&mut s, code, &o).await.unwrap();
        }
        op::TRANSFER_BLOCK => {
            let o = OpTransferBlockProto {
                header,
                targets: Vec::new(),
                target_storage_types: Vec::new(),
                target_storage_ids: Vec::new(),
            };
            write_op(&mut s, code, &o).await.unwrap();
        }
        _ => unreachable!(),
    }
    read_delimited(&mut s).await.unwrap()
}

/// Asserts a refusal with the access-token status and a reason containing `why`.
fn refused(r: &BlockOpResponseProto, why: &str) {
    assert_eq!(r.status, Status::ErrorAccessToken as i32, "{r:?}");
    let msg = r.message.as_deref().unwrap_or_default();
    assert!(msg.contains(why), "{msg:?} does not say {why:?}");
}

fn reencode(t: &TokenProto, change: impl FnOnce(&mut BlockTokenId)) -> TokenProto {
    let mut id = BlockTokenId::decode(&t.identifier).unwrap();
    change(&mut id);
    TokenProto {
        identifier: id.encode(),
        ..t.clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn datanodes_refuse_bad_tokens_and_keep_serving() {
    let root = tempfile::tempdir().unwrap();
    let cluster = Cluster::start_with(
        root.path(),
        0,
        &["ferrite.block.access.token.lifetime.ms=3000"],
        true,
    );
    let fs = FileSystem::connect(&cluster.url).await.unwrap();
    put(&fs, "/a", &data(5000, 1)).await;
    put(&fs, "/b", &data(700, 2)).await;

    // One token for the whole reply: every block carries the same signed bytes.
    let a = fs.block_locations("/a").await.unwrap().blocks;
    assert_eq!(a.len(), 5);
    let token = a[0].block_token.clone();
    assert_eq!(token.kind, "HDFS_BLOCK_TOKEN");
    assert_eq!(token.password.len(), 20);
    assert!(a.iter().all(|lb| lb.block_token == token));
    let id = BlockTokenId::decode(&token.identifier).unwrap();
    assert!(a.iter().all(|lb| id.covers(lb.b.block_id)));
    assert_eq!(id.runs.len(), 3, "five consecutive ids are one run");

    let lb = &a[1];
    let ok = ask(lb, op::READ_BLOCK, &token).await;
    assert_eq!(ok.status, Status::Success as i32, "{ok:?}");

    refused(
        &ask(lb, op::READ_BLOCK, &TokenProto::default()).await,
        "no block token",
    );
    let mut forged = token.clone();
    let mut pw = forged.password.to_vec();
    pw[7] ^= 0x20;
    forged.password = pw.into();
    refused(&ask(lb, op::READ_BLOCK, &forged).await, "signature");
    // Widening the identifier to more blocks breaks its signature.
    let widened = reencode(&token, |id| id.runs = vec![0, 1, u64::MAX]);
    refused(&ask(lb, op::READ_BLOCK, &widened).await, "signature");
    let unknown = reencode(&token, |id| id.key_id ^= 0x5a5a);
    refused(&ask(lb, op::READ_BLOCK, &unknown).await, "does not have");
    let garbage = TokenProto {
        identifier: vec![0xff; 9].into(),
        ..token.clone()
    };
    refused(&ask(lb, op::READ_BLOCK, &garbage).await, "cannot be read");

    // /a's token does not open /b's block.
    let b = fs.block_locations("/b").await.unwrap().blocks;
    refused(&ask(&b[0], op::READ_BLOCK, &token).await, "does not cover");

    // A read token neither writes nor copies; checksums need only read.
    refused(&ask(lb, op::WRITE_BLOCK, &token).await, "not [WRITE]");
    refused(&ask(lb, op::TRANSFER_BLOCK, &token).await, "not [COPY]");
    refused(&ask(lb, op::BLOCK_CHECKSUM, &forged).await, "signature");
    let sum = ask(lb, op::BLOCK_CHECKSUM, &token).await;
    assert_eq!(sum.status, Status::Success as i32, "{sum:?}");

    // Once its lifetime has passed the token is refused.
    tokio::time::sleep(Duration::from_millis(3200)).await;
    refused(&ask(lb, op::READ_BLOCK, &token).await, "expired");

    // Every DataNode still serves, with fresh tokens, reads and writes alike.
    assert_eq!(get(&fs, "/a").await, data(5000, 1));
    put(&fs, "/c", &data(3000, 3)).await;
    assert_eq!(get(&fs, "/c").await, data(3000, 3));
    fs.file_checksum("/c").await.unwrap();
    cluster.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_read_outlives_its_tokens_and_key_rolls() {
    let root = tempfile::tempdir().unwrap();
    let cluster = Cluster::start_with(
        root.path(),
        0,
        &[
            "ferrite.block.access.token.lifetime.ms=1500",
            "ferrite.block.access.key.update.interval.ms=3000",
        ],
        true,
    );
    let fs = FileSystem::connect(&cluster.url).await.unwrap();
    let bytes = data(6000, 4);
    put(&fs, "/long", &bytes).await;
    let first = fs.block_locations("/long").await.unwrap().blocks[0]
        .block_token
        .clone();

    let mut r = fs.open("/long").await.unwrap();
    let mut got = vec![0u8; 1500];
    assert_eq!(r.read(&mut got).await.unwrap(), 1500);
    // The tokens the reader holds expire, and the keys roll, between its reads.
    for _ in 0..2 {
        tokio::time::sleep(Duration::from_millis(2600)).await;
        let mut more = vec![0u8; 1500];
        assert_eq!(r.read(&mut more).await.unwrap(), 1500);
        got.extend_from_slice(&more);
    }
    got.extend(r.read_to_end().await.unwrap());
    assert_eq!(got, bytes);

    // The key that signs now is not the one that signed at first: keys rolled, and the
    // DataNodes learned the new ones from heartbeats.
    let now = fs.block_locations("/long").await.unwrap().blocks[0]
        .block_token
        .clone();
    let key = |t: &TokenProto| BlockTokenId::decode(&t.identifier).unwrap().key_id;
    assert_ne!(key(&first), key(&now));
    let ok = ask(
        &fs.block_locations("/long").await.unwrap().blocks[0],
        op::READ_BLOCK,
        &now,
    )
    .await;
    assert_eq!(ok.status, Status::Success as i32, "{ok:?}");
    cluster.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_can_be_turned_off() {
    let root = tempfile::tempdir().unwrap();
    let cluster = Cluster::start_with(
        root.path(),
        0,
        &["dfs.block.access.token.enable=false"],
        true,
    );
    let fs = FileSystem::connect(&cluster.url).await.unwrap();
    put(&fs, "/off", &data(2000, 5)).await;
    let lbs = fs.block_locations("/off").await.unwrap().blocks;
    assert!(lbs.iter().all(|lb| lb.block_token.identifier.is_empty()));
    // DataNodes follow the NameNode: no token needed.
    let ok = ask(&lbs[0], op::READ_BLOCK, &TokenProto::default()).await;
    assert_eq!(ok.status, Status::Success as i32, "{ok:?}");
    assert_eq!(get(&fs, "/off").await, data(2000, 5));
    cluster.stop();
}
