# Shared helpers for the side-by-side benchmark scripts (sourced, not run).
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FERRITE="$ROOT/target/release/ferrite"
JAVA_OPTS="-Djava.net.preferIPv4Stack=true"

build_all() {
  (cd "$ROOT" && cargo build --release -p ferrite -q)
  (cd "$ROOT/bench/java" && mvn -B -q package)
  HADOOP_CP="$(cat "$ROOT/bench/java/target/cp.txt")"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_port() {  # wait_port PORT PID
  for _ in $(seq 1 600); do
    kill -0 "$2" 2>/dev/null || return 1
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.2
  done
  return 1
}

write_site() {  # write_site DIR core|hdfs KEY=VALUE...
  local dir=$1 kind=$2 kv; shift 2
  mkdir -p "$dir"
  { echo '<?xml version="1.0"?><configuration>'
    for kv in "$@"; do echo "<property><name>${kv%%=*}</name><value>${kv#*=}</value></property>"; done
    echo '</configuration>'; } > "$dir/$kind-site.xml"
  cat > "$dir/log4j.properties" <<'L4J'
log4j.rootLogger=WARN,stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=%d %p %c: %m%n
L4J
}

# NN_EXTRA="key=value ..." adds configuration to both servers.

# start_hdfs WORKDIR: a freshly formatted Apache HDFS 3.4.1 NameNode (no DataNodes) on an
# ephemeral loopback port, Hadoop defaults (10 handlers). Sets URL, HTTP and PID.
start_hdfs() {
  local w=$1 port hport; port=$(free_port); hport=$(free_port)
  rm -rf "$w"; mkdir -p "$w"
  write_site "$w/conf" core "fs.defaultFS=hdfs://127.0.0.1:$port" "hadoop.tmp.dir=$w/tmp"
  write_site "$w/conf" hdfs "dfs.namenode.name.dir=file://$w/nn" "dfs.namenode.rpc-bind-host=127.0.0.1" \
    "dfs.namenode.http-address=127.0.0.1:$hport" "dfs.namenode.secondary.http-address=127.0.0.1:0" \
    "dfs.namenode.fs-limits.min-block-size=16" "dfs.namenode.safemode.extension=0" ${NN_EXTRA:-}
  java $JAVA_OPTS -cp "$w/conf:$HADOOP_CP" org.apache.hadoop.hdfs.server.namenode.NameNode -format -force -nonInteractive > "$w/format.log" 2>&1
  java $JAVA_OPTS -cp "$w/conf:$HADOOP_CP" org.apache.hadoop.hdfs.server.namenode.NameNode > "$w/nn.log" 2>&1 &
  PID=$!
  URL="hdfs://127.0.0.1:$port"
  HTTP="http://127.0.0.1:$hport"
  wait_port "$port" "$PID" || { echo "HDFS NameNode did not start; see $w/nn.log" >&2; return 1; }
  sleep 3   # leave start-up safe mode (immediate with no blocks and extension 0)
}

# start_ferrite WORKDIR: a fresh Ferrite NameNode. Sets URL, HTTP (its HTTP port's URL) and PID.
start_ferrite() {
  local w=$1
  rm -rf "$w"; mkdir -p "$w"
  local extra=() kv
  for kv in ${NN_EXTRA:-}; do extra+=(--conf "$kv"); done
  # The journal's sync statistics (logged at INFO when it closes) are the remote runs' sync
  # accounting.
  FERRITE_LOG=warn,ferrite_namenode::journal=info "$FERRITE" namenode --data "$w/data" --port 0 --conf dfs.namenode.fs-limits.min-block-size=16 "${extra[@]}" > "$w/ready" 2> "$w/nn.log" &
  PID=$!
  for _ in $(seq 1 100); do [ -s "$w/ready" ] && break; sleep 0.1; done
  URL="$(awk '{print $2}' "$w/ready")"
  HTTP="$(awk '{print $3}' "$w/ready")"
  [ -n "$URL" ] || { echo "ferrite did not start; see $w/nn.log" >&2; return 1; }
}

stop_server() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# cpu_ticks PID: user+system clock ticks (1/100 s) the process has used so far.
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }

# thread_ticks PID: "NAME TICKS" per thread name (spaces made '_', digits dropped, so a
# pool's threads add up: Ferrite's tokio-rt-worker, HDFS's IPC_Server_handler), sorted.
# A whole-process figure cannot tell which thread a change moved; an A/B of one component
# (the summary, the syncer) reads its own thread here.
thread_ticks() {
  local t
  for t in /proc/"$1"/task/*; do
    printf '%s %s\n' "$(tr ' ' '_' < "$t/comm" | tr -d '0-9')" \
      "$(sed 's/.*) //' "$t/stat" 2>/dev/null | awk '{print $12 + $13}')"
  done 2>/dev/null | awk 'NF == 2 {a[$1] += $2} END {for (k in a) print k, a[k]}' | sort
}

# thread_cpu BEFORE AFTER OPS: "name:µs,name:µs" per op from two thread_ticks files, the
# threads that used at least 0.1 µs per op, busiest first.
thread_cpu() {
  join "$1" "$2" | awk -v n="$3" '{d = ($3 - $2) * 1e4 / n; if (d >= 0.1) printf "%s %.1f\n", $1, d}' \
    | sort -k2 -rn | awk '{printf "%s%s:%s", (NR > 1 ? "," : ""), $1, $2}'
}

# start_hdfs_cluster WORKDIR N: a fresh Apache HDFS 3.4.1 NameNode and N DataNode JVMs on
# loopback (the NameNode's HTTP port NN_HTTP_PORT, if set; else any). Sets URL, PID (the
# NameNode) and DN_PIDS. Returns once a file can be written.
start_hdfs_cluster() {
  local w=$1 n=$2 port i; port=$(free_port)
  rm -rf "$w"; mkdir -p "$w"
  local common=("dfs.namenode.rpc-address=127.0.0.1:$port" "dfs.namenode.rpc-bind-host=127.0.0.1"
    "dfs.namenode.http-address=127.0.0.1:${NN_HTTP_PORT:-0}" "dfs.namenode.secondary.http-address=127.0.0.1:0"
    "dfs.namenode.safemode.extension=0" "dfs.namenode.fs-limits.min-block-size=16" ${NN_EXTRA:-})
  write_site "$w/conf-nn" core "fs.defaultFS=hdfs://127.0.0.1:$port" "hadoop.tmp.dir=$w/tmp-nn"
  write_site "$w/conf-nn" hdfs "${common[@]}" "dfs.namenode.name.dir=file://$w/nn"
  mkdir -p "$w/conf-nn/webapps/hdfs" "$w/conf-nn/webapps/static"
  java $JAVA_OPTS -cp "$w/conf-nn:$HADOOP_CP" org.apache.hadoop.hdfs.server.namenode.NameNode -format -force -nonInteractive > "$w/format.log" 2>&1
  java $JAVA_OPTS -cp "$w/conf-nn:$HADOOP_CP" org.apache.hadoop.hdfs.server.namenode.NameNode > "$w/nn.log" 2>&1 &
  PID=$!
  DN_PIDS=""
  HDFS_COMMON=("${common[@]}")
  for i in $(seq 0 $((n - 1))); do add_hdfs_datanode "$w" "$i" "$port"; done
  URL="hdfs://127.0.0.1:$port"
  wait_port "$port" "$PID" || { echo "HDFS NameNode did not start; see $w/nn.log" >&2; return 1; }
  write_site "$w/conf-probe" core "fs.defaultFS=$URL"
  for _ in $(seq 1 120); do
    if echo x | java $JAVA_OPTS -cp "$w/conf-probe:$HADOOP_CP" org.apache.hadoop.fs.FsShell -D dfs.blocksize=1048576 -put -f - /.probe > /dev/null 2>&1; then
      local live; live=$(java $JAVA_OPTS -cp "$w/conf-probe:$HADOOP_CP" org.apache.hadoop.hdfs.tools.DFSAdmin -report -live 2>/dev/null | grep -c '^Name:' || true)
      [ "$live" -ge "$n" ] && return 0
    fi
    sleep 1
  done
  echo "HDFS cluster did not come up; see $w" >&2; return 1
}

# dn_disk DIR: the DataNode's data directory; with DN_DISK_MB set, an ext4 file system of
# that size on a loop device (so that a node's use is a share of something: the
# balancer's measure; HDFS's DataNode refuses every write on a tmpfs), which
# unmount_dn_disks WORKDIR removes.
dn_disk() {
  mkdir -p "$1"
  if [ -n "${DN_DISK_MB:-}" ]; then
    truncate -s "${DN_DISK_MB}M" "$1.img"
    mkfs.ext4 -q -F -m 0 "$1.img"
    mount -o loop "$1.img" "$1"
  fi
}

unmount_dn_disks() {
  local d
  for d in "$1"/dn*; do
    [ -d "$d" ] && mountpoint -q "$d" && umount "$d"
    case $d in *.img) rm -f "$d" ;; esac
  done
  return 0
}

# add_hdfs_datanode WORKDIR I NN_PORT: HDFS DataNode I of a cluster start_hdfs_cluster
# made (its HDFS_COMMON keys). Appends its pid to DN_PIDS; its transfer address is
# DN_ADDR[I].
add_hdfs_datanode() {
  local w=$1 i=$2 port=$3 xfer; xfer=$(free_port)
  DN_ADDR[$i]="127.0.0.1:$xfer"
  dn_disk "$w/dn$i"
  write_site "$w/conf-dn$i" core "fs.defaultFS=hdfs://127.0.0.1:$port" "hadoop.tmp.dir=$w/tmp-dn$i"
  write_site "$w/conf-dn$i" hdfs "${HDFS_COMMON[@]}" "dfs.datanode.data.dir=file://$w/dn$i" \
    "dfs.datanode.address=127.0.0.1:$xfer" "dfs.datanode.http.address=127.0.0.1:$(free_port)" \
    "dfs.datanode.ipc.address=127.0.0.1:$(free_port)"
  mkdir -p "$w/conf-dn$i/webapps/datanode" "$w/conf-dn$i/webapps/static"
  java $JAVA_OPTS -cp "$w/conf-dn$i:$HADOOP_CP" org.apache.hadoop.hdfs.server.datanode.DataNode > "$w/dn$i.log" 2>&1 &
  DN_PIDS="$DN_PIDS $!"
}

# add_ferrite_datanode WORKDIR I: Ferrite DataNode I of the cluster at URL; waits for its
# ready line. Appends its pid to DN_PIDS; its transfer address is DN_ADDR[I].
add_ferrite_datanode() {
  local w=$1 i=$2
  dn_disk "$w/dn$i"
  FERRITE_LOG=warn "$FERRITE" datanode --namenode "${URL#hdfs://}" --port 0 --ipc-port 0 --data "$w/dn$i" > "$w/dn$i.ready" 2> "$w/dn$i.log" &
  DN_PIDS="$DN_PIDS $!"
  for _ in $(seq 1 100); do [ -s "$w/dn$i.ready" ] && break; sleep 0.1; done
  [ -s "$w/dn$i.ready" ] || { echo "ferrite datanode $i did not start; see $w/dn$i.log" >&2; return 1; }
  DN_ADDR[$i]=$(awk '{print $2}' "$w/dn$i.ready")
}

# start_ferrite_cluster WORKDIR N: a Ferrite NameNode and N DataNode processes (so that the
# NameNode's own CPU can be read from its pid). Sets URL, PID (the NameNode) and DN_PIDS.
start_ferrite_cluster() {
  local w=$1 n=$2 i
  start_ferrite "$w" || return 1
  DN_PIDS=""
  for i in $(seq 0 $((n - 1))); do add_ferrite_datanode "$w" "$i" || return 1; done
  sleep 1   # the first heartbeat and block report
}

# start_ferrite_local WORKDIR N: `ferrite local` with N DataNodes. Sets URL and PID.
start_ferrite_local() {
  local w=$1 n=$2
  rm -rf "$w"; mkdir -p "$w"
  FERRITE_LOG=warn "$FERRITE" local --data "$w/data" --port 0 --datanodes "$n" --conf dfs.namenode.fs-limits.min-block-size=16 > "$w/ready" 2> "$w/local.log" &
  PID=$!
  for _ in $(seq 1 100); do [ -s "$w/ready" ] && break; sleep 0.1; done
  URL="$(awk '{print $2}' "$w/ready")"
  [ -n "$URL" ] || { echo "ferrite did not start; see $w/local.log" >&2; return 1; }
}

NNB=org.apache.hadoop.hdfs.server.namenode.NNThroughputBenchmark

# nnbench SYSTEM URL OP: Hadoop's NNThroughputBenchmark in remote mode against the server
# PID at URL, THREADS threads, N ops; WORK, OUT and HADOOP_CP set by the caller. Appends one
# result line to $OUT/results.txt (and prints it), the benchmark's output to
# $OUT/nnbench-SYSTEM-OP.log.
# NNB_EXTRA="-filesPerDir 1000 ..." adds arguments to NNThroughputBenchmark.
nnbench() {
  write_site "$WORK/client" core "fs.defaultFS=$2"
  write_site "$WORK/client" hdfs
  # NNThroughputBenchmark prints its results through its logger.
  echo "log4j.logger.org.apache.hadoop.hdfs.server.namenode.NNThroughputBenchmark=INFO" >> "$WORK/client/log4j.properties"
  local flag=-files; [ "$3" = mkdirs ] && flag=-dirs
  # The server's CPU over the timed phase only: from the benchmark's "Starting N op(s)"
  # line (its inputs, e.g. the files an open needs, are made before it) to its results.
  # The client JVM's CPU too: on 2 shared cores it bounds what any server can reach.
  # The window also holds the benchmark's clean-up, which runs before it prints: one
  # recursive delete of the op's tree, on both systems alike. -keepResults would not take
  # it out: in 3.4.1 it enters safe mode and saves the namespace there instead.
  local line r="" c0="" c1="" j0="" j1="" jpid="" ops=""
  while IFS= read -r line; do
    echo "$line" >> "$OUT/nnbench-$1-$3.log"
    case $line in
      *"Starting "*)
        c0=$(cpu_ticks "$PID"); thread_ticks "$PID" > "$WORK/threads0"
        jpid=$(pgrep -n -f "$NNB -fs $2 -op $3 " || true)
        [ -n "$jpid" ] && j0=$(cpu_ticks "$jpid") ;;
      *"# operations:"*)
        # The client first: the JVM exits right after its last lines, while thread_ticks
        # (three processes per server thread) can take a second.
        [ -n "$jpid" ] && j1=$(cpu_ticks "$jpid" 2>/dev/null || true)
        c1=$(cpu_ticks "$PID"); thread_ticks "$PID" > "$WORK/threads1"
        ops=${line##*operations: }; ops=${ops%% *} ;;
      *"Ops per sec"*) r=${line##* } ;;
    esac
  done < <(java $JAVA_OPTS -cp "$WORK/client:$HADOOP_CP" $NNB -fs "$2" -op "$3" -threads "$THREADS" $flag "$N" ${NNB_EXTRA:-} 2>&1)
  local cpu_us="" client_us="" threads=""
  if [ -n "$c0" ] && [ -n "$c1" ] && [ "${ops:-0}" -gt 0 ] 2>/dev/null; then
    threads=$(thread_cpu "$WORK/threads0" "$WORK/threads1" "$ops")
    # One decimal: a run's few hundred 10 ms ticks resolve about 1%, which whole
    # microseconds (8 against 9 for an open) threw away.
    cpu_us=$(awk -v t=$((c1 - c0)) -v n="$ops" 'BEGIN { printf "%.1f", t * 1e6 / 100 / n }')
    if [ -n "$j0" ] && [ -n "$j1" ]; then
      client_us=$(awk -v t=$((j1 - j0)) -v n="$ops" 'BEGIN { printf "%.1f", t * 1e6 / 100 / n }')
    fi
  fi
  echo "system=$1 driver=nnthroughput-remote op=$3 ops_per_s=${r:-FAILED} server_cpu_us_per_op=${cpu_us:-NA} client_cpu_us_per_op=${client_us:-NA} server_threads_us_per_op=${threads:-NA} load=$(loadavg)" | tee -a "$OUT/results.txt"
}
