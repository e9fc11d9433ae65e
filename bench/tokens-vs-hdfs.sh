#!/usr/bin/env bash
# Block access tokens, Ferrite against Apache HDFS 3.4.1 (HDFS-1081's benchmark): the raw
# getBlockLocations round trip with Hadoop's own client (ClientProtocol, one call at a
# time) for files of 1..1000 blocks, tokens off and on, on one NameNode + one DataNode of
# each system. Prints mean and median per size, the cost of tokens on each system, Ferrite
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

bench() {  # bench SYSTEM TOKENS
  write_site "$WORK/client" core "fs.defaultFS=$URL"
  local cp="$WORK/client:$CLASSES:$HADOOP_CP" rep
  java $JAVA_OPTS -cp "$cp" TokenBench "$URL" prepare "$SIZES" 2>>"$OUT/client-$1.log"
  for rep in $(seq 1 "$REPS"); do
    java $JAVA_OPTS -cp "$cp" TokenBench "$URL" measure "$SIZES" "$CALLS" "$PID" 2>>"$OUT/client-$1.log" \
      | sed "s/^/system=$1 tokens=$2 rep=$rep /; s/\$/ load=$(loadavg | tr ' ' ,)/" | tee -a "$OUT/results.txt"
  done
}

for sys in hdfs ferrite; do
  for tokens in false true; do
    export NN_EXTRA="dfs.block.access.token.enable=$tokens"
    if [ "$sys" = hdfs ]; then start_hdfs_cluster "$WORK/hdfs" 1; else start_ferrite_cluster "$WORK/ferrite" 1; fi
    bench "$sys" "$tokens"
    stop_server "$PID"
    for p in ${DN_PIDS:-}; do stop_server "$p"; done
    DN_PIDS=""
  done
done
python3 "$ROOT/bench/summarize_tokens.py" "$OUT/results.txt" | tee "$OUT/summary.txt"
echo "raw output: $OUT"
