#!/usr/bin/env bash
# NameNode metadata throughput and memory: Ferrite against Apache HDFS 3.4.1, same machine,
# same workloads, same clients, fresh server for every run. Prints a table of medians and
# ratios; raw output goes to bench/run/namenode-<time>/.
#
#   bench/namenode-vs-hdfs.sh [-r REPS] [-t THREADS] [-n OPS] [-f FILES] [-s]
#     -r 3        repetitions of every throughput run
#     -t 64       client threads (our driver: one connection each; NNThroughputBenchmark: its threads)
#     -n 100000   operations per op
#     -f 1000000  files for the memory-per-inode probe
#     -s          skip the memory probes
#
# Operations are NNThroughputBenchmark's: create (no close), mkdirs, open, fileStatus, rename,
# delete. In-process: Hadoop's NNThroughputBenchmark with its own NameNode in the JVM, against
# `ferrite bench namenode --inproc` (the real NameNode, called without sockets); both journal to
# the same local disk. Remote: a fresh server per system, driven by `ferrite bench namenode`
# (Rust, with the server's CPU seconds per operation from /proc/PID/stat) and by Hadoop's
# NNThroughputBenchmark in remote mode. Clients share the 2 cores with the servers.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
REPS=3; THREADS=64; N=100000; FILES=1000000; SKIP_MEM=0
while getopts "r:t:n:f:s" o; do case $o in r) REPS=$OPTARG;; t) THREADS=$OPTARG;; n) N=$OPTARG;; f) FILES=$OPTARG;; s) SKIP_MEM=1;; *) exit 2;; esac; done
build_all
OUT="$ROOT/bench/run/namenode-$(date +%Y%m%d-%H%M%S)"; mkdir -p "$OUT"
WORK="${TMPDIR:-/tmp}/ferrite-bench-nn"
echo "# reps=$REPS threads=$THREADS ops=$N files=$FILES  $(nproc) cpus  $(date -u)" | tee "$OUT/params"

nnbench_inproc() {  # Hadoop's NNThroughputBenchmark with its NameNode inside the benchmark JVM
  local w="$WORK/hdfs-inproc"; rm -rf "$w"; mkdir -p "$w"
  write_site "$w/conf" core "hadoop.tmp.dir=$w/tmp"
  write_site "$w/conf" hdfs "dfs.namenode.rpc-bind-host=127.0.0.1" "dfs.namenode.http-bind-host=127.0.0.1" "dfs.namenode.safemode.extension=0"
  echo "log4j.logger.org.apache.hadoop.hdfs.server.namenode.NNThroughputBenchmark=INFO" >> "$w/conf/log4j.properties"
  java $JAVA_OPTS -cp "$w/conf:$HADOOP_CP" org.apache.hadoop.hdfs.server.namenode.NameNode -format -force -nonInteractive > "$w/format.log" 2>&1
  local flag=-files; [ "$1" = mkdirs ] && flag=-dirs
  local r; r=$(java $JAVA_OPTS -cp "$w/conf:$HADOOP_CP" $NNB -op "$1" -threads "$THREADS" $flag "$N" 2>&1 | tee -a "$OUT/nnbench-inproc-$1.log" | grep -E "Ops per sec" | tail -1 | awk '{print $NF}' || true)
  echo "system=hdfs driver=inproc op=$1 ops_per_s=${r:-FAILED} load=$(loadavg)" | tee -a "$OUT/results.txt"
}

OPS="create mkdirs open fileStatus rename delete"
# The disk's own limit, in the same run: one 4 KiB write + fdatasync at a time.
"$FERRITE" bench namenode --inproc --data "$WORK/fsync" --ops fsync-rate | grep '^mode=' | sed 's/^/system=disk /' | tee -a "$OUT/results.txt"

for rep in $(seq 1 "$REPS"); do
  # In-process: each NameNode called without sockets, journal on the same local disk.
  for op in $OPS; do nnbench_inproc "$op"; done
  "$FERRITE" bench namenode --inproc --data "$WORK/ferrite-inproc" --ops "${OPS// /,}" --threads "$THREADS" --count "$N" 2>/dev/null \
    | grep '^mode=' | sed "s/^mode=inproc /system=ferrite driver=inproc rep=$rep /" | tee -a "$OUT/results.txt"
  # Remote: fresh server per system; our client (with server CPU per op) and Hadoop's.
  for sys in hdfs ferrite; do
    "start_$sys" "$WORK/$sys"
    "$FERRITE" bench namenode --fs "$URL" --pid "$PID" --ops "${OPS// /,}" --threads "$THREADS" --count "$N" 2>&1 \
      | grep '^mode=' | sed "s/^mode=rpc /system=$sys driver=ferrite-bench rep=$rep /" | tee -a "$OUT/results.txt"
    for op in $OPS; do nnbench "$sys" "$URL" "$op"; done
    # RSS right after the suite, and again after 8 quiet seconds (the same wait for both: a
    # JVM keeps its heap either way; Ferrite hands freed heap back once idle, see memory.rs).
    busy=$(awk '/VmRSS/{print $2}' /proc/$PID/status)
    sleep 8
    echo "system=$sys rep=$rep rss_kib_after=$busy rss_kib_idle=$(awk '/VmRSS/{print $2}' /proc/$PID/status) peak_rss_kib=$(awk '/VmHWM/{print $2}' /proc/$PID/status) threads=$(awk '/Threads/{print $2}' /proc/$PID/status)" | tee -a "$OUT/results.txt"
    stop_server "$PID"
    # Sync accounting over RPC (both drivers, the whole suite): the journal's closing line.
    if [ "$sys" = ferrite ]; then
      sed 's/\x1b\[[0-9;]*m//g' "$WORK/ferrite/nn.log" | grep 'journal sync statistics' | tail -1 \
        | grep -o 'syncs=.*' | sed "s/^/system=ferrite rep=$rep remote_journal /" | tee -a "$OUT/results.txt" || true
    fi
  done
done

# Restart: replay 1,000,000 journaled creates (no image), timed.
"$FERRITE" bench namenode --inproc --data "$WORK/ferrite-restart" --ops restart --files "$FILES" --threads "$THREADS" 2>/dev/null | grep '^mode=' | sed 's/^mode=inproc /system=ferrite probe=restart /' | tee -a "$OUT/results.txt"

if [ "$SKIP_MEM" = 0 ]; then
  # Memory per empty file. Ferrite: RSS growth of the server process. HDFS: live Java heap
  # growth after a full GC (jcmd GC.class_histogram), which flatters HDFS (it excludes GC
  # headroom the JVM really holds). The retry cache is off on both for this probe, so that
  # what is measured is the namespace (its cost is reported separately below).
  export NN_EXTRA="dfs.namenode.enable.retrycache=false"
  start_hdfs "$WORK/hdfs"
  heap() { jcmd "$PID" GC.class_histogram | awk '/^Total/{print $3}'; }
  before=$(heap)
  "$FERRITE" bench namenode --fs "$URL" --pid "$PID" --ops inode-memory --files "$FILES" --threads 16 --keep | grep '^op=' | tee -a "$OUT/raw-mem.txt"
  after=$(heap)
  echo "system=hdfs probe=inode-memory files=$FILES live_heap_bytes_per_file=$(( (after - before) / FILES )) rss_kib=$(awk '/VmRSS/{print $2}' /proc/$PID/status)" | tee -a "$OUT/results.txt"
  "$FERRITE" bench namenode --fs "$URL" --pid "$PID" --ops listing | grep '^op=' | sed 's/^/system=hdfs /' | tee -a "$OUT/results.txt"
  stop_server "$PID"

  start_ferrite "$WORK/ferrite"
  "$FERRITE" bench namenode --fs "$URL" --pid "$PID" --ops inode-memory --files "$FILES" --threads 16 --keep | grep '^op=' \
    | sed 's/^/system=ferrite probe=inode-memory /' | tee -a "$OUT/results.txt"
  "$FERRITE" bench namenode --fs "$URL" --pid "$PID" --ops listing | grep '^op=' | sed 's/^/system=ferrite /' | tee -a "$OUT/results.txt"
  stop_server "$PID"
  unset NN_EXTRA
  # What the retry cache holds per create for its 10 minutes (both at Hadoop defaults).
  start_ferrite "$WORK/ferrite"
  "$FERRITE" bench namenode --fs "$URL" --pid "$PID" --ops inode-memory --files "$FILES" --threads 16 --keep | grep '^op=' \
    | sed 's/^/system=ferrite probe=inode-memory-with-retry-cache /' | tee -a "$OUT/results.txt"
  stop_server "$PID"
fi

python3 "$ROOT/bench/summarize.py" "$OUT/results.txt" | tee "$OUT/summary.md"
