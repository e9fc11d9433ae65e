//! The image writer's forked child while another thread of the NameNode is reporting a
//! panic: the child must not wait for locks that thread held at the fork. Alone in its own
//! test binary, because it installs a panic hook for the whole process.

use std::sync::mpsc;
use std::time::Duration;

use ferrite_namenode::forked_writer;

#[test]
fn a_panic_being_reported_elsewhere_does_not_hold_up_the_child() {
    // As a NameNode does at its first checkpoint (this installs the writer's own hook).
    forked_writer::spawn(|| Ok(())).unwrap().wait().unwrap();

    // A thread panics, and its hook, which runs under the process's hook lock, waits until
    // the fork is done.
    let (held_tx, held_rx) = mpsc::channel::<()>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let go_rx = std::sync::Mutex::new(go_rx);
    let held_tx = std::sync::Mutex::new(held_tx);
    std::panic::set_hook(Box::new(move |_| {
        let _ = held_tx.lock().unwrap().send(());
        let _ = go_rx.lock().unwrap().recv_timeout(Duration::from_secs(60));
    }));
    let panicker = std::thread::spawn(|| panic!("reported while the image writer forks"));
    held_rx.recv().unwrap();

    // The fork happens while the hook lock is held; the child must still finish. A hang
    // is reported as a failure after a minute rather than holding up the test run.
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let outcome = forked_writer::spawn(|| Ok(())).and_then(|w| w.wait());
        let _ = done_tx.send(outcome.map_err(|e| e.to_string()));
    });
    let outcome = done_rx.recv_timeout(Duration::from_secs(60));
    go_tx.send(()).unwrap();
    assert!(panicker.join().is_err());
    assert_eq!(
        outcome,
        Ok(Ok(())),
        "the forked writer finished while another thread was panicking"
    );
}
