//! At-most-once calls across a restart. The retry cache answers a call a client sends
//! again with the first attempt's answer, so a create, rename or delete that ran is not
//! run twice. It lives in memory; to outlive a restart (and, with a replicated journal, a
//! failover) each at-most-once call's ids are journaled as an [`Op::RetryId`] just before
//! its records, and start-up hands what it replayed back to the cache, as HDFS rebuilds
//! its cache from the ids on its edits.
//!
//! A crash can keep any prefix of what was not yet synced, and the next start appends
//! after it: ids may survive without the records they preceded, and be followed by
//! another call's. So the record also names what the call's effect left (a path there,
//! with the created file's inode id, or a path gone), and a call is answered from the
//! journal only when the replayed namespace shows that effect; otherwise its retry runs
//! afresh, as it must. Ids first rather than last: records kept without their ids would
//! make the retry fail against the call's own effect.

use std::collections::VecDeque;

use crate::namespace::snapshot::ops::snapshot_path;
use crate::namespace::{Op, RetryAnswer};

use super::admission::{Admitted, CallId, Operation};

/// What a call's effect leaves in the namespace: `path` there (as inode `id`, if not 0),
/// or gone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Effect {
    pub path: String,
    pub gone: bool,
    pub id: u64,
}

impl Effect {
    fn there(path: String) -> Self {
        Effect {
            path,
            gone: false,
            id: 0,
        }
    }

    fn gone(path: String) -> Self {
        Effect {
            path,
            gone: true,
            id: 0,
        }
    }
}

/// The record that lets a replaying NameNode answer a retry of `who`'s call as `ops`
/// answered it; none for a call that did not come over RPC, is not at-most-once, or whose
/// answer cannot be rebuilt (append's located block).
pub(super) fn record(who: &Admitted, ops: &[Op]) -> Option<Op> {
    let call = who.call()?;
    let (answer, effect) = answer_of(who.op(), ops)?;
    Some(Op::RetryId {
        client_id: call.client_id.to_vec(),
        call_id: i64::from(call.call_id),
        answer: answer as u8,
        path: effect.path,
        gone: effect.gone,
        id: effect.id,
    })
}

/// What `op`'s call answered, and the effect that shows its records applied: that of the
/// last of `ops` that leaves one (a create's parents come before its file).
fn answer_of(op: Operation, ops: &[Op]) -> Option<(RetryAnswer, Effect)> {
    let answer = match op {
        Operation::Create => RetryAnswer::Status,
        Operation::CreateSnapshot => RetryAnswer::Path,
        Operation::Delete | Operation::Rename => RetryAnswer::True,
        Operation::Rename2
        | Operation::Concat
        | Operation::DeleteSnapshot
        | Operation::RenameSnapshot => RetryAnswer::Empty,
        _ => return None,
    };
    Some((answer, ops.iter().rev().find_map(effect_of)?))
}

/// What a record leaves that only it could have: a created file (by its inode id), a new
/// snapshot, or a path gone. For a rename, the source gone, not the destination there:
/// an overwritten destination was there before.
fn effect_of(op: &Op) -> Option<Effect> {
    Some(match op {
        Op::Create { path, id, .. } => Effect {
            path: path.clone(),
            gone: false,
            id: *id,
        },
        Op::Delete { path, .. } => Effect::gone(path.clone()),
        Op::Rename { src, .. } => Effect::gone(src.clone()),
        Op::Concat { srcs, .. } => Effect::gone(srcs.first()?.clone()),
        Op::CreateSnapshot { path, name, .. } => Effect::there(snapshot_path(path, name)),
        Op::DeleteSnapshot { path, name, .. } => Effect::gone(snapshot_path(path, name)),
        Op::RenameSnapshot { path, new, .. } => Effect::there(snapshot_path(path, new)),
        _ => return None,
    })
}

/// One call a replayed journal says was answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retried {
    pub call: CallId,
    pub answer: RetryAnswer,
    /// What must be in the namespace for the answer to stand.
    pub effect: Effect,
}

/// The calls seen while replaying, the newest `cap` of them (the retry cache holds no
/// more).
#[derive(Debug, Default)]
pub struct RetriedCalls {
    calls: VecDeque<Retried>,
    cap: usize,
}

impl RetriedCalls {
    pub fn with_capacity(cap: usize) -> Self {
        RetriedCalls {
            calls: VecDeque::new(),
            cap,
        }
    }

    /// Notes `op` if it is a call's ids.
    pub fn see(&mut self, op: &Op) {
        let Op::RetryId {
            client_id,
            call_id,
            answer,
            path,
            gone,
            id,
        } = op
        else {
            return;
        };
        let (Ok(client_id), Ok(call_id), Some(answer)) = (
            <[u8; 16]>::try_from(client_id.as_slice()),
            i32::try_from(*call_id),
            RetryAnswer::from_u8(*answer),
        ) else {
            return;
        };
        if self.cap == 0 {
            return;
        }
        if self.calls.len() == self.cap {
            self.calls.pop_front();
        }
        self.calls.push_back(Retried {
            call: CallId { client_id, call_id },
            answer,
            effect: Effect {
                path: path.clone(),
                gone: *gone,
                id: *id,
            },
        });
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// The calls seen so far, leaving this empty with the same capacity (a standby keeps
    /// seeing calls after each hand-over to the retry cache).
    pub fn take(&mut self) -> Self {
        std::mem::replace(self, RetriedCalls::with_capacity(self.cap))
    }

    pub fn into_calls(self) -> impl Iterator<Item = Retried> {
        self.calls.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(call_id: i64) -> Op {
        Op::RetryId {
            client_id: vec![1; 16],
            call_id,
            answer: RetryAnswer::True as u8,
            path: "/p".into(),
            gone: true,
            id: 0,
        }
    }

    #[test]
    fn replay_keeps_the_newest_calls_up_to_the_cache_size() {
        let mut seen = RetriedCalls::with_capacity(2);
        for op in [id(1), id(2), Op::SetGenerationStamp { gs: 9 }, id(3)] {
            seen.see(&op);
        }
        let ids: Vec<i32> = seen.into_calls().map(|c| c.call.call_id).collect();
        assert_eq!(ids, [2, 3]);
    }

    #[test]
    fn a_malformed_record_is_skipped() {
        let mut seen = RetriedCalls::with_capacity(4);
        let bad = |client_id: Vec<u8>, answer| Op::RetryId {
            client_id,
            call_id: 1,
            answer,
            path: String::new(),
            gone: false,
            id: 0,
        };
        seen.see(&bad(vec![1; 3], 1));
        seen.see(&bad(vec![1; 16], 9));
        assert!(seen.is_empty());
    }

    #[test]
    fn each_call_names_the_effect_that_proves_it() {
        let rename = Op::Rename {
            src: "/a".into(),
            dst: "/b".into(),
            mtime: 1,
            overwrite: false,
        };
        let (answer, effect) = answer_of(Operation::Rename, std::slice::from_ref(&rename)).unwrap();
        // The source gone: an overwritten destination was there before the call.
        assert_eq!(
            (answer, effect),
            (RetryAnswer::True, Effect::gone("/a".into()))
        );
        let (answer, _) = answer_of(Operation::Rename2, &[rename]).unwrap();
        assert_eq!(answer, RetryAnswer::Empty);
        let delete = Op::Delete {
            path: "/a".into(),
            mtime: 1,
        };
        let (_, effect) = answer_of(Operation::Delete, &[delete]).unwrap();
        assert_eq!(effect, Effect::gone("/a".into()));
        let snap = Op::CreateSnapshot {
            path: "/d".into(),
            name: "s1".into(),
            id: 3,
            mtime: 1,
        };
        let (answer, effect) = answer_of(Operation::CreateSnapshot, &[snap]).unwrap();
        assert_eq!(answer, RetryAnswer::Path);
        assert_eq!(effect.path, "/d/.snapshot/s1");
        assert!(answer_of(Operation::Mkdirs, &[]).is_none());
    }
}
