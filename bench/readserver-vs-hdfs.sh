#!/usr/bin/env bash
# The DataNode read server against Apache HDFS 3.4.1's DataNode (HDFS-918's cases), one
# DataNode each, replication 1, warm page cache, Hadoop's own client for both:
#   1. one client streaming a SIZE MiB file: MiB/s, with the loopback single-stream limit
#      measured in the same run (alternating with the raw stream, medians of each);
#   2. READERS clients doing 32 KiB preads at random offsets for SECS: ops/s, p50/p99, and
#      DataNode CPU per read;
#   3. SLOWN slow readers (4 KiB, then 500 ms asleep) for SLOW seconds;
#   4. 128 threads of random preads;
# with the DataNode's threads, open descriptors and RSS sampled every second throughout.
# Raw output goes to bench/run/readserver-<time>/.
#
#   bench/readserver-vs-hdfs.sh [-s SIZE_MB] [-t SECS] [-l SLOW_SECS] [-n SLOWN] [-r REPS]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
SIZE=1024; SECS=20; SLOW=60; SLOWN=2000; READERS=200; REPS=3
while getopts "s:t:l:n:r:" o; do
  case $o in s) SIZE=$OPTARG;; t) SECS=$OPTARG;; l) SLOW=$OPTARG;; n) SLOWN=$OPTARG;; r) REPS=$OPTARG;; *) exit 2;; esac
done
build_all
OUT="$ROOT/bench/run/readserver-$(date +%Y%m%d-%H%M%S)"; mkdir -p "$OUT"
WORK="${TMPDIR:-/tmp}/ferrite-bench-rs"; mkdir -p "$WORK"
CLASSES="$WORK/classes"; mkdir -p "$CLASSES"
javac -cp "$HADOOP_CP" -d "$CLASSES" "$ROOT/bench/java/src/ReadBench.java"
echo "# size=${SIZE}MiB secs=$SECS slow=${SLOW}s x$SLOWN readers=$READERS reps=$REPS  $(nproc) cpus  $(date -u)" | tee "$OUT/params"

# sample PID FILE: threads, descriptors and RSS every second until stopped.
sample() {
  while kill -0 "$1" 2>/dev/null; do
    echo "threads=$(awk '/^Threads/{print $2}' /proc/$1/status) fds=$(ls /proc/$1/fd | wc -l) rss_kb=$(awk '/^VmRSS/{print $2}' /proc/$1/status)"
    sleep 1
  done > "$2"
}
# peak FILE KEY: the largest KEY=value sampled.
peak() { sed -n "s/.*$2=\([0-9]*\).*/\1/p" "$1" | sort -n | tail -1; }

phase() {  # phase SYSTEM NAME JAVA-ARGS...: runs the client with the DataNode sampled
  local sys=$1 name=$2; shift 2
  local samples="$OUT/samples-$sys-$name.txt" c0 c1 sp
  sample "$DN" "$samples" & sp=$!
  c0=$(cpu_ticks "$DN")
  java $JAVA_OPTS -Xss512k -cp "$CP" ReadBench "$URL" "$@" 2>>"$OUT/client-$sys.log" > "$OUT/out-$sys-$name.txt"
  c1=$(cpu_ticks "$DN")
  kill "$sp" 2>/dev/null || true; wait "$sp" 2>/dev/null || true
  echo "system=$sys phase=$name $(tr '\n' ' ' < "$OUT/out-$sys-$name.txt") dn_cpu_ticks=$((c1 - c0)) peak_threads=$(peak "$samples" threads) peak_fds=$(peak "$samples" fds) peak_rss_kb=$(peak "$samples" rss_kb) load=$(loadavg | tr ' ' ,)" \
    | tee -a "$OUT/results.txt"
}

run() {  # run SYSTEM: the four cases against the running cluster
  local sys=$1 i
  DN=${DN_PIDS# }; DN=${DN%% *}
  write_site "$WORK/client-$sys" core "fs.defaultFS=$URL"
  write_site "$WORK/client-$sys" hdfs "dfs.replication=1"
  CP="$WORK/client-$sys:$CLASSES:$HADOOP_CP"
  java $JAVA_OPTS -cp "$CP" ReadBench "$URL" write /rb/f "$SIZE" 2>>"$OUT/client-$sys.log"
  java $JAVA_OPTS -cp "$CP" ReadBench "$URL" stream /rb/f 1 > /dev/null 2>>"$OUT/client-$sys.log"  # warm the cache
  sleep 12  # threads left from the write's blocking work retire after 10 s idle
  echo "system=$sys phase=idle threads=$(awk '/^Threads/{print $2}' /proc/$DN/status) fds=$(ls /proc/$DN/fd | wc -l) rss_kb=$(awk '/^VmRSS/{print $2}' /proc/$DN/status)" | tee -a "$OUT/results.txt"
  for i in $(seq 1 "$REPS"); do phase "$sys" "stream$i" stream /rb/f 1; done
  # The server's own rate: READ_BLOCK packets received and dropped, no CRC work (and with
  # CRCs checked, for a client that verifies), by `ferrite bench stream` against each system.
  # Each pass alternates with a loopback blast of twice the bytes, so that the limit and the
  # stream see the same moments of this shared machine's load, and the medians compare.
  for i in $(seq 1 $((2 * REPS))); do
    java $JAVA_OPTS -cp "$CP" ReadBench - loopback $((2 * SIZE)) | sed "s/^/system=$sys phase=loopback /" | tee -a "$OUT/results.txt"
    "$FERRITE" bench stream --fs "$URL" /rb/f --reps 1 | sed "s/^/system=$sys phase=raw_/" | tee -a "$OUT/results.txt"
  done
  "$FERRITE" bench stream --fs "$URL" /rb/f --reps "$REPS" --verify | sed "s/^/system=$sys phase=rawv_/" | tee -a "$OUT/results.txt"
  # The same stream with Ferrite's Rust client (hardware CRC32C, no JVM), against each
  # system: the Java client tops out below what the servers can send.
  for i in $(seq 1 "$REPS"); do
    local t0 t1
    t0=$(date +%s.%N)
    FERRITE_LOG=warn "$FERRITE" dfs -fs "$URL" -cat /rb/f > /dev/null
    t1=$(date +%s.%N)
    echo "system=$sys phase=rust_stream$i mib_per_s=$(python3 -c "print(round($SIZE / ($t1 - $t0), 1))")" | tee -a "$OUT/results.txt"
  done
  phase "$sys" pread200 pread /rb/f "$READERS" "$SECS" 32
  phase "$sys" slow slow /rb/f "$SLOWN" "$SLOW"
  phase "$sys" rand128 pread /rb/f 128 "$SECS" 32
}

start_hdfs_cluster "$WORK/hdfs" 1; run hdfs
stop_server "$PID"; for p in $DN_PIDS; do stop_server "$p"; done
start_ferrite_cluster "$WORK/ferrite" 1; run ferrite
stop_server "$PID"; for p in $DN_PIDS; do stop_server "$p"; done

python3 "$ROOT/bench/summarize_readserver.py" "$OUT/results.txt" | tee "$OUT/summary.txt"
echo "raw output: $OUT"
