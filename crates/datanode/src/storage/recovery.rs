//! A replica's side of block recovery (see `crate::recovery` for the primary's side).
//!
//! `init` stops the replica's writer and says what the replica holds; `update` cuts it to
//! the length the primary chose and finalizes it under the recovery's generation stamp.
//! Both are idempotent for the same recovery id, so a primary that retries, or a second
//! attempt that reaches a replica the first already finalized, changes nothing.

use std::fs::{self, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use ferrite_transfer::checksum::{parse_meta_header, Checksum, META_HEADER_LEN};

use super::{Dataset, Replica, State, StorageError};

/// What a replica holds, as block recovery sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplicaInfo {
    pub state: State,
    pub gs: u64,
    pub len: u64,
}

impl Dataset {
    /// Takes replica `id` into the recovery `recovery_id` of the block the NameNode records
    /// at stamp `block_gs`. Its writer is stopped first (a write in progress ends), and an
    /// unfinished replica's length is what its files hold with checksums, so bytes that
    /// reached the disk without their checksum are not counted. None when this node has no
    /// replica of the block.
    pub fn init_recovery(
        &self,
        id: u64,
        block_gs: u64,
        recovery_id: u64,
    ) -> Result<Option<ReplicaInfo>, StorageError> {
        let Some(r) = self.get(id) else {
            return Ok(None);
        };
        let fail = |why: String| StorageError::Recovery { id, why };
        if r.state == State::Finalized && r.gs == recovery_id {
            // An earlier attempt of this recovery already finalized it here.
            return Ok(Some(info(&r)));
        }
        if r.gs < block_gs {
            return Err(fail(format!(
                "replica stamp {} is older than the block's {block_gs}",
                r.gs
            )));
        }
        if r.gs >= recovery_id {
            return Err(fail(format!(
                "replica stamp {} is not older than recovery id {recovery_id}",
                r.gs
            )));
        }
        if r.recovery_id > recovery_id {
            return Err(fail(format!(
                "a newer recovery ({}) has the replica",
                r.recovery_id
            )));
        }
        self.revoke_writer(id);
        self.forget_handles(id);
        let mut r = self.get(id).ok_or(StorageError::NotFound(id))?;
        if r.state == State::Rbw {
            let (data, meta) = self.paths(&r);
            r.len = stored_len(&data, &meta).map_err(|source| StorageError::Io {
                volume: r.volume,
                source,
            })?;
        }
        r.recovery_id = recovery_id;
        self.replicas.lock().insert(id, r.clone());
        Ok(Some(info(&r)))
    }

    /// Ends recovery `recovery_id` of replica `id` here: cut to `new_len` bytes (the last
    /// partial chunk's checksum computed afresh), finalized under stamp `recovery_id`.
    /// Returns the replica as it now is.
    pub fn update_recovered(
        &self,
        id: u64,
        recovery_id: u64,
        new_len: u64,
    ) -> Result<Replica, StorageError> {
        let r = self.get(id).ok_or(StorageError::NotFound(id))?;
        let fail = |why: String| StorageError::Recovery { id, why };
        if r.state == State::Finalized && r.gs == recovery_id && r.len == new_len {
            return Ok(r);
        }
        if r.recovery_id != recovery_id {
            return Err(fail(format!(
                "the replica is under recovery {}, not {recovery_id}",
                r.recovery_id
            )));
        }
        if new_len > r.len {
            return Err(fail(format!(
                "new length {new_len} is beyond the {} bytes the replica holds",
                r.len
            )));
        }
        let vi = r.volume;
        let io_err = |source| StorageError::Io { volume: vi, source };
        let v = &self.volumes[vi];
        let (data, meta) = self.paths(&r);
        cut(&data, &meta, new_len).map_err(io_err)?;
        let (new_data, new_meta) = v.finalized_paths(id, recovery_id);
        fs::create_dir_all(v.finalized_dir(id)).map_err(io_err)?;
        // Meta first, as `finalize` does: a crash between leaves data without meta in rbw,
        // which the scan ignores.
        fs::rename(&meta, &new_meta).map_err(io_err)?;
        fs::rename(&data, &new_data).map_err(io_err)?;
        let done = Replica {
            gs: recovery_id,
            len: new_len,
            state: State::Finalized,
            recovery_id: 0,
            ..r
        };
        self.replicas.lock().insert(id, done.clone());
        self.forget_handles(id);
        Ok(done)
    }
}

fn info(r: &Replica) -> ReplicaInfo {
    ReplicaInfo {
        state: r.state,
        gs: r.gs,
        len: r.len,
    }
}

/// The bytes of an unfinished replica that have their checksums: the data file's length,
/// capped at what the meta file's checksums cover.
fn stored_len(data: &Path, meta: &Path) -> io::Result<u64> {
    let data_len = fs::metadata(data)?.len();
    let c = read_checksum(meta)?;
    let sums = fs::metadata(meta)?
        .len()
        .saturating_sub(META_HEADER_LEN as u64)
        / c.kind.size().max(1) as u64;
    Ok(data_len.min(sums * c.bytes_per_checksum as u64))
}

fn read_checksum(meta: &Path) -> io::Result<Checksum> {
    let f = fs::File::open(meta)?;
    let mut head = [0u8; META_HEADER_LEN];
    f.read_exact_at(&mut head, 0)?;
    parse_meta_header(&head).map_err(io::Error::other)
}

/// Cuts a replica's files to `len` bytes of data. A cut inside a chunk leaves a partial
/// last chunk whose stored checksum covered more bytes: it is computed again from the data
/// that remains, so readers verify what is there.
pub fn cut(data: &Path, meta: &Path, len: u64) -> io::Result<()> {
    let c = read_checksum(meta)?;
    let d = OpenOptions::new().read(true).write(true).open(data)?;
    let m = OpenOptions::new().write(true).open(meta)?;
    d.set_len(len)?;
    let bpc = c.bytes_per_checksum as u64;
    let chunks = len.div_ceil(bpc);
    let size = c.kind.size() as u64;
    m.set_len(META_HEADER_LEN as u64 + chunks * size)?;
    let tail = len % bpc;
    if tail != 0 {
        let start = len - tail;
        let mut buf = vec![0u8; tail as usize];
        d.read_exact_at(&mut buf, start)?;
        let mut sum = Vec::with_capacity(size as usize);
        c.compute_into(&buf, &mut sum);
        m.write_all_at(&sum, META_HEADER_LEN as u64 + (chunks - 1) * size)?;
    }
    d.sync_data()?;
    m.sync_data()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrite_transfer::checksum::Checksum;

    const BLOCK: u64 = 1 << 20;

    #[test]
    fn recovery_stops_the_writer_cuts_inside_a_chunk_and_finalizes_under_the_new_stamp() {
        let d = tempfile::tempdir().unwrap();
        let (ds, _) = Dataset::open(&[d.path().join("v")], "BP-1", "C").unwrap();
        let c = Checksum::CRC32C_512;
        let data: Vec<u8> = (0..1300u32).map(|i| (i * 7) as u8).collect();
        let mut sums = Vec::new();
        c.compute_into(&data, &mut sums);
        let f = ds.create_rbw(9, 1001, &c, BLOCK).unwrap();
        f.write_at(0, &data, &sums, &c).unwrap();
        ds.set_len(9, 1300);
        assert_eq!(ds.init_recovery(77, 1001, 1005).unwrap(), None);
        assert!(
            ds.init_recovery(9, 1002, 1005).is_err(),
            "the replica is older than the block"
        );
        let got = ds.init_recovery(9, 1001, 1005).unwrap().unwrap();
        assert_eq!((got.state, got.len, got.gs), (State::Rbw, 1300, 1001));
        // The writer is stopped: nothing it sends lands any more.
        assert!(f.write_at(1024, &data[1024..], &sums[8..], &c).is_err());
        assert!(ds.finalize(f, 1300).is_err());
        assert!(
            ds.init_recovery(9, 1001, 1004).is_err(),
            "an older recovery cannot take it back"
        );
        assert!(
            ds.update_recovered(9, 1006, 700).is_err(),
            "another recovery"
        );
        assert!(
            ds.update_recovered(9, 1005, 1301).is_err(),
            "past its bytes"
        );
        let r = ds.update_recovered(9, 1005, 700).unwrap();
        assert_eq!((r.state, r.gs, r.len), (State::Finalized, 1005, 700));
        // Again: nothing changes.
        assert_eq!(ds.update_recovered(9, 1005, 700).unwrap(), r);
        assert_eq!(
            ds.init_recovery(9, 1001, 1005).unwrap().unwrap().state,
            State::Finalized
        );
        let (dp, mp) = ds.paths(&r);
        assert_eq!(fs::read(&dp).unwrap(), &data[..700]);
        let meta = fs::read(&mp).unwrap();
        let mut want = Vec::new();
        c.compute_into(&data[..700], &mut want);
        assert_eq!(
            &meta[META_HEADER_LEN..],
            &want[..],
            "the partial chunk's sum is new"
        );
        // Found again after a restart, finalized under the new stamp.
        drop(ds);
        let (ds, _) = Dataset::open(&[d.path().join("v")], "BP-1", "C").unwrap();
        let again = ds.get(9).unwrap();
        assert_eq!(
            (again.gs, again.len, again.state),
            (1005, 700, State::Finalized)
        );
    }

    #[test]
    fn bytes_without_their_checksums_do_not_count() {
        let d = tempfile::tempdir().unwrap();
        let (ds, _) = Dataset::open(&[d.path().join("v")], "BP-1", "C").unwrap();
        let c = Checksum::CRC32C_512;
        let data = vec![1u8; 1024];
        let mut sums = Vec::new();
        c.compute_into(&data, &mut sums);
        let f = ds.create_rbw(3, 1001, &c, BLOCK).unwrap();
        f.write_at(0, &data, &sums[..4], &c).unwrap();
        ds.set_len(3, 1024);
        let got = ds.init_recovery(3, 1001, 1002).unwrap().unwrap();
        assert_eq!(got.len, 512);
    }
}
