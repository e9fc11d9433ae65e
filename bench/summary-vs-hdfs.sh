#!/usr/bin/env bash
# The namespace summary against Apache HDFS 3.4.1 (HDDS-15335's idea, for HDFS):
#  1. `ferrite bench summary`: the summary task's events/s, 1 worker and all cores, with
#     its rebuild and checkpoint times (pure computation, no HDFS counterpart).
#  2. getContentSummary latency with Hadoop's own client on a namespace of FILES files,
#     created over RPC in both NameNodes alike: HDFS walks the subtree on every call;
#     Ferrite answers from the summary (and, for reference, walks too with it turned off).
# Raw output goes to bench/run/summary-<time>/.
#
#   bench/summary-vs-hdfs.sh [-n FILES] [-c CALLS] [-r RUNS]
#     -n 1000000  files in each namespace
#     -c 20       timed getContentSummary calls per path
#     -r 3        runs of `ferrite bench summary` (medians)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
FILES=1000000; CALLS=20; RUNS=3
while getopts "n:c:r:" o; do case $o in n) FILES=$OPTARG;; c) CALLS=$OPTARG;; r) RUNS=$OPTARG;; *) exit 2;; esac; done
build_all
OUT="$ROOT/bench/run/summary-$(date +%Y%m%d-%H%M%S)"; mkdir -p "$OUT"
WORK="${TMPDIR:-/tmp}/ferrite-bench-sum"; mkdir -p "$WORK"
CLASSES="$WORK/classes"; mkdir -p "$CLASSES"
javac -cp "$HADOOP_CP" -d "$CLASSES" "$ROOT/bench/java/src/SummaryBench.java"
echo "# files=$FILES calls=$CALLS runs=$RUNS  $(nproc) cpus  $(date -u)" | tee "$OUT/params"

echo "== ferrite bench summary"
FERRITE_LOG=warn "$FERRITE" bench summary --runs "$RUNS" 2>&1 | tee "$OUT/events.txt"

PATHS="/ /nnbench/create /nnbench/create/t0"
measure() {  # measure NAME: fill the running NameNode with FILES files, then time calls
  local name=$1
  "$FERRITE" bench namenode --fs "$URL" --ops create --count "$FILES" --threads 32 > "$OUT/fill-$name.txt" 2>&1
  write_site "$WORK/client-$name" core "fs.defaultFS=$URL"
  java $JAVA_OPTS -cp "$WORK/client-$name:$CLASSES:$HADOOP_CP" SummaryBench "$URL" "$CALLS" $PATHS 2>>"$OUT/client.log" \
    | sed "s/^/system=$name /" | tee -a "$OUT/results.txt"
  echo "system=$name rss_kb=$(awk '/VmRSS/{print $2}' /proc/$PID/status)" | tee -a "$OUT/results.txt"
}

echo "== getContentSummary, $FILES files"
start_hdfs "$WORK/hdfs"; measure hdfs; stop_server "$PID"
NN_EXTRA="" start_ferrite "$WORK/ferrite"; measure ferrite; stop_server "$PID"
NN_EXTRA="ferrite.summary.enabled=false" start_ferrite "$WORK/ferrite-walk"; measure ferrite-walk; stop_server "$PID"

python3 - "$OUT/results.txt" <<'PY' | tee "$OUT/summary.txt"
import re, sys
rows = {}
for line in open(sys.argv[1]):
    kv = dict(re.findall(r"(\w+)=(\S+)", line))
    if "path" in kv:
        rows[(kv["system"], kv["path"])] = kv
paths = sorted({p for _, p in rows}, key=len)
print(f"{'path':<22} {'files':>9} | {'HDFS ms':>9} {'Fe walk ms':>10} {'Fe summary ms':>13} | HDFS/Fe")
for p in paths:
    h, w, f = (rows.get((s, p), {}) for s in ("hdfs", "ferrite-walk", "ferrite"))
    med = lambda r: float(r.get("median_ms", "nan"))
    same = h.get("files") == f.get("files") and h.get("dirs") == f.get("dirs")
    print(f"{p:<22} {f.get('files', '?'):>9} | {med(h):9.3f} {med(w):10.3f} {med(f):13.3f} | {med(h) / med(f):6.0f}x"
          + ("" if same else "   (counts differ!)"))
PY
echo "raw output: $OUT"
