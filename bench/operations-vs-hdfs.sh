#!/usr/bin/env bash
# Cluster operations, Ferrite against Apache HDFS 3.4.1 on the same machine: the time to
# decommission a DataNode, and the balancer's time to level two new empty DataNodes, with
# the same throttles on both, and each NameNode's CPU over each phase.
#
# Each system in turn: a NameNode and two DataNodes, each DataNode on a tmpfs of its own
# (an ext4 image on a loop device; the balancer measures use against capacity), BLOCKS blocks of 2 MiB written
# with two replicas (so each of the two nodes holds all of them); two empty DataNodes join.
#   decommission: node 0 goes in the exclude file, `dfsadmin -refreshNodes`, and the clock
#                 runs until the NameNode's JMX counts it decommissioned (every block
#                 copied from node 1 to the new nodes).
#   balancer:     two more empty DataNodes join; Hadoop's Balancer levels HDFS, `ferrite
#                 balancer` levels Ferrite (-threshold 10, blocks of any size), and the
#                 clock runs until it exits.
# Raw output goes to bench/run/operations-<time>/. Needs root (loop mounts).
#
#   bench/operations-vs-hdfs.sh [-r REPS] [-b BLOCKS] [-t THROTTLE]
#     -r 3       runs per system, alternating (medians are reported)
#     -b 1000    blocks (2 MiB each) on the node decommissioned
#     -t hdfs    replication throttles: `hdfs` (HDFS's defaults: 2 streams per node, 2
#                blocks per live node per 3 s interval) or `open` (100 streams, 100 per node)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
REPS=3; BLOCKS=1000; THROTTLE=hdfs
while getopts "r:b:t:" o; do case $o in r) REPS=$OPTARG;; b) BLOCKS=$OPTARG;; t) THROTTLE=$OPTARG;; *) exit 2;; esac; done
build_all
OUT="$ROOT/bench/run/operations-$(date +%Y%m%d-%H%M%S)"; mkdir -p "$OUT"
WORK="${TMPDIR:-/tmp}/ferrite-bench-ops"; mkdir -p "$WORK"
CLASSES="$WORK/classes"; mkdir -p "$CLASSES"
javac -cp "$HADOOP_CP" -d "$CLASSES" "$ROOT/tests/interop/java/src/main/java/ferrite/interop/RunBalancer.java"
# Room for every block twice over: a node ends near the mean, never full.
export DN_DISK_MB=$((BLOCKS * 2 * 3 / 2 + 256))
case $THROTTLE in
  hdfs) throttles="" ;;
  open) throttles="dfs.namenode.replication.max-streams=100 dfs.namenode.replication.max-streams-hard-limit=100 dfs.namenode.replication.work.multiplier.per.iteration=100" ;;
  *) echo "-t hdfs or open" >&2; exit 2 ;;
esac
# HDFS 3.4's DataNodes also keep 1 GiB free beyond a block on each volume by default.
HDFS_DN_ROOM="dfs.datanode.round-robin-volume-choosing-policy.additional-available-space=0"
echo "# reps=$REPS blocks=$BLOCKS throttle=$THROTTLE disk=${DN_DISK_MB}MiB  $(nproc) cpus  $(date -u)" | tee "$OUT/params"
head -c $((BLOCKS * 2 * 1024 * 1024)) /dev/urandom > "$WORK/data.bin"

cleanup() {
  for p in ${ALL_PIDS:-} ${PID:-} ${DN_PIDS:-}; do stop_server "$p"; done
  for sys in hdfs ferrite; do unmount_dn_disks "$WORK/$sys"; done
}
trap cleanup EXIT

# jmx_decommissioned: how many DataNodes the NameNode at HTTP counts decommissioned.
jmx_decommissioned() {
  curl -s "$HTTP/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState" \
    | python3 -c 'import json,sys; b=json.load(sys.stdin)["beans"]; print(b[0]["NumDecomLiveDataNodes"] + b[0]["NumDecomDeadDataNodes"] if b else 0)'
}

elapsed() { python3 -c "import time; print(f'{time.time() - $1:.2f}')"; }

run_one() {  # run_one SYSTEM REP
  local sys=$1 rep=$2 w="$WORK/$1" t0 c0 secs cpu
  unmount_dn_disks "$w"
  # Small blocks everywhere: a DataNode refuses a write unless its small disk has room
  # for a whole block of the size the writer names.
  export NN_EXTRA="dfs.hosts.exclude=$WORK/exclude-$sys dfs.blocksize=2097152 $throttles $HDFS_DN_ROOM"
  : > "$WORK/exclude-$sys"
  ALL_PIDS=""
  if [ "$sys" = hdfs ]; then
    export NN_HTTP_PORT; NN_HTTP_PORT=$(free_port)
    start_hdfs_cluster "$w" 2
    HTTP="http://127.0.0.1:$NN_HTTP_PORT"
    local nn_port=${URL##*:}
  else
    start_ferrite_cluster "$w" 2
  fi
  ALL_PIDS="$PID $DN_PIDS"
  write_site "$WORK/client-$sys" core "fs.defaultFS=$URL"
  local CP="$WORK/client-$sys:$CLASSES:$HADOOP_CP"
  java $JAVA_OPTS -cp "$CP" org.apache.hadoop.fs.FsShell -D dfs.blocksize=2097152 -D dfs.replication=2 \
    -put -f "$WORK/data.bin" /data.bin 2>>"$OUT/client.log"
  for i in 2 3; do
    if [ "$sys" = hdfs ]; then add_hdfs_datanode "$w" "$i" "$nn_port"; else add_ferrite_datanode "$w" "$i"; fi
  done
  ALL_PIDS="$PID $DN_PIDS"
  sleep 10   # the new nodes register and report their space

  echo "${DN_ADDR[0]}" > "$WORK/exclude-$sys"
  t0=$(date +%s.%N); c0=$(cpu_ticks "$PID")
  java $JAVA_OPTS -cp "$CP" org.apache.hadoop.hdfs.tools.DFSAdmin -refreshNodes >>"$OUT/client.log" 2>&1
  until [ "$(jmx_decommissioned)" -ge 1 ]; do sleep 0.2; done
  secs=$(elapsed "$t0"); cpu=$(( $(cpu_ticks "$PID") - c0 ))
  echo "system=$sys rep=$rep phase=decommission blocks=$BLOCKS seconds=$secs nn_cpu_s=$(awk -v c="$cpu" 'BEGIN {printf "%.2f", c / 100}') load=$(loadavg | tr ' ' ,)" | tee -a "$OUT/results.txt"

  for i in 4 5; do
    if [ "$sys" = hdfs ]; then add_hdfs_datanode "$w" "$i" "$nn_port"; else add_ferrite_datanode "$w" "$i"; fi
  done
  ALL_PIDS="$PID $DN_PIDS"
  sleep 10
  t0=$(date +%s.%N); c0=$(cpu_ticks "$PID")
  if [ "$sys" = hdfs ]; then
    java $JAVA_OPTS -cp "$CP" ferrite.interop.RunBalancer -D dfs.balancer.getBlocks.min-block-size=1024 \
      -threshold 10 > "$OUT/balancer-$sys-$rep.log" 2>&1
  else
    FERRITE_LOG=warn "$FERRITE" balancer -fs "$URL" -threshold 10 \
      -D dfs.balancer.getBlocks.min-block-size=1024 > "$OUT/balancer-$sys-$rep.log" 2>&1
  fi
  secs=$(elapsed "$t0"); cpu=$(( $(cpu_ticks "$PID") - c0 ))
  grep -q "The cluster is balanced" "$OUT/balancer-$sys-$rep.log" || echo "# $sys rep $rep: balancer did not finish; see $OUT/balancer-$sys-$rep.log" | tee -a "$OUT/results.txt"
  echo "system=$sys rep=$rep phase=balancer blocks=$BLOCKS seconds=$secs nn_cpu_s=$(awk -v c="$cpu" 'BEGIN {printf "%.2f", c / 100}') load=$(loadavg | tr ' ' ,)" | tee -a "$OUT/results.txt"
  for p in $ALL_PIDS; do stop_server "$p"; done
  ALL_PIDS=""
  unmount_dn_disks "$w"
}

for rep in $(seq 1 "$REPS"); do
  run_one hdfs "$rep"
  run_one ferrite "$rep"
done
python3 - "$OUT/results.txt" <<'PY' | tee "$OUT/summary.txt"
import re, statistics, sys
rows = [dict(kv.split("=", 1) for kv in l.split()) for l in open(sys.argv[1]) if l.startswith("system=")]
print(f"{'phase':<14}{'system':<9}{'median s':>10}{'NN CPU s':>10}")
med = {}
for phase in ("decommission", "balancer"):
    for sys_ in ("hdfs", "ferrite"):
        r = [x for x in rows if x["phase"] == phase and x["system"] == sys_]
        if not r:
            continue
        s = statistics.median(float(x["seconds"]) for x in r)
        c = statistics.median(float(x["nn_cpu_s"]) for x in r)
        med[phase, sys_] = (s, c)
        print(f"{phase:<14}{sys_:<9}{s:>10.2f}{c:>10.2f}")
    if (phase, "hdfs") in med and (phase, "ferrite") in med:
        (hs, hc), (fs, fc) = med[phase, "hdfs"], med[phase, "ferrite"]
        print(f"{phase:<14}ferrite/hdfs time {fs / hs:.2f}  NN CPU {fc / max(hc, 0.01):.2f}")
PY
echo "raw output: $OUT"
