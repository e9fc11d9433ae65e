#!/usr/bin/env bash
# The write-ahead-log workload, Ferrite against Apache HDFS 3.4.1 on the same machine and
# disk: W writers (Hadoop's own client, one JVM), each writing 512-byte records to its own
# file with hflush (or hsync) after each, replication 3 on three DataNodes of each system.
# Prints flushes/s, p50 and p99 latency and the DataNodes' CPU per flush, medians of the
# runs, and Ferrite's ratio to HDFS. Raw output goes to bench/run/wal-<time>/.
#
#   bench/wal-vs-hdfs.sh [-r REPS] [-n RECORDS] [-s SECONDS]
#     -r 3      runs per system, writer count and mode (the median is reported)
#     -n 2000   records per writer (each run also stops after SECONDS)
#     -s 20     the longest a run writes
set -euo pipefail
. "$(dirname "$0")/lib.sh"
REPS=3; RECORDS=2000; SECS=20
while getopts "r:n:s:" o; do case $o in r) REPS=$OPTARG;; n) RECORDS=$OPTARG;; s) SECS=$OPTARG;; *) exit 2;; esac; done
build_all
OUT="$ROOT/bench/run/wal-$(date +%Y%m%d-%H%M%S)"; mkdir -p "$OUT"
WORK="${TMPDIR:-/tmp}/ferrite-bench-wal"; mkdir -p "$WORK"
CLASSES="$WORK/classes"; mkdir -p "$CLASSES"
javac -cp "$HADOOP_CP" -d "$CLASSES" "$ROOT/bench/java/src/WalBench.java"
echo "# reps=$REPS records=$RECORDS secs=$SECS  $(nproc) cpus  $(date -u)" | tee "$OUT/params"

# The disk's own limit: one writer's 512-byte write + fdatasync, as each hsync asks.
python3 - "$WORK" <<'PY' | tee -a "$OUT/results.txt"
import os, sys, time
p = os.path.join(sys.argv[1], "fsync.probe"); fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
n, t0 = 0, time.time()
while time.time() - t0 < 3:
    os.write(fd, b"w" * 512); os.fdatasync(fd); n += 1
os.close(fd); os.unlink(p)
print(f"disk: 512-byte write + fdatasync, one writer: {n / (time.time() - t0):.0f}/s")
PY

dn_ticks() { local t=0 p; for p in $DN_PIDS; do t=$((t + $(cpu_ticks "$p"))); done; echo "$t"; }

run() {  # run SYSTEM WRITERS MODE REP
  write_site "$WORK/client" core "fs.defaultFS=$URL"
  local d0 d1 r
  d0=$(dn_ticks)
  r=$(java $JAVA_OPTS -cp "$WORK/client:$CLASSES:$HADOOP_CP" WalBench "$URL" "/bench/wal-$2-$3-$4" "$2" "$RECORDS" 512 "$3" "$SECS" 2>>"$OUT/client-$1.log" | tail -1)
  d1=$(dn_ticks)
  local flushes=${r#flushes=}; flushes=${flushes%% *}
  local dn_us; dn_us=$(awk -v t=$((d1 - d0)) -v n="$flushes" 'BEGIN {printf "%.1f", (n > 0 ? t * 1e4 / n : 0)}')
  echo "system=$1 writers=$2 mode=$3 rep=$4 $r dn_cpu_us=$dn_us load=$(loadavg)" | tee -a "$OUT/results.txt"
}

for sys in hdfs ferrite; do
  if [ "$sys" = hdfs ]; then start_hdfs_cluster "$WORK/hdfs" 3; else start_ferrite_cluster "$WORK/ferrite" 3; fi
  # One untimed run first, on both: HDFS's DataNodes are JVMs whose first thousands of
  # packets run in the interpreter (its first timed run was up to 2.6x slower than its
  # third), which is start-up cost, not the steady state being compared.
  write_site "$WORK/client" core "fs.defaultFS=$URL"
  java $JAVA_OPTS -cp "$WORK/client:$CLASSES:$HADOOP_CP" WalBench "$URL" /bench/warm-up 16 1000 512 hflush "$SECS" > /dev/null 2>>"$OUT/client-$sys.log"
  # Every hflush run before any hsync run: an hsync run leaves writeback behind that
  # slowed the hflush run after it (on both systems) when the two were interleaved.
  for mode in hflush hsync; do
    for rep in $(seq 1 "$REPS"); do
      for writers in 16 64; do run "$sys" "$writers" "$mode" "$rep"; done
    done
  done
  for p in ${DN_PIDS:-}; do stop_server "$p"; done
  stop_server "$PID"
  DN_PIDS=""
done
python3 - "$OUT/results.txt" <<'PY' | tee "$OUT/summary.txt"
import statistics, sys
rows = [dict(kv.split("=", 1) for kv in l.split() if "=" in kv) for l in open(sys.argv[1]) if l.startswith("system=")]
def med(sys_, w, m, k):
    v = [float(r[k]) for r in rows if r["system"] == sys_ and r["writers"] == w and r["mode"] == m and k in r]
    return statistics.median(v) if v else float("nan")
print(f"{'writers':>7} {'mode':>6} | {'flushes/s HDFS':>14} {'Ferrite':>8} {'ratio':>6} | {'p50 µs HDFS':>11} {'Ferrite':>8} | {'p99 µs HDFS':>11} {'Ferrite':>8} {'ratio':>6} | {'DN CPU µs HDFS':>14} {'Ferrite':>8} {'ratio':>6} | {'client CPU µs HDFS':>18} {'Ferrite':>8}")
for w in ("16", "64"):
    for m in ("hflush", "hsync"):
        keys = ("flushes_per_s", "p50_us", "p99_us", "dn_cpu_us", "client_cpu_us")
        f = {k: (med("hdfs", w, m, k), med("ferrite", w, m, k)) for k in keys}
        r = lambda k: f[k][1] / f[k][0] if f[k][0] else float("nan")
        print(f"{w:>7} {m:>6} | {f['flushes_per_s'][0]:>14.0f} {f['flushes_per_s'][1]:>8.0f} {r('flushes_per_s'):>5.2f}x | "
              f"{f['p50_us'][0]:>11.0f} {f['p50_us'][1]:>8.0f} | {f['p99_us'][0]:>11.0f} {f['p99_us'][1]:>8.0f} {r('p99_us'):>5.2f}x | "
              f"{f['dn_cpu_us'][0]:>14.1f} {f['dn_cpu_us'][1]:>8.1f} {r('dn_cpu_us'):>5.2f}x | "
              f"{f['client_cpu_us'][0]:>18.1f} {f['client_cpu_us'][1]:>8.1f}")
PY
echo "raw output: $OUT"
