#!/usr/bin/env bash
# Block access tokens, Ferrite against Apache HDFS 3.4.1 (HDFS-1081's benchmark): the raw
# getBlockLocations round trip with Hadoop's own client (ClientProtocol, one call at a
# time) for files of 1..1000 blocks, tokens off and on, on one NameNode + one DataNode of
# each system (all four clusters run side by side, and one JVM alternates its calls among
# them). Prints mean and median per size, the cost of tokens on each system, Ferrite
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

# All four clusters (HDFS and Ferrite, tokens off and on) run side by side, and every run's
# JVM alternates its calls among them one by one (see TokenBench): both ratios, on/off and
# HDFS/Ferrite, are then measured under the same load and JIT state. Run one after the
# other, HDFS's own 1,000-block figure moved 4.3-7.4 ms between runs minutes apart, and the
# HDFS/Ferrite ratio with it.
names=() urls=() pids=() all_pids=""
for sys in hdfs ferrite; do
  for tokens in false true; do
    export NN_EXTRA="dfs.block.access.token.enable=$tokens"
    if [ "$sys" = hdfs ]; then start_hdfs_cluster "$WORK/hdfs-$tokens" 1; else start_ferrite_cluster "$WORK/ferrite-$tokens" 1; fi
    names+=("system=$sys tokens=$tokens"); urls+=("$URL"); pids+=("$PID"); all_pids="$all_pids $PID ${DN_PIDS:-}"
    DN_PIDS=""
  done
done
write_site "$WORK/client" core "fs.defaultFS=${urls[0]}"
CP="$WORK/client:$CLASSES:$HADOOP_CP"
for url in "${urls[@]}"; do
  java $JAVA_OPTS -cp "$CP" TokenBench "$url" prepare "$SIZES" 2>>"$OUT/client.log"
done
label=""  # sed: target=i -> the cluster's system and setting
for i in "${!names[@]}"; do label="$label s/^target=$i /${names[$i]} rep=REP /;"; done
URLS=$(IFS=,; echo "${urls[*]}"); PIDS=$(IFS=,; echo "${pids[*]}")
for rep in $(seq 1 "$REPS"); do
  java $JAVA_OPTS -cp "$CP" TokenBench "$URLS" measure "$SIZES" "$CALLS" "$PIDS" 2>>"$OUT/client.log" \
    | sed "$label s/ rep=REP / rep=$rep /; s/\$/ load=$(loadavg | tr ' ' ,)/" | tee -a "$OUT/results.txt"
done
for p in $all_pids; do stop_server "$p"; done
python3 "$ROOT/bench/summarize_tokens.py" "$OUT/results.txt" | tee "$OUT/summary.txt"
echo "raw output: $OUT"
