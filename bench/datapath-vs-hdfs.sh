#!/usr/bin/env bash
# The data path, Ferrite against Apache HDFS 3.4.1 on the same machine and disk: one client
# (Hadoop's own FileSystem API, in its own JVM) writes a file and then reads it back
# sequentially, with replication 1 and 3, on three DataNodes of each system. Prints the
# median MB/s of each and the ratio, next to what the machine itself can do (page-cache
# write with dd, one loopback TCP stream). Raw output goes to bench/run/datapath-<time>/.
#
#   bench/datapath-vs-hdfs.sh [-r REPS] [-m MIB]
#     -r 3      runs per system and replication (the median is reported)
#     -m 1024   file size in MiB
set -euo pipefail
. "$(dirname "$0")/lib.sh"
REPS=3; MIB=1024
while getopts "r:m:" o; do case $o in r) REPS=$OPTARG;; m) MIB=$OPTARG;; *) exit 2;; esac; done
build_all
OUT="$ROOT/bench/run/datapath-$(date +%Y%m%d-%H%M%S)"; mkdir -p "$OUT"
WORK="${TMPDIR:-/tmp}/ferrite-bench-dp"; mkdir -p "$WORK"
CLASSES="$WORK/classes"; mkdir -p "$CLASSES"
javac -cp "$HADOOP_CP" -d "$CLASSES" "$ROOT/bench/java/src/DataPathBench.java"
echo "# reps=$REPS size=${MIB}MiB  $(nproc) cpus  $(date -u)" | tee "$OUT/params"

# The machine's own limits, measured in the same run.
dd if=/dev/zero of="$WORK/dd.bin" bs=1M count="$MIB" conv=fdatasync 2>&1 | tail -1 | sed 's/^/disk: dd write+fdatasync: /' | tee -a "$OUT/results.txt"
rm -f "$WORK/dd.bin"
python3 - "$MIB" <<'PY' | tee -a "$OUT/results.txt"
import socket, sys, threading, time
n = int(sys.argv[1]) << 20
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
def sink():
    c, _ = srv.accept(); got = 0
    while got < n:
        b = c.recv(1 << 20)
        if not b: break
        got += len(b)
t = threading.Thread(target=sink); t.start()
s = socket.create_connection(srv.getsockname()); buf = b"\0" * (1 << 20)
t0 = time.time()
for _ in range(n >> 20): s.sendall(buf)
s.close(); t.join()
print(f"loopback: one TCP stream: {n / 1e6 / (time.time() - t0):.0f} MB/s")
PY

run_client() {  # run_client SYSTEM URL REPL REP
  write_site "$WORK/client" core "fs.defaultFS=$2"
  local r; r=$(java $JAVA_OPTS -cp "$WORK/client:$CLASSES:$HADOOP_CP" DataPathBench "$2" "/bench/dp-$3-$4" "$MIB" "$3" 2>>"$OUT/client-$1.log" | tail -1)
  echo "system=$1 repl=$3 rep=$4 $r load=$(loadavg)" | tee -a "$OUT/results.txt"
}

for sys in hdfs ferrite; do
  if [ "$sys" = hdfs ]; then start_hdfs_cluster "$WORK/hdfs" 3; else start_ferrite_local "$WORK/ferrite" 3; fi
  for rep in $(seq 1 "$REPS"); do
    for repl in 1 3; do run_client "$sys" "$URL" "$repl" "$rep"; done
  done
  stop_server "$PID"
  for p in ${DN_PIDS:-}; do stop_server "$p"; done
  DN_PIDS=""
done
python3 - "$OUT/results.txt" <<'PY' | tee "$OUT/summary.txt"
import re, statistics, sys
rows = [dict(kv.split("=", 1) for kv in l.split() if "=" in kv) for l in open(sys.argv[1]) if l.startswith("system=")]
print(f"{'repl':>4} {'op':>5} {'HDFS MB/s':>10} {'Ferrite MB/s':>13} {'ratio':>6}")
for repl in ("1", "3"):
    for op in ("write", "read"):
        med = {}
        for sys_ in ("hdfs", "ferrite"):
            v = [float(r[f"{op}_MBps"]) for r in rows if r["system"] == sys_ and r["repl"] == repl and f"{op}_MBps" in r]
            med[sys_] = statistics.median(v) if v else float("nan")
        print(f"{repl:>4} {op:>5} {med['hdfs']:>10.0f} {med['ferrite']:>13.0f} {med['ferrite'] / med['hdfs']:>5.2f}x")
PY
echo "raw output: $OUT"
