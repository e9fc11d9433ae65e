#!/usr/bin/env bash
# Creates under quotas and ACLs, and the memory an ACL and an xattr cost (issue 44),
# Ferrite against Apache HDFS 3.4.1 on the same machine:
#  1. In process, as NNThroughputBenchmark runs: HDFS's NameNode inside a JVM called through
#     NamenodeProtocols (bench/java/src/GuardedCreateBench.java), Ferrite's through
#     `ferrite bench namenode --inproc --op guarded-create`; THREADS clients create COUNT
#     files as an ordinary user under 5 ancestors that each carry a namespace and a space
#     quota and an ACL of 10 named users ("guarded"), and again under plain 0777 ones.
#     Both journal to the same local disk.
#  2. Memory: FILES closed files with nothing more, with a default ACL of 3 named users
#     inherited by every file and directory, and with one 8-byte user xattr each. HDFS: heap
#     in use after a full GC (its NameNode in process); Ferrite: RSS growth of
#     `ferrite namenode` over the second half of the files.
# Raw output goes to bench/run/guarded-<time>/.
#
#   bench/guarded-vs-hdfs.sh [-r RUNS] [-n COUNT] [-t THREADS] [-f FILES] [-p creates|memory]
#     -p    only that part (default both)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
RUNS=3; COUNT=200000; THREADS=64; FILES=100000; PART=both
while getopts "r:n:t:f:p:" o; do case $o in r) RUNS=$OPTARG;; n) COUNT=$OPTARG;; t) THREADS=$OPTARG;; f) FILES=$OPTARG;; p) PART=$OPTARG;; *) exit 2;; esac; done
build_all
OUT="$ROOT/bench/run/guarded-$(date +%Y%m%d-%H%M%S)"; mkdir -p "$OUT"
WORK="${TMPDIR:-/tmp}/ferrite-bench-guarded"; mkdir -p "$WORK"
CLASSES="$WORK/classes"; mkdir -p "$CLASSES"
javac -cp "$HADOOP_CP" -d "$CLASSES" "$ROOT/bench/java/src/GuardedCreateBench.java"
echo "# runs=$RUNS count=$COUNT threads=$THREADS files=$FILES  $(nproc) cpus  $(date -u)" | tee "$OUT/params"

hdfs_inproc() {  # hdfs_inproc ARGS...: GuardedCreateBench on a freshly formatted name dir
  local w="$WORK/hdfs"; rm -rf "$w"; mkdir -p "$w"
  write_site "$w/conf" core "hadoop.tmp.dir=$w/tmp"
  write_site "$w/conf" hdfs "dfs.namenode.name.dir=file://$w/nn" "dfs.namenode.rpc-bind-host=127.0.0.1" \
    "dfs.namenode.rpc-address=127.0.0.1:$(free_port)" "dfs.namenode.http-address=127.0.0.1:0" \
    "dfs.namenode.safemode.extension=0"
  java $JAVA_OPTS -cp "$w/conf:$HADOOP_CP" org.apache.hadoop.hdfs.server.namenode.NameNode -format -force -nonInteractive > "$w/format.log" 2>&1
  java $JAVA_OPTS -cp "$w/conf:$CLASSES:$HADOOP_CP" GuardedCreateBench "$@" 2>>"$OUT/hdfs.log" | grep '^mode='
}

[ "$PART" = memory ] || {
echo "== creates, in process"
for rep in $(seq 1 "$RUNS"); do
  for mode in plain guarded; do
    hdfs_inproc "$THREADS" "$COUNT" "$mode" | sed "s/^/system=hdfs rep=$rep load=$(loadavg | tr ' ' ,) /" | tee -a "$OUT/results.txt"
  done
  "$FERRITE" bench namenode --inproc --data "$WORK/ferrite" --op guarded-create --count "$COUNT" --threads "$THREADS" 2>>"$OUT/ferrite.log" \
    | grep '^mode=' | sed "s/^/system=ferrite rep=$rep load=$(loadavg | tr ' ' ,) /" | tee -a "$OUT/results.txt"
done
}

[ "$PART" = creates ] || {
# HDFS's in-process NameNode syncs its edit log after every call: FILES creates and
# completes one at a time take minutes, hence fewer files than the create runs.
echo "== memory per file"
for rep in $(seq 1 "$RUNS"); do
  for feature in none acl xattr; do
    hdfs_inproc memory "$FILES" "$feature" | sed "s/^/system=hdfs rep=$rep /" | tee -a "$OUT/results.txt"
    start_ferrite "$WORK/ferrite-mem"
    "$FERRITE" bench namenode --fs "$URL" --pid "$PID" --ops inode-memory --files "$FILES" --threads 16 --mem-feature "$feature" 2>>"$OUT/ferrite.log" \
      | grep '^op=' | sed "s/^/system=ferrite rep=$rep feature=$feature /" | tee -a "$OUT/results.txt"
    stop_server "$PID"
  done
done
}
python3 - "$OUT/results.txt" <<'PY'
import re, statistics, sys
rows = [dict(re.findall(r"(\w+)=(\S+)", l)) for l in open(sys.argv[1])]
def med(sys_, key, **kw):
    v = [float(r[key]) for r in rows if r.get("system") == sys_ and key in r and all(r.get(k) == w for k, w in kw.items())]
    return statistics.median(v) if v else float("nan")
for mode in ("plain", "guarded"):
    h, f = med("hdfs", "ops_per_s", mode=mode), med("ferrite", "ops_per_s", mode=mode)
    print(f"creates {mode}: hdfs {h:,.0f}/s ferrite {f:,.0f}/s ratio {f / h:.2f}x")
print(f"guarded/plain: hdfs {med('hdfs','ops_per_s',mode='guarded') / med('hdfs','ops_per_s',mode='plain'):.3f} "
      f"ferrite {med('ferrite','ops_per_s',mode='guarded') / med('ferrite','ops_per_s',mode='plain'):.3f}")
base_h, base_f = med("hdfs", "heap_bytes_per_file", mode="none"), med("ferrite", "bytes_per_file_second_half", feature="none")
for feat in ("acl", "xattr"):
    h = med("hdfs", "heap_bytes_per_file", mode=feat) - base_h
    f = med("ferrite", "bytes_per_file_second_half", feature=feat) - base_f
    print(f"memory per {feat}: hdfs {h:.0f} B ferrite {f:.0f} B (files alone: hdfs {base_h:.0f} B, ferrite {base_f:.0f} B)")
PY
