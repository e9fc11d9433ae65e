#!/usr/bin/env bash
# A/B probe for one DataNode change: the read server of two Ferrite builds, alternating
# build by build so both see the same machine. Per run, a fresh one-DataNode cluster of
# that build, a SIZE MiB file (replication 1, warm page cache), then
#   - READERS Java clients doing 32 KiB preads at random offsets for SECS: ops/s, p99, and
#     the DataNode's CPU µs per read;
#   - one raw stream of the file by `ferrite bench stream` (the NEW build's client for both,
#     so only the server differs): MiB/s.
# Not a comparison with HDFS: that is readserver-vs-hdfs.sh.
#
#   bench/readserver-ab.sh [-r ROUNDS] [-s SIZE_MB] [-t SECS] [-c READERS] OLD NEW
# Needs the Java client classpath: run readserver-vs-hdfs.sh once (or build_all) first.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
ROUNDS=4; SIZE=256; SECS=15; READERS=200
while getopts "r:s:t:c:" o; do
  case $o in r) ROUNDS=$OPTARG;; s) SIZE=$OPTARG;; t) SECS=$OPTARG;; c) READERS=$OPTARG;; *) exit 2;; esac
done
shift $((OPTIND - 1))
[ $# -eq 2 ] || { echo "usage: $0 [-r ROUNDS] [-s SIZE_MB] [-t SECS] [-c READERS] OLD NEW" >&2; exit 2; }
OLD=$1; NEW=$2
HADOOP_CP="$(cat "$ROOT/bench/java/target/cp.txt")"
WORK=$(mktemp -d /tmp/ferrite-rs-ab.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
CLASSES="$WORK/classes"; mkdir -p "$CLASSES"
javac -cp "$HADOOP_CP" -d "$CLASSES" "$ROOT/bench/java/src/ReadBench.java"
echo "# old=$OLD new=$NEW rounds=$ROUNDS size=${SIZE}MiB secs=$SECS readers=$READERS $(date -u)"

# one LABEL BINARY: a fresh cluster of BINARY, the preads and the stream, one line out.
one() {
  local label=$1 c0 c1 pread ops stream
  FERRITE=$2
  start_ferrite_cluster "$WORK/$label" 1 >/dev/null
  local dn=${DN_PIDS# }; dn=${dn%% *}
  write_site "$WORK/client" core "fs.defaultFS=$URL"
  write_site "$WORK/client" hdfs "dfs.replication=1"
  local cp="$WORK/client:$CLASSES:$HADOOP_CP"
  java $JAVA_OPTS -cp "$cp" ReadBench "$URL" write /rb/f "$SIZE" 2>/dev/null
  java $JAVA_OPTS -cp "$cp" ReadBench "$URL" stream /rb/f 1 >/dev/null 2>&1
  c0=$(cpu_ticks "$dn")
  pread=$(java $JAVA_OPTS -Xss512k -cp "$cp" ReadBench "$URL" pread /rb/f "$READERS" "$SECS" 32 2>/dev/null | tr '\n' ' ')
  c1=$(cpu_ticks "$dn")
  ops=$(sed -n 's/.*ops=\([0-9]*\).*/\1/p' <<<"$pread")
  stream=$("$NEW" bench stream --fs "$URL" /rb/f --reps 1 | tr '\n' ' ')
  echo "build=$label $pread dn_cpu_us_per_read=$(awk -v t=$((c1 - c0)) -v n="${ops:-0}" 'BEGIN {printf "%.1f", n ? t * 1e4 / n : 0}') $stream load=$(loadavg | tr ' ' ,)"
  stop_server "$PID"; for p in $DN_PIDS; do stop_server "$p"; done; DN_PIDS=""
}

for r in $(seq 1 "$ROUNDS"); do
  # Each build goes first in half of the rounds.
  if [ $((r % 2)) -eq 1 ]; then one old "$OLD"; one new "$NEW"; else one new "$NEW"; one old "$OLD"; fi
done
