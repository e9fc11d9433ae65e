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
  local dir=$1 kind=$2; shift 2
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
# ephemeral loopback port, Hadoop defaults (10 handlers). Sets URL and PID.
start_hdfs() {
  local w=$1 port; port=$(free_port)
  rm -rf "$w"; mkdir -p "$w"
  write_site "$w/conf" core "fs.defaultFS=hdfs://127.0.0.1:$port" "hadoop.tmp.dir=$w/tmp"
  write_site "$w/conf" hdfs "dfs.namenode.name.dir=file://$w/nn" "dfs.namenode.rpc-bind-host=127.0.0.1" \
    "dfs.namenode.http-address=127.0.0.1:0" "dfs.namenode.secondary.http-address=127.0.0.1:0" \
    "dfs.namenode.fs-limits.min-block-size=16" "dfs.namenode.safemode.extension=0" ${NN_EXTRA:-}
  java $JAVA_OPTS -cp "$w/conf:$HADOOP_CP" org.apache.hadoop.hdfs.server.namenode.NameNode -format -force -nonInteractive > "$w/format.log" 2>&1
  java $JAVA_OPTS -cp "$w/conf:$HADOOP_CP" org.apache.hadoop.hdfs.server.namenode.NameNode > "$w/nn.log" 2>&1 &
  PID=$!
  URL="hdfs://127.0.0.1:$port"
  wait_port "$port" "$PID" || { echo "HDFS NameNode did not start; see $w/nn.log" >&2; return 1; }
  sleep 3   # leave start-up safe mode (immediate with no blocks and extension 0)
}

# start_ferrite WORKDIR: a fresh Ferrite NameNode. Sets URL and PID.
start_ferrite() {
  local w=$1
  rm -rf "$w"; mkdir -p "$w"
  local extra=() kv
  for kv in ${NN_EXTRA:-}; do extra+=(--conf "$kv"); done
  FERRITE_LOG=warn "$FERRITE" namenode --data "$w/data" --port 0 --conf dfs.namenode.fs-limits.min-block-size=16 "${extra[@]}" > "$w/ready" 2> "$w/nn.log" &
  PID=$!
  for _ in $(seq 1 100); do [ -s "$w/ready" ] && break; sleep 0.1; done
  URL="$(sed 's/^ready //' "$w/ready")"
  [ -n "$URL" ] || { echo "ferrite did not start; see $w/nn.log" >&2; return 1; }
}

stop_server() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
