#!/usr/bin/env bash
# Ferrite's HA nameservice (three `ferrite namenode` processes, one Raft group) against a
# lone Ferrite NameNode on the same machine:
#  1. Replicated creates: Hadoop's NNThroughputBenchmark (remote, THREADS threads, COUNT
#     creates) against the active of a fresh HA group and against a fresh lone NameNode,
#     alternating run by run; prints each run and the median ratio HA / single.
#  2. Failover time as the Java client sees it: FailoverBench (bench/java/src) creates
#     through hdfs://bench/ with ConfiguredFailoverProxyProvider and the client's default
#     retry settings; each round kills the active with SIGKILL (restarting it 3 s later)
#     and times from the kill to the first create that succeeds.
#  1b. The same creates against HDFS's own HA: Hadoop's MiniQJMHACluster (bench/java/src/
#     QjmHaCluster.java: three JournalNodes syncing to disk, two NameNodes, in one JVM),
#     its first NameNode active; prints the ratio Ferrite HA / HDFS QJM. (That JVM holds
#     all five servers, so its CPU per op is the whole HA group's, not the active's.)
#  2b. The same failover timing for HDFS's own automatic failover: QjmFailoverBench runs a
#     ZooKeeper server, MiniQJMHACluster and a DFSZKFailoverController per NameNode in one
#     JVM with HDFS's default timeouts, stops the active NameNode each round (its ZKFC lives
#     on, as when only the NameNode's process dies) and times to the first create.
# Raw output goes to bench/run/ha-<time>/.
#
#   bench/ha-vs-single.sh [-r RUNS] [-n COUNT] [-t THREADS] [-k ROUNDS] [-p creates|failover]
# CLIENT_EXTRA="key=value ..." adds client keys, e.g. the failover proxy's pauses
# (dfs.client.failover.sleep.base.millis, 500 by default, doubling per failover).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
RUNS=3; COUNT=100000; THREADS=64; ROUNDS=20; PART=both
while getopts "r:n:t:k:p:" o; do case $o in r) RUNS=$OPTARG;; n) COUNT=$OPTARG;; t) THREADS=$OPTARG;; k) ROUNDS=$OPTARG;; p) PART=$OPTARG;; *) exit 2;; esac; done
build_all
OUT="$ROOT/bench/run/ha-$(date +%Y%m%d-%H%M%S)"; mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/ferrite-bench-ha.XXXXXX)
PIDS="$WORK/pids"; : > "$PIDS"
cleanup() { while read -r p; do kill -9 "$p" 2>/dev/null || true; done < "$PIDS"; cp "$WORK/client/hdfs-site.xml" "$OUT/client-hdfs-site.xml" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
echo "# runs=$RUNS count=$COUNT threads=$THREADS rounds=$ROUNDS  $(nproc) cpus  $(date -u)" | tee "$OUT/params"

# ha_conf: the keys of nameservice `bench` on free loopback ports, as --conf pairs in
# $WORK/ha.args and as the client's hdfs-site.xml in $WORK/client; RPCS lists the NameNodes.
ha_conf() {
  local keys=("dfs.nameservices=bench" "dfs.ha.namenodes.bench=nn1,nn2,nn3"
    "dfs.namenode.fs-limits.min-block-size=16"
    "dfs.client.failover.proxy.provider.bench=org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider"
    ${CLIENT_EXTRA:-})
  RPCS=""
  for n in nn1 nn2 nn3; do
    local rpc="127.0.0.1:$(free_port)"
    keys+=("dfs.namenode.rpc-address.bench.$n=$rpc" "ferrite.ha.raft-address.bench.$n=127.0.0.1:$(free_port)"
      "dfs.namenode.http-address.bench.$n=127.0.0.1:$(free_port)")
    RPCS="$RPCS${RPCS:+,}$rpc"
  done
  printf -- '--conf\n%s\n' "${keys[@]}" > "$WORK/ha.args"
  write_site "$WORK/client" core "fs.defaultFS=hdfs://bench"
  write_site "$WORK/client" hdfs "${keys[@]}"
}

# start_member I: NameNode nnI of the group, its pid in $WORK/nnI.pid.
start_member() {
  local i=$1 args; mapfile -t args < "$WORK/ha.args"
  FERRITE_LOG=warn "$FERRITE" namenode --data "$WORK/nn$i" "${args[@]}" --conf "dfs.ha.namenode.id=nn$i" \
    > "$WORK/nn$i.ready" 2>> "$WORK/nn$i.log" &
  echo $! > "$WORK/nn$i.pid"; echo $! >> "$PIDS"
}

# active_of: the RPC address and member number of the active NameNode, once there is one.
active_of() {
  local line
  for _ in $(seq 1 200); do
    line=$("$FERRITE" admin --fs "hdfs://$RPCS" ha-status 2>/dev/null | awk '$4 == "active" {print $1, $2}' || true)
    [ -n "$line" ] && { echo "$line"; return 0; }
    sleep 0.1
  done
  echo "no active NameNode" >&2; return 1
}

# start_qjm: HDFS's QJM HA group (QjmHaCluster) in one JVM, held open through fd 7. Sets
# URL and PID (the JVM's).
start_qjm() {
  local w="$WORK/qjm"
  rm -rf "$w"; mkdir -p "$w"; write_site "$w/conf" core; mkfifo "$w/in"
  java $JAVA_OPTS -Dtest.build.data="$w/data" -cp "$w/conf:$CLASSES:$HADOOP_CP" QjmHaCluster "$w/data" 2 \
    < "$w/in" > "$w/ready" 2> "$w/qjm.log" &
  PID=$!; echo "$PID" >> "$PIDS"
  exec 7> "$w/in"
  for _ in $(seq 1 600); do [ -s "$w/ready" ] && break; sleep 0.2; done
  URL="$(awk '{print $2}' "$w/ready")"
  [ -n "$URL" ] || { echo "MiniQJMHACluster did not start; see $w/qjm.log" >&2; return 1; }
}
stop_qjm() { exec 7>&-; wait "$PID" 2>/dev/null || true; }

start_group() {
  ha_conf
  rm -rf "$WORK"/nn?; for i in 1 2 3; do start_member "$i"; done
  read -r ACTIVE ACTIVE_ID < <(active_of)
}
stop_group() { for i in 1 2 3; do stop_server "$(cat "$WORK/nn$i.pid")"; done; }

CLASSES="$WORK/classes"; mkdir -p "$CLASSES"
javac -cp "$HADOOP_CP" -d "$CLASSES" "$ROOT/bench/java/src/"{FailoverBench,QjmHaCluster,QjmFailoverBench}.java

if [ "$PART" != failover ]; then
  N=$COUNT
  for run in $(seq "$RUNS"); do
    start_ferrite "$WORK/single"; nnbench single "$URL" create; stop_server "$PID"
    start_group; PID=$(cat "$WORK/nn$ACTIVE_ID.pid")
    nnbench ha "hdfs://$ACTIVE" create; stop_group
    start_qjm; nnbench hdfs_qjm "$URL" create; stop_qjm
  done
  python3 - "$OUT/results.txt" <<'PY' | tee "$OUT/summary"
import re, statistics, sys
r = {}
for line in open(sys.argv[1]):
    m = re.search(r"system=(\w+) .*ops_per_s=([\d.]+) server_cpu_us_per_op=([\d.]+|NA)", line)
    if m:
        r.setdefault(m[1], []).append((float(m[2]), m[3]))
for s, v in r.items():
    print(f"{s}: creates/s median {statistics.median(x for x, _ in v):.0f} over {len(v)} runs; "
          f"active's CPU µs/op {[c for _, c in v]}")
if "ha" in r and "single" in r:
    ha = statistics.median(x for x, _ in r["ha"]); one = statistics.median(x for x, _ in r["single"])
    print(f"ratio ha/single {ha / one:.2f}")
if "ha" in r and "hdfs_qjm" in r:
    ha = statistics.median(x for x, _ in r["ha"]); qjm = statistics.median(x for x, _ in r["hdfs_qjm"])
    print(f"ratio ha/hdfs_qjm {ha / qjm:.2f}")
PY
fi

if [ "$PART" != creates ]; then
  start_group
  cat > "$WORK/kill-active.sh" <<KILL
#!/usr/bin/env bash
# Kills the active with SIGKILL; restarts it 3 s later as a standby.
set -euo pipefail
. "$ROOT/bench/lib.sh"; FERRITE="$FERRITE"; WORK="$WORK"; PIDS="$PIDS"; RPCS="$RPCS"
$(declare -f start_member active_of)
read -r _ id < <(active_of)
kill -9 "\$(cat "$WORK/nn\$id.pid")"
( sleep 3; start_member "\$id" ) > /dev/null 2>&1 &
KILL
  chmod +x "$WORK/kill-active.sh"
  java $JAVA_OPTS -cp "$WORK/client:$CLASSES:$HADOOP_CP" FailoverBench hdfs://bench /failover "$ROUNDS" 5 \
    "$WORK/kill-active.sh" 2> "$OUT/failover.log" | tee "$OUT/failover.txt"
  stop_group
  echo "# HDFS: MiniQJMHACluster with a ZKFC per NameNode (QjmFailoverBench)"
  mkdir -p "$WORK/qjm-fo/conf"; write_site "$WORK/qjm-fo/conf" core
  java $JAVA_OPTS -Dtest.build.data="$WORK/qjm-fo" -cp "$WORK/qjm-fo/conf:$CLASSES:$HADOOP_CP" \
    QjmFailoverBench "$WORK/qjm-fo" "$ROUNDS" 5 2> "$OUT/failover-hdfs.log" | tee "$OUT/failover-hdfs.txt"
  python3 - "$OUT/failover.txt" "$OUT/failover-hdfs.txt" <<'PY' | tee -a "$OUT/summary"
import re, sys
med = [int(re.search(r"median (\d+) ms", open(f).read())[1]) for f in sys.argv[1:]]
print(f"failover median: ferrite {med[0]} ms, hdfs {med[1]} ms, ratio ferrite/hdfs {med[0] / med[1]:.2f}")
PY
fi
