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
# Two drivers: `ferrite bench namenode` (our Rust client over real RPC; mkdirs, create =
# create+complete, fileStatus) and Hadoop's own NNThroughputBenchmark in remote mode (mkdirs,
# fileStatus). Both run on this machine with the servers (2 cores shared), so client cost is
# part of every figure.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
REPS=3; THREADS=64; N=100000; FILES=1000000; SKIP_MEM=0
while getopts "r:t:n:f:s" o; do case $o in r) REPS=$OPTARG;; t) THREADS=$OPTARG;; n) N=$OPTARG;; f) FILES=$OPTARG;; s) SKIP_MEM=1;; *) exit 2;; esac; done
build_all
OUT="$ROOT/bench/run/namenode-$(date +%Y%m%d-%H%M%S)"; mkdir -p "$OUT"
WORK="${TMPDIR:-/tmp}/ferrite-bench-nn"
NNB=org.apache.hadoop.hdfs.server.namenode.NNThroughputBenchmark
echo "# reps=$REPS threads=$THREADS ops=$N files=$FILES  $(nproc) cpus  $(date -u)" | tee "$OUT/params"

nnbench() {  # nnbench SYSTEM URL OP COUNTFLAG
  write_site "$WORK/client" core "fs.defaultFS=$2"
  write_site "$WORK/client" hdfs
  # NNThroughputBenchmark prints its results through its logger.
  echo "log4j.logger.org.apache.hadoop.hdfs.server.namenode.NNThroughputBenchmark=INFO" >> "$WORK/client/log4j.properties"
  local r; r=$(java $JAVA_OPTS -cp "$WORK/client:$HADOOP_CP" $NNB -fs "$2" -op "$3" -threads "$THREADS" "$4" "$N" 2>&1 | tee -a "$OUT/nnbench-$1-$3.log" | grep -E "Ops per sec" | tail -1 | awk '{print $NF}' || true)
  echo "system=$1 driver=nnthroughput op=$3 ops_per_s=${r:-FAILED} load=$(loadavg)" | tee -a "$OUT/results.txt"
}

for rep in $(seq 1 "$REPS"); do
  for sys in hdfs ferrite; do
    "start_$sys" "$WORK/$sys"
    "$FERRITE" bench namenode --fs "$URL" --pid "$PID" --ops mkdirs,create,fileStatus --threads "$THREADS" --count "$N" 2>&1 \
      | grep '^op=' | sed "s/^/system=$sys driver=ferrite-bench rep=$rep /; s/\$/ load=$(loadavg)/" | tee -a "$OUT/results.txt"
    nnbench "$sys" "$URL" mkdirs -dirs
    nnbench "$sys" "$URL" fileStatus -files
    echo "system=$sys rep=$rep rss_kib_after=$(awk '/VmRSS/{print $2}' /proc/$PID/status) threads=$(awk '/Threads/{print $2}' /proc/$PID/status)" | tee -a "$OUT/results.txt"
    stop_server "$PID"
  done
done

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
