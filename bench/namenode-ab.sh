#!/usr/bin/env bash
# A/B probe for one NameNode change: Hadoop 3.4.1's NNThroughputBenchmark (remote mode,
# 64 threads) against a fresh Ferrite NameNode per run, alternating the variants run by run
# so both see the same machine. Prints ops/s and the NameNode's CPU µs per op (from
# /proc/PID/stat around the timed phase) for each run. Not a comparison with HDFS: that is
# namenode-vs-hdfs.sh.
#
#   bench/namenode-ab.sh [-r REPS] [-n OPS] [-o "create mkdirs ..."] VARIANT...
#
# A VARIANT is BINARY or BINARY:KEY=VALUE,KEY=VALUE (configuration for that run), e.g.
#   bench/namenode-ab.sh -o "create mkdirs" /tmp/before target/release/ferrite \
#     target/release/ferrite:ferrite.journal.group-commit.delay.us=100
# Needs the Java client classpath: run namenode-vs-hdfs.sh once (or build_all) first.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
REPS=2; N=50000; OPS="create mkdirs rename delete open fileStatus"
while getopts "r:n:o:" o; do
  case $o in r) REPS=$OPTARG ;; n) N=$OPTARG ;; o) OPS=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-r REPS] [-n OPS] [-o OPS] VARIANT..." >&2; exit 2; }
HADOOP_CP="$(cat "$ROOT/bench/java/target/cp.txt")"
WORK=$(mktemp -d /tmp/ferrite-ab.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# run VARIANT OP: one NNThroughputBenchmark run against a fresh NameNode.
run() {
  local variant=$1 op=$2 kv c0="" c1="" ops="" rate=""
  FERRITE=${variant%%:*}
  NN_EXTRA=""
  if [[ $variant == *:* ]]; then
    for kv in ${variant#*:}; do NN_EXTRA+="${kv//,/ } "; done
  fi
  start_ferrite "$WORK/ferrite"
  write_site "$WORK/client" core "fs.defaultFS=$URL"
  write_site "$WORK/client" hdfs
  echo "log4j.logger.org.apache.hadoop.hdfs.server.namenode.NNThroughputBenchmark=INFO" >> "$WORK/client/log4j.properties"
  local flag=-files
  [ "$op" = mkdirs ] && flag=-dirs
  while IFS= read -r line; do
    case $line in
      *"Starting "*) c0=$(cpu_ticks "$PID") ;;
      *"# operations:"*) c1=$(cpu_ticks "$PID"); ops=${line##*operations: }; ops=${ops%% *} ;;
      *"Ops per sec"*) rate=${line##* } ;;
    esac
  done < <(java $JAVA_OPTS -cp "$WORK/client:$HADOOP_CP" org.apache.hadoop.hdfs.server.namenode.NNThroughputBenchmark \
             -fs "$URL" -op "$op" -threads 64 $flag "$N" 2>&1)
  stop_server "$PID"
  echo "variant=$variant op=$op ops_per_s=${rate%.*} nn_cpu_us_per_op=$(awk -v a="$c0" -v b="$c1" -v n="$ops" 'BEGIN{printf "%.1f", (b-a)*10000/n}')"
}

for _ in $(seq "$REPS"); do
  for op in $OPS; do
    for v in "$@"; do run "$v" "$op"; done
  done
done
