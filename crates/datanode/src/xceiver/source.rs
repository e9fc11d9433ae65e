//! A replica's stored bytes, opened for sending (reads, copies, transfers, checksums).
//!
//! A disk replica is read through the read server's cached open files, on its volume's
//! I/O pool, so a connection's task never waits for the disk, and its cached pages can go
//! out with sendfile. A store without files (memory volumes: the simulator's and the state
//! machine tests') is read through its streams in place: nothing there waits.

use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use ferrite_transfer::checksum::Checksum;

use crate::readserver::handles::Handle;
use crate::storage::{files::read_checksum, Dataset, Part, Replica, ReplicaStreams};

#[derive(Clone)]
pub(crate) enum Source {
    Files {
        h: Arc<Handle>,
        volume: usize,
    },
    Streams {
        s: Arc<dyn ReplicaStreams>,
        checksum: Checksum,
    },
}

impl Source {
    pub(crate) async fn open(ds: &Dataset, r: &Replica) -> io::Result<Source> {
        if ds.paths(r).is_some() {
            let h = ds.read_handle(r).await?;
            return Ok(Source::Files {
                h,
                volume: r.volume,
            });
        }
        let s: Arc<dyn ReplicaStreams> = Arc::from(ds.open_streams(r)?);
        let checksum = read_checksum(s.as_ref())?;
        Ok(Source::Streams { s, checksum })
    }

    pub(crate) fn checksum(&self) -> Checksum {
        match self {
            Source::Files { h, .. } => h.checksum,
            Source::Streams { checksum, .. } => *checksum,
        }
    }

    /// The open files, where the replica has them (for zero-copy sends).
    pub(crate) fn files(&self) -> Option<&Arc<Handle>> {
        match self {
            Source::Files { h, .. } => Some(h),
            Source::Streams { .. } => None,
        }
    }

    /// Reads `buf.len()` bytes of `part` at `at`, on the calling thread.
    pub(crate) fn read_exact(&self, part: Part, buf: &mut [u8], at: u64) -> io::Result<()> {
        match (self, part) {
            (Source::Files { h, .. }, Part::Data) => h.data.read_exact_at(buf, at),
            (Source::Files { h, .. }, Part::Meta) => h.meta.read_exact_at(buf, at),
            (Source::Streams { s, .. }, part) => s.read_at(part, at, buf),
        }
    }

    /// Runs `f`'s reads where they belong: a disk replica's on its volume's I/O pool.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        ds: &Dataset,
        f: impl FnOnce(&Source) -> io::Result<T> + Send + 'static,
    ) -> io::Result<T> {
        match self {
            Source::Files { volume, .. } => {
                let me = self.clone();
                ds.reads().pool(*volume).run(move || f(&me)).await?
            }
            Source::Streams { .. } => f(self),
        }
    }
}
