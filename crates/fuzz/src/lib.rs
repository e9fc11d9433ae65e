//! Every decoder of bytes from outside the process, under random and mutated input.
//!
//! A [`Target`] names one decoder with a few valid inputs (its seeds) and a check that
//! feeds it bytes. The property, for every input: no panic, no hang, no allocation beyond
//! [`ALLOC_LIMIT`] (a length field must never size a buffer before it is checked), and an
//! error that says what is wrong rather than a silent success on garbage where that can be
//! told. Inputs come from [`inputs`]: random bytes, and seeds with random mutations (bit
//! flips, overwritten bytes, cuts, inserted runs, huge varints) so that inputs get past the
//! first length check and into the structure behind it.
//!
//! `cargo test -p ferrite-fuzz` runs each target for a few thousand inputs;
//! `ferrite-fuzz TARGET -n N` runs any of them for as many as wanted (see the README).

pub mod alloc;
mod targets;

use proptest::prelude::*;

pub use targets::TARGETS;

/// The most one input may have allocated at once, beyond what was live before it. Inputs
/// are at most a few KiB, and every limit the decoders are configured with here (frame,
/// packet, message sizes) is far below this.
pub const ALLOC_LIMIT: usize = 64 << 20;

/// Longest random input.
const MAX_RANDOM: usize = 4096;

/// One decoder under test.
pub struct Target {
    pub name: &'static str,
    pub what: &'static str,
    /// Valid inputs: mutations of these reach past the first checks.
    pub seeds: fn() -> Vec<Vec<u8>>,
    /// Feeds the decoder one input. `Err` is a broken property (a decode that succeeded
    /// yet does not round-trip, an error with no message); decode errors are `Ok`.
    pub check: fn(&[u8]) -> Result<(), String>,
}

pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

/// How one input is changed.
#[derive(Clone, Debug)]
enum Mutation {
    Flip {
        at: usize,
        bit: u8,
    },
    Set {
        at: usize,
        byte: u8,
    },
    Cut {
        at: usize,
    },
    Insert {
        at: usize,
        bytes: Vec<u8>,
    },
    /// A maximal varint (a length or count field claiming everything).
    BigVarint {
        at: usize,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(at, bit)| Mutation::Flip { at, bit }),
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Set { at, byte }),
        any::<usize>().prop_map(|at| Mutation::Cut { at }),
        (
            any::<usize>(),
            proptest::collection::vec(any::<u8>(), 1..16)
        )
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        any::<usize>().prop_map(|at| Mutation::BigVarint { at }),
    ]
}

fn mutate(mut b: Vec<u8>, ms: &[Mutation]) -> Vec<u8> {
    for m in ms {
        let pos = |at: usize, len: usize| if len == 0 { 0 } else { at % len };
        match m {
            Mutation::Flip { at, bit } if !b.is_empty() => {
                let i = pos(*at, b.len());
                b[i] ^= 1 << bit;
            }
            Mutation::Set { at, byte } if !b.is_empty() => {
                let i = pos(*at, b.len());
                b[i] = *byte;
            }
            Mutation::Cut { at } => b.truncate(pos(*at, b.len() + 1)),
            Mutation::Insert { at, bytes } => {
                let i = pos(*at, b.len() + 1);
                b.splice(i..i, bytes.iter().copied());
            }
            Mutation::BigVarint { at } => {
                let i = pos(*at, b.len() + 1);
                let big = [0xff, 0xff, 0xff, 0xff, 0x0f];
                b.splice(i..i, big);
            }
            _ => {}
        }
    }
    b
}

/// Inputs for `t`: a quarter random bytes, the rest its seeds mutated.
pub fn inputs(t: &Target) -> BoxedStrategy<Vec<u8>> {
    let seeds = (t.seeds)();
    let random = proptest::collection::vec(any::<u8>(), 0..MAX_RANDOM);
    if seeds.is_empty() {
        return random.boxed();
    }
    let mutated = (
        proptest::sample::select(seeds),
        proptest::collection::vec(mutation(), 0..6),
    )
        .prop_map(|(seed, ms)| mutate(seed, &ms));
    prop_oneof![1 => random, 3 => mutated].boxed()
}

/// Runs `t` on one input and checks the property, allocation included.
pub fn check_one(t: &Target, input: &[u8]) -> Result<(), String> {
    let watch = alloc::Watch::start();
    let r = (t.check)(input);
    let peak = watch.peak();
    r?;
    if peak > ALLOC_LIMIT {
        return Err(format!(
            "{} allocated {peak} bytes at once for an input of {} bytes",
            t.name,
            input.len()
        ));
    }
    Ok(())
}

/// Runs `t` on `cases` inputs; the first failure comes back shrunk to a small input.
pub fn run(t: &Target, cases: u32) -> Result<(), String> {
    let config = proptest::test_runner::Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 4096,
        ..Default::default()
    };
    let mut runner = proptest::test_runner::TestRunner::new(config);
    runner
        .run(&inputs(t), |input| {
            check_one(t, &input).map_err(TestCaseError::fail)
        })
        .map_err(|e| e.to_string())
}
