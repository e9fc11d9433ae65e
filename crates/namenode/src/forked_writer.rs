//! Writing a checkpoint image from a forked copy of the process, so that the namespace lock
//! is held for the fork (milliseconds) rather than for the whole image (hundreds of
//! milliseconds at two million files, growing with the namespace).
//!
//! The writers' lock matters more than it looks: once a mutation waits for the write lock,
//! every later lookup queues behind it too, so a checkpoint under the read lock stalled the
//! whole NameNode, reads included. HDFS avoids the stall by having another process (the
//! secondary or standby NameNode) build images from the edit log, at the cost of a second
//! copy of the namespace. A fork gives the child a copy-on-write snapshot of memory as of
//! the moment the lock was held: pages are copied only where the NameNode writes while the
//! child runs, and the child is gone when the image is written. Redis saves its snapshots
//! the same way.
//!
//! What the child may do is narrow, because only the forking thread exists in it and
//! another thread may have held any lock at the moment of the fork. The image writer reads
//! the namespace (plain memory; the read guard is this thread's own), computes CRCs, grows
//! buffers through glibc's malloc (which resets its locks in a forked child) and calls
//! write(2). It logs nothing and leaves through `_exit`, so no destructor, buffered stream
//! or exit handler of the parent's runs twice.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

/// A forked child writing an image; [`ForkedWriter::wait`] reaps it.
#[derive(Debug)]
pub struct ForkedWriter {
    pid: libc::pid_t,
}

/// The child's exit status when `write` failed without an OS error code.
const OTHER_FAILURE: i32 = 255;

/// Forks; the child runs `write` and exits with its outcome (0, the OS error code, or
/// 255), the parent returns at once. Fails only if the fork does (no memory for the page
/// tables, or the process limit), in which case nothing ran.
pub fn spawn(write: impl FnOnce() -> io::Result<()>) -> io::Result<ForkedWriter> {
    quiet_in_child();
    // SAFETY: getpid and fork have no preconditions. In the child only this thread exists;
    // `in_child` keeps to what the module docs allow a forked child of a threaded process
    // and never returns.
    let parent = unsafe { libc::getpid() };
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => in_child(parent, write),
        pid => Ok(ForkedWriter { pid }),
    }
}

fn in_child(parent: libc::pid_t, write: impl FnOnce() -> io::Result<()>) -> ! {
    // SAFETY: prctl, getppid and _exit are async-signal-safe system calls.
    unsafe {
        // Die with the NameNode: an orphaned writer would hold its listening socket and
        // keep a restarted NameNode from binding the port. (The signal follows the thread
        // that forked, which stays in `wait` until the child is gone.)
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != parent {
            libc::_exit(libc::ESRCH);
        }
    }
    // A panic must not unwind into the parent's frames, which this copy shares, nor run
    // the default hook, which locks stderr and the backtrace printer: another thread may
    // have held either at the fork, and a child stuck there would hold up the parent's
    // wait for good. The hook installed by `quiet_in_child` reads this flag (plain memory)
    // and stays silent. The child must not set a hook itself: `set_hook` takes the hook
    // lock for writing, and a thread of the parent that was panicking at the fork held it
    // for reading, for good in the child (a test run hung that way).
    IN_CHILD.store(true, Ordering::Relaxed);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(write));
    let code = match outcome {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => e
            .raw_os_error()
            .filter(|c| (1..OTHER_FAILURE).contains(c))
            .unwrap_or(OTHER_FAILURE),
        Err(_) => OTHER_FAILURE,
    };
    // SAFETY: as above; `_exit` skips destructors and exit handlers on purpose.
    unsafe { libc::_exit(code) }
}

/// True only in a forked child: see `in_child`.
static IN_CHILD: AtomicBool = AtomicBool::new(false);

/// Installs, once and in the parent, a panic hook that hands every panic to the hook that
/// was there before, except in a forked child, where it does nothing. Taking the hook lock
/// here, in the parent, can only wait for a panic being reported in another thread.
fn quiet_in_child() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_CHILD.load(Ordering::Relaxed) {
                previous(info)
            }
        }));
    });
}

impl ForkedWriter {
    /// Waits for the child; its failure comes back as the error it hit (an OS error keeps
    /// its code, so a full disk still reads as one).
    pub fn wait(self) -> io::Result<()> {
        let mut status = 0;
        loop {
            // SAFETY: waits for our own child; `status` is a valid out-pointer.
            if unsafe { libc::waitpid(self.pid, &mut status, 0) } == self.pid {
                break;
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        if libc::WIFEXITED(status) {
            return match libc::WEXITSTATUS(status) {
                0 => Ok(()),
                OTHER_FAILURE => Err(io::Error::other("the image writer process failed")),
                code => Err(io::Error::from_raw_os_error(code)),
            };
        }
        Err(io::Error::other(format!(
            "the image writer process was killed by signal {}",
            libc::WTERMSIG(status)
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, SeekFrom, Write};

    #[test]
    fn the_child_writes_through_the_shared_file_and_reports_success() {
        let mut f = tempfile::tempfile().unwrap();
        let child = spawn(|| f.write_all(b"image bytes")).unwrap();
        child.wait().unwrap();
        // The child's writes moved the offset both processes share.
        assert_eq!(f.stream_position().unwrap(), 11);
        let mut back = String::new();
        f.seek(SeekFrom::Start(0)).unwrap();
        f.read_to_string(&mut back).unwrap();
        assert_eq!(back, "image bytes");
    }

    #[test]
    fn failures_come_back_with_their_os_error() {
        let child = spawn(|| Err(io::Error::from_raw_os_error(libc::ENOSPC))).unwrap();
        let e = child.wait().unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
        let child = spawn(|| Err(io::Error::other("bad"))).unwrap();
        assert!(child.wait().unwrap_err().raw_os_error().is_none());
    }

    #[test]
    fn a_panicking_writer_fails_without_touching_the_parent() {
        let child = spawn(|| panic!("in the child")).unwrap();
        let e = child.wait().unwrap_err();
        assert_eq!(e.to_string(), "the image writer process failed");
    }

    #[test]
    fn a_killed_child_is_reported() {
        let child = spawn(|| {
            // SAFETY: raise is async-signal-safe.
            unsafe { libc::raise(libc::SIGKILL) };
            Ok(())
        })
        .unwrap();
        let e = child.wait().unwrap_err();
        assert!(e.to_string().contains("signal 9"), "{e}");
    }
}
