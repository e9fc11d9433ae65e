//! The namespace usage of one path, as the UI's usage page draws it: totals, the size
//! histogram, the largest children (the drill-down chart) and the directories that hold
//! the most data in their own files. Pure: a summary in, JSON out.

use serde_json::{json, Value};

use crate::summary::{bucket_bounds, ChildUsage, DirUsage, PathSummary, Summary};

pub(super) const DEFAULT_TOP: usize = 20;
pub(super) const MAX_TOP: usize = 200;

/// How many directories the heaviest-directories walk looks at: a few milliseconds of the
/// summary's read lock (the page says when the walk stopped short).
const WALK_BUDGET: usize = 200_000;

pub(super) struct Usage {
    pub path: String,
    pub summary: PathSummary,
    pub txid: u64,
    pub children: Vec<ChildUsage>,
    pub heaviest: Vec<DirUsage>,
    pub heaviest_complete: bool,
}

/// `None` when the summary does not know the path (deleted since, or not seen yet).
pub(super) fn of(s: &Summary, path: &str, top: usize) -> Option<Usage> {
    let summary = s.get(path)?;
    let children = s.largest_children(path, top).unwrap_or_default();
    let (heaviest, heaviest_complete) = s
        .heaviest_dirs(path, top, WALK_BUDGET)
        .unwrap_or((Vec::new(), true));
    Some(Usage {
        path: path.to_string(),
        summary,
        txid: s.txid(),
        children,
        heaviest,
        heaviest_complete,
    })
}

/// Whether the subtree has directories that not everyone may read: then the caller's
/// right to see it all is checked first, as for `getSummary`.
pub(super) fn restricted(u: &Usage) -> bool {
    u.summary.tot.restricted > 0
}

pub(super) fn json(u: &Usage) -> Value {
    let s = &u.summary;
    // Only buckets that hold files, each with its byte range (the last is open-ended).
    let histogram: Vec<Value> = bucket_bounds()
        .zip(s.tot.hist.iter())
        .filter(|(_, n)| *n > 0)
        .map(|((lo, hi), n)| json!({"from": lo, "to": (hi != u64::MAX).then_some(hi), "files": n}))
        .collect();
    let children: Vec<Value> = u
        .children
        .iter()
        .map(|c| {
            json!({"name": c.name, "isDir": c.is_dir, "files": c.files,
                   "bytes": c.bytes, "rawBytes": c.raw})
        })
        .collect();
    let heaviest: Vec<Value> = u
        .heaviest
        .iter()
        .map(|d| json!({"path": d.path, "bytes": d.own_bytes, "files": d.own_files}))
        .collect();
    json!({
        "path": u.path,
        "isDir": s.is_dir,
        "files": s.tot.files,
        "dirs": s.tot.dirs,
        "bytes": s.tot.bytes,
        "rawBytes": s.tot.raw,
        "directFiles": s.direct_files,
        "directDirs": s.direct_dirs,
        "updated": s.updated,
        "txid": u.txid,
        "children": children,
        "histogram": histogram,
        "heaviest": heaviest,
        "heaviestComplete": u.heaviest_complete,
    })
}

/// A quota and its use: -1 for a kind the directory has no quota of.
pub(super) fn quota_json(q: &crate::namespace::quota::QuotaView) -> Value {
    let used = q.used.unwrap_or_default();
    let types: serde_json::Map<String, Value> = q
        .types
        .iter()
        .enumerate()
        .filter(|(_, &t)| t != crate::namespace::quota::NONE)
        .map(|(i, &t)| {
            let name = crate::namespace::quota::type_name(i).to_string();
            (name, json!({"quota": t, "used": used.types[i]}))
        })
        .collect();
    json!({
        "names": q.ns,
        "namesUsed": used.ns,
        "space": q.space,
        "spaceUsed": used.space,
        "types": types,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::namespace::ops::mkdir_record;
    use crate::namespace::{Namespace, Op};

    fn summary_of(ops: &[Op]) -> Summary {
        let mut ns = Namespace::new("hdfs", "supergroup", 1);
        let mut s = Summary::from_namespace(&ns, 0);
        for (i, op) in ops.iter().enumerate() {
            ns.apply(op).unwrap();
            s.apply(i as u64 + 1, op).unwrap();
        }
        s
    }

    fn file(path: &str, id: u64, len: u64) -> [Op; 2] {
        let close = Op::Close {
            path: path.into(),
            mtime: 2,
            len,
        };
        [crate::summary::tests::create_op(path, id, 1), close]
    }

    #[test]
    fn usage_shows_children_histogram_and_where_the_bytes_sit() {
        let mut ops = vec![mkdir_record("/d", 10, 1), mkdir_record("/d/e", 11, 1)];
        ops.extend(file("/d/small", 12, 10));
        ops.extend(file("/d/e/big", 13, 5000));
        let s = summary_of(&ops);
        let u = of(&s, "/d", 10).unwrap();
        let j = json(&u);
        assert_eq!(j["files"], 2);
        assert_eq!(j["dirs"], 2);
        assert_eq!(j["bytes"], 5010);
        assert_eq!(j["rawBytes"], 15030);
        assert_eq!(j["txid"], 6);
        assert_eq!(j["children"][0]["name"], "e");
        assert_eq!(j["children"][0]["isDir"], true);
        assert_eq!(j["children"][1]["name"], "small");
        assert_eq!(
            j["histogram"],
            json!([{"from": 0, "to": 1024, "files": 1},
                   {"from": 4096, "to": 8192, "files": 1}])
        );
        assert_eq!(
            j["heaviest"],
            json!([{"path": "/d/e", "bytes": 5000, "files": 1},
                   {"path": "/d", "bytes": 10, "files": 1}])
        );
        assert_eq!(j["heaviestComplete"], true);
        assert!(of(&s, "/nope", 10).is_none());
    }
}
