#!/usr/bin/env bash
# Block access tokens, Ferrite against Apache HDFS 3.4.1 (HDFS-1081's benchmark): the raw
# getBlockLocations round trip with Hadoop's own client (ClientProtocol, one call at a
# time) for files of 1..1000 blocks, tokens off and on, on one NameNode + one DataNode of
# each system (the off and on clusters of a system run side by side, their calls
# alternating). Prints mean and median per size, the cost of tokens on each system, Ferrite
# against HDFS, and each NameNode's CPU per call at 1,000 blocks. Raw output goes to
# bench/run/tokens-<time>/.
#
#   bench/tokens-vs-hdfs.sh [-r REPS] [-c CALLS]
#     -r 3     runs per system and setting (medians over runs are reported)
#     -c 100   timed calls per size and run
set -euo pipefail
. "$(dirname "$0")/lib.sh"
REPS=3; CALLS=100
SIZES=1,2,5,10,20,50,100,250,500,1000
while getopts "r:c:" o; do case $o in r) REPS=$OPTARG;; c) CALLS=$OPTARG;; *) exit 2;; esac; done
build_all
OUT="$ROOT/bench/run/tokens-$(date +%Y%m%d-%H%M%S)"; mkdir -p "$OUT"
WORK="${TMPDIR:-/tmp}/ferrite-bench-tok"; mkdir -p "$WORK"
CLASSES="$WORK/classes"; mkdir -p "$CLASSES"
javac -cp "$HADOOP_CP" -d "$CLASSES" "$ROOT/bench/java/src/TokenBench.java"
echo "# reps=$REPS calls=$CALLS sizes=$SIZES  $(nproc) cpus  $(date -u)" | tee "$OUT/params"

# Per system, two clusters side by side, tokens off (target 0) and on (target 1); every
# run's JVM alternates its calls between them (see TokenBench), so the on/off ratio is
# measured under the same load and JIT state.
bench() {  # bench SYSTEM URL_OFF,URL_ON PID_OFF,PID_ON
  write_site "$WORK/client" core "fs.defaultFS=${2%%,*}"
  local cp="$WORK/client:$CLASSES:$HADOOP_CP" rep url
  for url in ${2//,/ }; do
    java $JAVA_OPTS -cp "$cp" TokenBench "$url" prepare "$SIZES" 2>>"$OUT/client-$1.log"
  done
  for rep in $(seq 1 "$REPS"); do
    java $JAVA_OPTS -cp "$cp" TokenBench "$2" measure "$SIZES" "$CALLS" "$3" 2>>"$OUT/client-$1.log" \
      | sed "s/^target=0 /system=$1 tokens=false rep=$rep /; s/^target=1 /system=$1 tokens=true rep=$rep /" \
      | sed "s/\$/ load=$(loadavg | tr ' ' ,)/" | tee -a "$OUT/results.txt"
  done
}

for sys in hdfs ferrite; do
  urls=() pids=() all_pids=""
  for tokens in false true; do
    export NN_EXTRA="dfs.block.access.token.enable=$tokens"
    if [ "$sys" = hdfs ]; then start_hdfs_cluster "$WORK/hdfs-$tokens" 1; else start_ferrite_cluster "$WORK/ferrite-$tokens" 1; fi
    urls+=("$URL"); pids+=("$PID"); all_pids="$all_pids $PID ${DN_PIDS:-}"
    DN_PIDS=""
  done
  bench "$sys" "${urls[0]},${urls[1]}" "${pids[0]},${pids[1]}"
  for p in $all_pids; do stop_server "$p"; done
done
python3 "$ROOT/bench/summarize_tokens.py" "$OUT/results.txt" | tee "$OUT/summary.txt"
echo "raw output: $OUT"
