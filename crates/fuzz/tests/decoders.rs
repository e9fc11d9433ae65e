//! Each decoder on a few thousand random and mutated inputs; `ferrite-fuzz` runs more.

fn run(name: &str, cases: u32) {
    let t = ferrite_fuzz::target(name).expect("a target");
    if let Err(e) = ferrite_fuzz::run(t, cases) {
        panic!("{name}: {e}");
    }
}

#[test]
fn ipc_connection() {
    run("ipc-connection", 4000);
}

#[test]
fn ipc_dispatch() {
    run("ipc-dispatch", 2000);
}

#[test]
fn transfer_op() {
    run("transfer-op", 4000);
}

#[test]
fn transfer_packet() {
    run("transfer-packet", 4000);
}

#[test]
fn block_meta_header() {
    run("block-meta-header", 2000);
}

#[test]
fn journal_frame() {
    run("journal-frame", 4000);
}

#[test]
fn journal_record() {
    run("journal-record", 4000);
}

#[test]
fn image() {
    run("image", 4000);
}

#[test]
fn block_report() {
    run("block-report", 4000);
}

#[test]
fn summary_checkpoint() {
    run("summary-checkpoint", 4000);
}

/// Every target is tested above.
#[test]
fn every_target_has_a_test() {
    let here = include_str!("decoders.rs");
    for t in ferrite_fuzz::TARGETS {
        assert!(here.contains(&format!("run(\"{}\"", t.name)), "{}", t.name);
    }
}
