#!/usr/bin/env bash
# A/B probe for a change on the DataNodes' write path: the write-ahead-log workload of
# wal-vs-hdfs.sh (W writers of Hadoop's client, 512-byte records, hflush after each,
# replication 3 on three DataNodes) against two Ferrite builds, alternating build by build
# so both see the same machine. Per run, a fresh cluster of that build. Prints one line per
# run and the medians per build: flushes/s, p50, p99, DataNode CPU µs per flush. Raw output
# goes to bench/run/wal-ab-<time>/.
# Not a comparison with HDFS: that is wal-vs-hdfs.sh.
#
#   bench/wal-ab.sh [-r ROUNDS] [-n RECORDS] [-s SECS] [-w "16 64"] OLD NEW
# Needs the Java client classpath: run wal-vs-hdfs.sh once (or build_all) first.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
ROUNDS=3; RECORDS=1000; SECS=15; WRITERS="16 64"
while getopts "r:n:s:w:" o; do
  case $o in r) ROUNDS=$OPTARG;; n) RECORDS=$OPTARG;; s) SECS=$OPTARG;; w) WRITERS=$OPTARG;; *) exit 2;; esac
done
shift $((OPTIND - 1))
[ $# -eq 2 ] || { echo "usage: $0 [-r ROUNDS] [-n RECORDS] [-s SECS] [-w WRITERS] OLD NEW" >&2; exit 2; }
OLD=$1; NEW=$2
HADOOP_CP="$(cat "$ROOT/bench/java/target/cp.txt")"
WORK=$(mktemp -d /tmp/ferrite-wal-ab.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
OUT="$ROOT/bench/run/wal-ab-$(date +%Y%m%d-%H%M%S)"; mkdir -p "$OUT"
CLASSES="$WORK/classes"; mkdir -p "$CLASSES"
javac -cp "$HADOOP_CP" -d "$CLASSES" "$ROOT/bench/java/src/WalBench.java"
echo "# old=$OLD new=$NEW rounds=$ROUNDS records=$RECORDS secs=$SECS writers=$WRITERS $(date -u)"

dn_ticks() { local t=0 p; for p in $DN_PIDS; do t=$((t + $(cpu_ticks "$p"))); done; echo "$t"; }

# one LABEL BINARY: a fresh three-DataNode cluster of BINARY, one run per writer count.
one() {
  local label=$1 w d0 d1 r flushes
  FERRITE=$2
  start_ferrite_cluster "$WORK/$label" 3 >/dev/null
  write_site "$WORK/client" core "fs.defaultFS=$URL"
  for w in $WRITERS; do
    d0=$(dn_ticks)
    r=$(java $JAVA_OPTS -cp "$WORK/client:$CLASSES:$HADOOP_CP" WalBench "$URL" "/ab/wal-$w" "$w" "$RECORDS" 512 hflush "$SECS" 2>/dev/null | tail -1)
    d1=$(dn_ticks)
    flushes=${r#flushes=}; flushes=${flushes%% *}
    echo "build=$label writers=$w $r dn_cpu_us=$(awk -v t=$((d1 - d0)) -v n="${flushes:-0}" 'BEGIN {printf "%.1f", n ? t * 1e4 / n : 0}') load=$(loadavg | tr ' ' ,)"
  done
  stop_server "$PID"; for p in $DN_PIDS; do stop_server "$p"; done; DN_PIDS=""
}

for r in $(seq 1 "$ROUNDS"); do
  # Each build goes first in half of the rounds.
  if [ $((r % 2)) -eq 1 ]; then one old "$OLD"; one new "$NEW"; else one new "$NEW"; one old "$OLD"; fi
done | tee "$OUT/results.txt"
python3 - "$OUT/results.txt" <<'PY'
import statistics, sys
rows = [dict(kv.split("=", 1) for kv in l.split() if "=" in kv) for l in open(sys.argv[1]) if l.startswith("build=")]
for w in sorted({r["writers"] for r in rows}, key=int):
    for b in ("old", "new"):
        m = lambda k: statistics.median(float(r[k]) for r in rows if r["build"] == b and r["writers"] == w and k in r)
        print(f"median writers={w} build={b} flushes_per_s={m('flushes_per_s'):.0f} p50_us={m('p50_us'):.0f} "
              f"p99_us={m('p99_us'):.0f} dn_cpu_us={m('dn_cpu_us'):.1f} client_cpu_us={m('client_cpu_us'):.1f}")
PY
echo "raw output: $OUT"
