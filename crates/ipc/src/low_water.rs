//! A connection socket's receive low-water mark (`SO_RCVLOWAT`), raised while the
//! connection's replies wait for a journal sync.
//!
//! Hadoop's Java client sends every thread's calls down one connection, one small write per
//! call, and the kernel wakes the reader for each of them. Under NNThroughputBenchmark's
//! creates that was a wake-up, an `epoll_wait` and a `recvfrom` for every three calls
//! (cutting two thirds of those cycles saved 5–12% of the CPU per mutation). Yet while the
//! connection holds many replies for a sync, the mutations that arrive meanwhile cannot be
//! answered before a sync either. With the mark raised, Linux does not report the socket readable
//! (and does not wake the reader) until that many bytes have arrived; lowering it when the
//! writer releases replies makes the kernel report whatever is already there at once
//! (`tcp_set_rcvlowat` re-checks readiness, since Linux 4.18; the test below checks it on
//! the kernel it runs on). A call that arrives meanwhile is read when the connection's held
//! replies next go out: usually at the end of the sync in flight, at worst after the next
//! sync's gather delay and the sync itself. A connection whose replies are all out always
//! has the mark down.

use std::os::fd::RawFd;

use parking_lot::Mutex;

/// The replies a connection must hold before its reader lets requests gather. Below this
/// the peer is one or a few callers, and another's next call, perhaps a lookup, should not
/// wait for their sync. NNThroughputBenchmark creates, NameNode CPU per create against no
/// gathering (two alternating runs each): 1 held −8%, 2 −5%, 4 −3%, 8 −2%; the
/// differences between them are within the noise.
pub(crate) const MIN_HELD: usize = 4;

pub(crate) struct LowWater {
    fd: RawFd,
    bytes: libc::c_int,
    /// Whether the mark is up. The lock spans the `setsockopt`, so that a raise and a
    /// lower from the reader and the writer cannot land in the wrong order.
    raised: Mutex<bool>,
}

impl LowWater {
    /// For the socket `fd`, raising the mark to `bytes`. Only the connection's reader and
    /// writer call [`raise_if`](Self::raise_if) and [`lower`](Self::lower), and each holds a
    /// half of the socket, so `fd` is open whenever they do (calls that finish later only
    /// push replies).
    pub(crate) fn new(fd: RawFd, bytes: u32) -> Self {
        LowWater {
            fd,
            bytes: libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX),
            raised: Mutex::new(false),
        }
    }

    /// Raises the mark if `wanted()` says so and it is down. `wanted` runs under the lock,
    /// so a lower that follows the decision also follows the raise.
    pub(crate) fn raise_if(&self, wanted: impl FnOnce() -> bool) {
        let mut raised = self.raised.lock();
        if !*raised && wanted() {
            self.set(&mut raised, true);
        }
    }

    pub(crate) fn lower(&self) {
        self.set(&mut self.raised.lock(), false);
    }

    fn set(&self, raised: &mut bool, up: bool) {
        if *raised == up {
            return;
        }
        let v: libc::c_int = if up { self.bytes } else { 1 };
        // SAFETY: setsockopt reads `size_of::<c_int>()` bytes from `&v`, which lives across
        // the call; the descriptor is open (see `new`).
        let rc = unsafe {
            libc::setsockopt(
                self.fd,
                libc::SOL_SOCKET,
                libc::SO_RCVLOWAT,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        // A mark that could not be raised leaves the socket as it was; one that could not be
        // lowered is only possible on a socket already being torn down.
        if rc == 0 {
            *raised = up;
        } else {
            tracing::debug!(error = %std::io::Error::last_os_error(), "SO_RCVLOWAT");
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    /// Bytes queued on `fd`, not yet read.
    fn queued(fd: RawFd) -> libc::c_int {
        let mut n: libc::c_int = 0;
        // SAFETY: FIONREAD writes one c_int to `n`.
        assert_eq!(unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) }, 0);
        n
    }

    /// What the design rests on, checked on this kernel: with the mark up, bytes below it
    /// do not wake a reader; lowering the mark wakes it for the bytes already there.
    #[tokio::test]
    async fn a_raised_mark_holds_small_writes_back_and_lowering_it_wakes_the_reader() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let fd = server.as_raw_fd();
        let mark = std::sync::Arc::new(LowWater::new(fd, 4096));
        mark.raise_if(|| true);

        let (mut rd, _wr) = server.into_split();
        let reader = tokio::spawn(async move {
            let mut buf = [0u8; 64];
            rd.read(&mut buf).await.unwrap()
        });
        // The reader waits on the socket first, as the connection's reader does when it
        // raises the mark (a reader's very first poll may try a read regardless).
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
        assert!(!reader.is_finished(), "nothing was sent yet");
        client.write_all(b"a small call").await.unwrap();
        // The bytes are in the server's queue...
        while queued(fd) < 12 {
            tokio::task::yield_now().await;
        }
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
        // ...and no readiness was reported for them.
        assert!(
            !reader.is_finished(),
            "bytes below the mark woke the reader"
        );

        mark.lower();
        let n = tokio::time::timeout(Duration::from_secs(30), reader)
            .await
            .expect("lowering the mark must wake the reader")
            .unwrap();
        assert_eq!(n, 12);
    }
}
