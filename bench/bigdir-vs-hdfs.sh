#!/usr/bin/env bash
# One big directory: Hadoop 3.4.1's NNThroughputBenchmark creating every file in a single
# directory (-filesPerDir equal to -files), remote mode, 64 threads, against a fresh
# Apache HDFS 3.4.1 NameNode and a fresh Ferrite NameNode, alternating, REPS times. Each
# create inserts into a directory that grows to FILES entries: HDFS keeps a directory's
# children in one sorted ArrayList, so every insert shifts the entries after it; so did
# Ferrite before 29aa9ae. Prints ops/s, NameNode CPU µs per create and the ratio.
#
#   bench/bigdir-vs-hdfs.sh [-r REPS] [-n FILES] [EXTRA_FERRITE_BINARY...]
#
# Extra Ferrite binaries (an older build, say) run as further systems for an A/B.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
REPS=2; N=300000
while getopts "r:n:" o; do case $o in r) REPS=$OPTARG;; n) N=$OPTARG;; *) exit 2;; esac; done
shift $((OPTIND - 1))
build_all
OUT="$ROOT/bench/run/bigdir-$(date +%Y%m%d-%H%M%S)"; mkdir -p "$OUT"
WORK="${TMPDIR:-/tmp}/ferrite-bench-bigdir"
THREADS=64
NNB_EXTRA="-filesPerDir $N"
echo "# reps=$REPS files=$N (all in one directory) threads=$THREADS  $(nproc) cpus  $(date -u)" | tee "$OUT/params"
MAIN_FERRITE=$FERRITE
for rep in $(seq 1 "$REPS"); do
  start_hdfs "$WORK/hdfs"; nnbench hdfs "$URL" create; stop_server "$PID"
  FERRITE=$MAIN_FERRITE; start_ferrite "$WORK/ferrite"; nnbench ferrite "$URL" create; stop_server "$PID"
  for bin in "$@"; do
    FERRITE=$bin; start_ferrite "$WORK/ferrite"; nnbench "ferrite@$(basename "$bin")" "$URL" create; stop_server "$PID"
  done
done
FERRITE=$MAIN_FERRITE
rm -rf "$WORK"

python3 - "$OUT/results.txt" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    kv = dict(re.findall(r"(\S+)=(\S+)", line))
    if kv.get("driver") != "nnthroughput-remote":
        continue
    r = rows.setdefault(kv["system"], {"ops": [], "cpu": []})
    if kv["ops_per_s"] != "FAILED":
        r["ops"].append(float(kv["ops_per_s"]))
    if kv["server_cpu_us_per_op"] != "NA":
        r["cpu"].append(float(kv["server_cpu_us_per_op"]))
med = lambda xs: statistics.median(xs) if xs else float("nan")
base = med(rows.get("hdfs", {"ops": []})["ops"])
print("| system | creates/s (median) | runs | NameNode CPU µs/create | vs HDFS |")
print("|---|---|---|---|---|")
for name, r in rows.items():
    runs = " / ".join(f"{x:,.0f}" for x in r["ops"])
    print(f"| {name} | {med(r['ops']):,.0f} | {runs} | {med(r['cpu']):.1f} | {med(r['ops']) / base:.2f}x |")
PY
echo "raw results: $OUT/results.txt"
