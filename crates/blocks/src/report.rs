//! Decoding full block reports in both of Hadoop's encodings (`BlockListAsLongs`): the
//! compact varint buffers and the legacy list of longs.

use ferrite_proto::datanode::StorageBlockReportProto;

/// Replica states as DataNodes report them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplicaState {
    Finalized,
    /// Being written (RBW), under recovery (RUR) or temporary.
    Unfinished,
    /// Waiting to be recovered (RWR): unfinished when its DataNode restarted, and maybe
    /// short of what its pipeline acknowledged.
    WaitingRecovery,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reported {
    pub id: u64,
    pub len: u64,
    pub gs: u64,
    pub state: ReplicaState,
}

fn state_of(v: u64) -> ReplicaState {
    match v & 0xf {
        0 => ReplicaState::Finalized,
        2 => ReplicaState::WaitingRecovery,
        _ => ReplicaState::Unfinished,
    }
}

/// What is wrong with a full block report.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReportError {
    #[error("truncated {0}")]
    Truncated(&'static str),
    #[error("{extra} bytes after {count} blocks")]
    TrailingBytes { extra: usize, count: u64 },
    #[error("block report shorter than its header")]
    NoHeader,
    #[error("block report of {longs} longs for {finalized} finalized and {other} other replicas")]
    WrongLength {
        longs: usize,
        finalized: usize,
        other: usize,
    },
}

/// Decodes one storage's report. Errors name what is malformed; nothing is half-applied.
pub fn decode(report: &StorageBlockReportProto) -> Result<Vec<Reported>, ReportError> {
    match report.number_of_blocks {
        Some(n) => decode_buffers(&report.blocks_buffers, n),
        None => decode_longs(&report.blocks),
    }
}

fn decode_buffers(buffers: &[Vec<u8>], n: u64) -> Result<Vec<Reported>, ReportError> {
    // The sender splits the stream at any byte, so join the chunks first.
    let joined: Vec<u8> = buffers.concat();
    let mut buf = &joined[..];
    // Every replica takes at least four bytes (four varints): a lying count cannot make us
    // reserve more than the buffers could hold.
    let mut out = Vec::with_capacity(n.min(joined.len() as u64 / 4) as usize);
    let mut next = |what: &'static str| {
        prost::encoding::decode_varint(&mut buf).map_err(|_| ReportError::Truncated(what))
    };
    for _ in 0..n {
        let raw_id = next("block id")?;
        let id = ((raw_id >> 1) as i64 ^ -((raw_id & 1) as i64)) as u64;
        let len = next("block length")? & 0xffff_ffff_ffff;
        let gs = next("generation stamp")?;
        let state = state_of(next("replica state")?);
        out.push(Reported { id, len, gs, state });
    }
    if !buf.is_empty() {
        return Err(ReportError::TrailingBytes {
            extra: buf.len(),
            count: n,
        });
    }
    Ok(out)
}

fn decode_longs(v: &[u64]) -> Result<Vec<Reported>, ReportError> {
    if v.is_empty() {
        return Ok(Vec::new());
    }
    if v.len() < 2 {
        return Err(ReportError::NoHeader);
    }
    let (finalized, uc) = (v[0] as usize, v[1] as usize);
    let need = 2 + finalized * 3 + if uc > 0 { 3 + uc * 4 } else { 0 };
    // The delimiter may be present even with no unfinished replicas.
    if v.len() != need && v.len() != need + 3 {
        return Err(ReportError::WrongLength {
            longs: v.len(),
            finalized,
            other: uc,
        });
    }
    let mut out = Vec::with_capacity(finalized + uc);
    for c in v[2..2 + finalized * 3].chunks_exact(3) {
        out.push(Reported {
            id: c[0],
            len: c[1],
            gs: c[2],
            state: ReplicaState::Finalized,
        });
    }
    let rest = 2 + finalized * 3 + 3;
    if uc > 0 {
        for c in v[rest..rest + uc * 4].chunks_exact(4) {
            out.push(Reported {
                id: c[0],
                len: c[1],
                gs: c[2],
                state: state_of(c[3]),
            });
        }
    }
    Ok(out)
}

/// Encodes replicas in the compact buffer form, as DataNodes send them.
#[cfg(test)]
fn encode_buffers(replicas: &[Reported]) -> (u64, Vec<Vec<u8>>) {
    use ferrite_proto::block_list;
    let mut buf = Vec::with_capacity(replicas.len() * 16);
    for r in replicas {
        let state = match r.state {
            ReplicaState::Finalized => block_list::FINALIZED,
            ReplicaState::Unfinished => block_list::RBW,
            ReplicaState::WaitingRecovery => block_list::RWR,
        };
        block_list::push(&mut buf, r.id, r.len, r.gs, state);
    }
    (replicas.len() as u64, vec![buf])
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrite_proto::hdfs::DatanodeStorageProto;

    fn storage() -> DatanodeStorageProto {
        DatanodeStorageProto {
            storage_uuid: "s".into(),
            state: None,
            storage_type: None,
        }
    }

    #[test]
    fn buffers_round_trip_even_split_mid_varint() {
        let reps = vec![
            Reported {
                id: (1 << 30) + 1,
                len: 1 << 27,
                gs: 1001,
                state: ReplicaState::Finalized,
            },
            Reported {
                id: u64::MAX - 5, // a "negative" id, as striped EC ids are
                len: 7,
                gs: 1002,
                state: ReplicaState::Unfinished,
            },
            Reported {
                id: 12,
                len: 313,
                gs: 1003,
                state: ReplicaState::WaitingRecovery,
            },
        ];
        let (n, bufs) = encode_buffers(&reps);
        let all = bufs.concat();
        let split = vec![all[..3].to_vec(), all[3..].to_vec()];
        let r = StorageBlockReportProto {
            storage: storage(),
            blocks: vec![],
            number_of_blocks: Some(n),
            blocks_buffers: split,
        };
        assert_eq!(decode(&r).unwrap(), reps);
    }

    #[test]
    fn legacy_longs_with_and_without_delimiter() {
        let mut r = StorageBlockReportProto {
            storage: storage(),
            blocks: vec![1, 0, 10, 100, 1001],
            number_of_blocks: None,
            blocks_buffers: vec![],
        };
        assert_eq!(decode(&r).unwrap().len(), 1);
        let m = u64::MAX;
        r.blocks = vec![1, 1, 10, 100, 1001, m, m, m, 11, 5, 1002, 1];
        let d = decode(&r).unwrap();
        assert_eq!(d[1].state, ReplicaState::Unfinished);
        r.blocks = vec![0, 0];
        assert!(decode(&r).unwrap().is_empty());
        r.blocks = vec![5, 0, 1];
        assert!(decode(&r).is_err());
    }

    #[test]
    fn truncated_buffers_are_an_error() {
        let r = StorageBlockReportProto {
            storage: storage(),
            blocks: vec![],
            number_of_blocks: Some(2),
            blocks_buffers: vec![vec![2, 3, 4, 0]],
        };
        assert_eq!(decode(&r).unwrap_err(), ReportError::Truncated("block id"));
    }
}
