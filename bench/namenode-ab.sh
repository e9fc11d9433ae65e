#!/usr/bin/env bash
# A/B probe for one NameNode change: Hadoop 3.4.1's NNThroughputBenchmark (remote mode,
# 64 threads) against a fresh Ferrite NameNode per run, alternating the variants run by run
# so both see the same machine. Prints, per run, ops/s and the NameNode's and the client's
# CPU µs per op (from /proc/PID/stat around the timed phase; `nnbench` in lib.sh), and the
# NameNode's split by thread (runtime workers, journal syncer, summary). Not a
# comparison with HDFS: that is namenode-vs-hdfs.sh.
#
#   bench/namenode-ab.sh [-r REPS] [-n OPS] [-o "create mkdirs ..."] VARIANT...
#
# A VARIANT is BINARY or BINARY:KEY=VALUE,KEY=VALUE (configuration for that run), e.g.
#   bench/namenode-ab.sh -o "create mkdirs" /tmp/before target/release/ferrite \
#     target/release/ferrite:ferrite.journal.group-commit.delay.us=100
# Needs the Java client classpath: run namenode-vs-hdfs.sh once (or build_all) first.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
REPS=2; N=50000; OPS="create mkdirs rename delete open fileStatus"
while getopts "r:n:o:" o; do
  case $o in r) REPS=$OPTARG ;; n) N=$OPTARG ;; o) OPS=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-r REPS] [-n OPS] [-o OPS] VARIANT..." >&2; exit 2; }
HADOOP_CP="$(cat "$ROOT/bench/java/target/cp.txt")"
THREADS=64
WORK=$(mktemp -d /tmp/ferrite-ab.XXXXXX)
OUT=$WORK/out; mkdir -p "$OUT"
trap 'rm -rf "$WORK"' EXIT

# Results are labelled v1, v2, ... in the order given (nnbench names log files by label).
i=0
for v in "$@"; do i=$((i + 1)); echo "# v$i = $v"; done

# run LABEL VARIANT OP: one NNThroughputBenchmark run against a fresh NameNode.
run() {
  local kv
  FERRITE=${2%%:*}
  NN_EXTRA=""
  if [[ $2 == *:* ]]; then
    for kv in ${2#*:}; do NN_EXTRA+="${kv//,/ } "; done
  fi
  start_ferrite "$WORK/ferrite"
  nnbench "$1" "$URL" "$3"
  stop_server "$PID"
}

for _ in $(seq "$REPS"); do
  for op in $OPS; do
    i=0
    for v in "$@"; do i=$((i + 1)); run "v$i" "$v" "$op"; done
  done
done
