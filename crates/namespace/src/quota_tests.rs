//! Quota usage against a recount: random sequences of creates (with blocks), appends,
//! renames across quota roots, deletes, setReplication, storage policies and quota
//! changes; after every step each quota's usage equals a walk of its subtree, and again
//! after an image round trip and after replaying the records on an empty namespace.

use proptest::prelude::*;

use super::blocks::{NewBlock, Previous};
use super::plan::CreateArgs;
use super::quota::{Usage, NONE, N_TYPES};
use super::{Caller, Namespace, Op, Planned};
use crate::error::FsError;

const DIRS: [&str; 5] = ["/a", "/a/b", "/a/b/c", "/d", "/d/e"];
const BS: u64 = 1024;

#[derive(Clone, Debug)]
enum Step {
    Create {
        dir: usize,
        name: u8,
        len: u64,
        repl: u16,
        close: bool,
    },
    Append {
        dir: usize,
        name: u8,
        more: u64,
    },
    Rename {
        from: usize,
        name: u8,
        to: usize,
    },
    RenameDir {
        from: usize,
        to: usize,
    },
    Delete {
        dir: usize,
        name: u8,
    },
    SetReplication {
        dir: usize,
        name: u8,
        repl: u16,
    },
    Policy {
        dir: usize,
        cold: bool,
    },
    Quota {
        dir: usize,
        ns: i64,
        space: i64,
        disk: i64,
    },
}

fn step() -> impl Strategy<Value = Step> {
    let dir = 0..DIRS.len();
    let name = 0u8..4;
    prop_oneof![
        (
            dir.clone(),
            name.clone(),
            0u64..3000,
            1u16..4,
            any::<bool>()
        )
            .prop_map(|(dir, name, len, repl, close)| Step::Create {
                dir,
                name,
                len,
                repl,
                close
            }),
        (dir.clone(), name.clone(), 1u64..2000).prop_map(|(dir, name, more)| Step::Append {
            dir,
            name,
            more
        }),
        (dir.clone(), name.clone(), dir.clone()).prop_map(|(from, name, to)| Step::Rename {
            from,
            name,
            to
        }),
        (dir.clone(), dir.clone()).prop_map(|(from, to)| Step::RenameDir { from, to }),
        (dir.clone(), name.clone()).prop_map(|(dir, name)| Step::Delete { dir, name }),
        (dir.clone(), name.clone(), 1u16..4).prop_map(|(dir, name, repl)| Step::SetReplication {
            dir,
            name,
            repl
        }),
        (dir.clone(), any::<bool>()).prop_map(|(dir, cold)| Step::Policy { dir, cold }),
        (
            dir,
            prop_oneof![Just(NONE), 3i64..20],
            prop_oneof![Just(NONE), 0i64..20_000],
            prop_oneof![Just(NONE), 0i64..20_000]
        )
            .prop_map(|(dir, ns, space, disk)| Step::Quota {
                dir,
                ns,
                space,
                disk
            }),
    ]
}

struct World {
    ns: Namespace,
    log: Vec<Op>,
    su: Caller,
    now: i64,
}

impl World {
    fn apply(&mut self, planned: Planned) {
        let applied = self.ns.apply_planned(&planned, |_, _| {});
        assert!(applied.failed.is_none(), "{:?}", applied.failed);
        self.log.extend(planned.ops);
    }

    fn apply_ops(&mut self, ops: Vec<Op>) {
        for op in ops {
            self.ns.apply(&op).unwrap();
            self.log.push(op);
        }
    }

    /// Writes `len` more bytes to the open file at `path` in blocks of `BS`, and closes it
    /// when asked.
    fn write(
        &mut self,
        path: &str,
        mut left: u64,
        mut prev: Option<Previous>,
        close: bool,
    ) -> Result<(), FsError> {
        while left > 0 {
            let (nb, planned) = self.ns.plan_add_block(path, "w", 0, prev)?;
            let NewBlock::Fresh(p) = nb else {
                panic!("no retry here")
            };
            self.apply(planned);
            let l = left.min(BS);
            prev = Some(Previous {
                id: p.block.id,
                gs: p.block.gs,
                len: l,
            });
            left -= l;
        }
        if close {
            let (_, planned) = self
                .ns
                .plan_complete(path, "w", 0, prev, self.now, |_| true)?;
            self.apply(planned);
        }
        Ok(())
    }

    fn run(&mut self, s: &Step) {
        self.now += 1;
        let file = |dir: usize, name: u8| format!("{}/f{name}", DIRS[dir]);
        // Refusals (quotas, missing paths, leases) are part of the game: they must leave
        // usage exact too.
        let _ = match s {
            Step::Create {
                dir,
                name,
                len,
                repl,
                close,
            } => {
                let path = file(*dir, *name);
                let args = CreateArgs {
                    src: &path,
                    masked: 0o644,
                    unmasked: None,
                    client_name: "w",
                    client_machine: "m",
                    create: true,
                    overwrite: true,
                    create_parent: true,
                    replication: *repl,
                    block_size: BS,
                };
                match self.ns.plan_create(&self.su, &args, self.now) {
                    Ok(p) => {
                        self.apply(p);
                        self.write(&path, *len, None, *close)
                    }
                    Err(e) => Err(e),
                }
            }
            Step::Append { dir, name, more } => {
                let path = file(*dir, *name);
                match self.ns.plan_append(&self.su, &path, "w", "m", false) {
                    Ok((appended, p)) => {
                        self.apply(p);
                        let prev = appended.last.map(|l| Previous {
                            id: l.block.id,
                            gs: l.block.gs,
                            len: l.block.len,
                        });
                        // Fill the reopened block first, as a writer does.
                        let room = appended.last.map_or(0, |l| BS - l.block.len).min(*more);
                        let prev = prev.map(|p| Previous {
                            len: p.len + room,
                            ..p
                        });
                        self.write(&path, more - room, prev, true)
                    }
                    Err(e) => Err(e),
                }
            }
            Step::Rename { from, name, to } => {
                let dst = format!("{}/g{name}", DIRS[*to]);
                self.ns
                    .plan_rename2(&self.su, &file(*from, *name), &dst, true, self.now)
                    .map(|p| self.apply(p))
            }
            Step::RenameDir { from, to } => {
                let dst = format!("{}/moved", DIRS[*to]);
                self.ns
                    .plan_rename(&self.su, DIRS[*from], &dst, self.now)
                    .map(|p| p.into_iter().for_each(|p| self.apply(p)))
            }
            Step::Delete { dir, name } => self
                .ns
                .plan_delete(&self.su, &file(*dir, *name), true, self.now)
                .map(|p| p.into_iter().for_each(|p| self.apply(p))),
            Step::SetReplication { dir, name, repl } => self
                .ns
                .plan_set_replication(&self.su, &file(*dir, *name), *repl)
                .map(|ops| self.apply_ops(ops.unwrap_or_default())),
            Step::Policy { dir, cold } => {
                let name = if *cold { "COLD" } else { "HOT" };
                self.ns
                    .plan_set_storage_policy(&self.su, DIRS[*dir], Some(name), true)
                    .map(|ops| self.apply_ops(ops))
            }
            Step::Quota {
                dir,
                ns,
                space,
                disk,
            } => {
                let su = self.su.clone();
                let mut go = |n, s, t| {
                    self.ns
                        .plan_set_quota(&su, DIRS[*dir], n, s, t)
                        .map(|ops| self.apply_ops(ops))
                };
                go(*ns, *space, None).and_then(|_| go(super::quota::DONT_SET, *disk, Some(1)))
            }
        };
    }
}

/// Every quota's usage, and a recount of it by walking the subtree with no cached figure.
fn check_exact(ns: &Namespace) {
    for (&slot, f) in ns.features.iter() {
        let Some(q) = f.quota.as_deref() else {
            continue;
        };
        let mut want = Usage::default();
        let mut stack = vec![slot];
        while let Some(s) = stack.pop() {
            want += ns.file_usage(s, ns.storage_policy_of(s));
            if let Some(c) = ns.inode(s).children() {
                stack.extend(c.slots());
            }
        }
        assert_eq!(q.used, want, "usage of {}", ns.path_of(slot));
    }
}

fn quotas(ns: &Namespace) -> Vec<(String, i64, i64, [i64; N_TYPES], Usage)> {
    let mut v: Vec<_> = ns
        .features
        .iter()
        .filter_map(|(&s, f)| {
            f.quota
                .as_deref()
                .map(|q| (ns.path_of(s), q.ns, q.space, q.types, q.used))
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn usage_is_exact_after_every_step_an_image_and_a_replay(steps in prop::collection::vec(step(), 1..60)) {
        let su = Caller::superuser("hdfs");
        let mut w = World { ns: Namespace::new("hdfs", "supergroup", 1), log: Vec::new(), su, now: 1 };
        for d in DIRS {
            let p = w.ns.plan_mkdirs(&w.su, d, 0o755, true, 1).unwrap();
            w.apply(p);
        }
        for s in &steps {
            w.run(s);
            check_exact(&w.ns);
        }
        let (back, _) = Namespace::decode_image(&w.ns.encode_image(1)).unwrap();
        check_exact(&back);
        prop_assert_eq!(quotas(&back), quotas(&w.ns));
        let mut replayed = Namespace::new("hdfs", "supergroup", 1);
        for op in &w.log {
            replayed.apply(op).unwrap();
        }
        prop_assert_eq!(quotas(&replayed), quotas(&w.ns));
        prop_assert_eq!(replayed.dump(), w.ns.dump());
    }
}
