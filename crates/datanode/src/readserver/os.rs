//! The Linux calls the read server needs, wrapped: whether a file range is in the page cache
//! (`mincore` on a read-only mapping), a read that refuses to wait for the disk
//! (`preadv2(RWF_NOWAIT)`), and socket writes and `sendfile` driven by tokio's readiness, so
//! a full socket parks the task instead of a thread.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

use smallvec::SmallVec;
use tokio::io::Interest;
use tokio::net::TcpStream;

fn page() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// A read-only mapping of a file, used only to ask the kernel which pages are resident;
/// its memory is never read.
pub struct Residency {
    addr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is only passed to mincore, which reads no memory through it; the
// pointer is never dereferenced, so sharing it between threads is sound.
unsafe impl Send for Residency {}
unsafe impl Sync for Residency {}

impl Residency {
    /// Maps the first `len` bytes of `f` (None for an empty file or when mapping fails;
    /// the caller then treats every range as not resident).
    pub fn map(f: &File, len: u64) -> Option<Residency> {
        if len == 0 {
            return None;
        }
        let len = usize::try_from(len).ok()?;
        // SAFETY: a fresh shared read-only mapping of an open file; checked below.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            )
        };
        (addr != libc::MAP_FAILED).then_some(Residency { addr, len })
    }

    /// Whether every page of `[offset, offset + len)` is in the page cache.
    pub fn resident(&self, offset: u64, len: u64) -> bool {
        if len == 0 {
            return true;
        }
        let page = page();
        let start = (offset as usize) & !(page - 1);
        let end = match usize::try_from(offset + len) {
            Ok(e) if e <= self.len => e,
            _ => return false,
        };
        let pages = (end - start).div_ceil(page);
        let mut vec: SmallVec<[u8; 64]> = SmallVec::from_elem(0, pages);
        // SAFETY: [start, end) lies inside the mapping; vec has one byte per page.
        let r = unsafe {
            libc::mincore(
                (self.addr as *mut u8).add(start) as *mut libc::c_void,
                end - start,
                vec.as_mut_ptr(),
            )
        };
        r == 0 && vec.iter().all(|b| b & 1 == 1)
    }
}

impl Drop for Residency {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what `map` mapped.
        unsafe {
            libc::munmap(self.addr, self.len);
        }
    }
}

/// Reads `buf.len()` bytes at `offset` only if the page cache has them all: `Ok(false)`
/// instead of waiting for the disk.
pub fn read_cached(f: &File, buf: &mut [u8], offset: u64) -> io::Result<bool> {
    let mut done = 0;
    while done < buf.len() {
        let iov = libc::iovec {
            iov_base: buf[done..].as_mut_ptr() as *mut libc::c_void,
            iov_len: buf.len() - done,
        };
        // SAFETY: one iovec over the unfilled part of `buf`.
        let n = unsafe {
            libc::preadv2(
                f.as_raw_fd(),
                &iov,
                1,
                (offset + done as u64) as libc::off_t,
                libc::RWF_NOWAIT,
            )
        };
        match n {
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            n if n > 0 => done += n as usize,
            _ => {
                let e = io::Error::last_os_error();
                return match e.raw_os_error() {
                    // Not cached, or a kernel/file system without RWF_NOWAIT: use the pool.
                    Some(libc::EAGAIN) | Some(libc::EOPNOTSUPP) | Some(libc::EINVAL) => Ok(false),
                    Some(libc::EINTR) => continue,
                    _ => Err(e),
                };
            }
        }
    }
    Ok(true)
}

/// Waits until the socket takes more bytes; a peer that takes none for `stall` is an
/// error (a slow reader is fine as long as it keeps reading).
async fn writable(sock: &TcpStream, stall: Duration) -> io::Result<()> {
    tokio::time::timeout(stall, sock.writable())
        .await
        .map_err(|_| {
            io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the reader took nothing for {stall:?}"),
            )
        })?
}

/// Writes all of `buf` to the socket; `more` tells the kernel more of this packet follows
/// (MSG_MORE), so the header and the data sent after it leave in full segments.
pub async fn send_all(
    sock: &TcpStream,
    mut buf: &[u8],
    more: bool,
    stall: Duration,
) -> io::Result<()> {
    let flags = libc::MSG_NOSIGNAL | if more { libc::MSG_MORE } else { 0 };
    while !buf.is_empty() {
        writable(sock, stall).await?;
        let r = sock.try_io(Interest::WRITABLE, || {
            // SAFETY: a valid socket and a live buffer.
            let n = unsafe {
                libc::send(
                    sock.as_raw_fd(),
                    buf.as_ptr() as *const libc::c_void,
                    buf.len(),
                    flags,
                )
            };
            if n < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(n as usize)
            }
        });
        match r {
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Sends `count` bytes of `file` from `offset` with sendfile: the data goes from the page
/// cache to the socket without passing through this process.
pub async fn send_file(
    sock: &TcpStream,
    file: &File,
    offset: u64,
    count: u64,
    stall: Duration,
) -> io::Result<()> {
    let mut off = offset as libc::off_t;
    let end = (offset + count) as libc::off_t;
    while off < end {
        writable(sock, stall).await?;
        let r = sock.try_io(Interest::WRITABLE, || {
            // SAFETY: valid descriptors; the kernel advances `off`.
            let n = unsafe {
                libc::sendfile(
                    sock.as_raw_fd(),
                    file.as_raw_fd(),
                    &mut off,
                    (end - off) as usize,
                )
            };
            if n < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(n as usize)
            }
        });
        match r {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_freshly_written_file_is_resident_and_readable_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let mut f = File::create(&p).unwrap();
        f.write_all(&vec![7u8; 100_000]).unwrap();
        let f = File::open(&p).unwrap();
        let r = Residency::map(&f, 100_000).unwrap();
        assert!(r.resident(0, 100_000));
        assert!(r.resident(5_000, 10));
        assert!(!r.resident(99_000, 2_000), "past the mapping");
        let mut buf = vec![0u8; 1000];
        assert!(read_cached(&f, &mut buf, 50_000).unwrap());
        assert!(buf.iter().all(|&b| b == 7));
        assert!(Residency::map(&f, 0).is_none());
    }

    #[tokio::test]
    async fn send_all_and_send_file_deliver_in_order() {
        use tokio::io::AsyncReadExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let body: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&p, &body).unwrap();
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let reader = tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).await.unwrap();
            got
        });
        let sock = TcpStream::connect(addr).await.unwrap();
        let f = File::open(&p).unwrap();
        let t = Duration::from_secs(30);
        send_all(&sock, b"head", true, t).await.unwrap();
        send_file(&sock, &f, 1000, 250_000, t).await.unwrap();
        send_all(&sock, b"tail", false, t).await.unwrap();
        drop(sock);
        let got = reader.await.unwrap();
        assert_eq!(&got[..4], b"head");
        assert_eq!(&got[4..250_004], &body[1000..251_000]);
        assert_eq!(&got[250_004..], b"tail");
    }
}
