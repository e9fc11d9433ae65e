//! Inputs the fuzzer found, kept so that what they broke stays fixed. Each goes through
//! its target's check (which repairs checksums), allocation limit included.

fn check(name: &str, input: &[u8]) {
    let t = ferrite_fuzz::target(name).expect("a target");
    if let Err(e) = ferrite_fuzz::check_one(t, input) {
        panic!("{name}: {e}");
    }
}

fn section(kind: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = kind.to_le_bytes().to_vec();
    out.extend((payload.len() as u64).to_le_bytes());
    out.extend([0; 4]); // the checksum, repaired by the target
    out.extend(payload);
    out
}

/// An image whose inode section claims 2^40 inodes in eight bytes: loading it reserved a
/// map of 2^24 entries (over 500 MB) before finding the section empty.
#[test]
fn an_image_claiming_more_inodes_than_it_holds() {
    let mut img = b"FERIMG02".to_vec();
    img.extend(1u64.to_le_bytes());
    img.extend([0; 4]);
    img.extend(section(1, &0u32.to_le_bytes()));
    img.extend(section(2, &(1u64 << 40).to_le_bytes()));
    img.extend(section(3, &1u64.to_le_bytes()));
    img.extend(section(0xFFFF_FFFF, &[]));
    check("image", &img);
}

/// A summary checkpoint with a file of 2^63 bytes at replication 3: its raw size
/// overflowed and the follower panicked.
#[test]
fn a_summary_checkpoint_with_an_exabyte_file() {
    let mut ck = b"FSUM".to_vec();
    ck.push(1);
    ck.extend(7u64.to_le_bytes()); // txid
    ck.extend(0i64.to_le_bytes()); // clock
    ck.extend(0o755u16.to_le_bytes());
    ck.extend(0i64.to_le_bytes());
    ck.extend(1u32.to_le_bytes()); // one child
    ck.extend(1u32.to_le_bytes());
    ck.push(b'f');
    ck.push(0); // a file
    ck.extend((1u64 << 63).to_le_bytes());
    ck.extend(3u16.to_le_bytes());
    ck.push(0); // closed
    ck.extend([0; 4]); // the checksum, repaired by the target
    check("summary-checkpoint", &ck);
}

/// A compact block report claiming 2^40 replicas in no bytes reserved 2^24 of them.
#[test]
fn a_block_report_claiming_more_replicas_than_it_holds() {
    use ferrite_proto::datanode::StorageBlockReportProto;
    use prost::Message;
    let r = StorageBlockReportProto {
        number_of_blocks: Some(1 << 40),
        blocks_buffers: vec![vec![0; 8]],
        ..Default::default()
    };
    check("block-report", &r.encode_to_vec());
}
