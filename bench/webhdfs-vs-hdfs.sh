#!/usr/bin/env bash
# WebHDFS against Apache HDFS 3.4.1's, one NameNode and one DataNode process each, both
# clusters up at once and taken in turn (the order alternating every round), so that each
# round's figures see the same moments of this shared machine's load. Neutral clients:
#   - wrk (Debian's), CONNS connections for SECS seconds: GETFILESTATUS of a file, and
#     LISTSTATUS of a directory of 100 files; requests/s, latency p50/p99, and the
#     NameNode's CPU per request (its process's ticks over the run / requests);
#   - curl: CREATE of a SIZE MiB file in HDFS's two steps (noredirect=true for the
#     DataNode's URL, then the bytes to it) and OPEN of it following the 307; MiB/s.
# Raw output goes to bench/run/webhdfs-<time>/.
#
#   bench/webhdfs-vs-hdfs.sh [-t SECS] [-c CONNS] [-s SIZE_MB] [-r ROUNDS]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
SECS=15; CONNS=64; SIZE=1024; ROUNDS=3
while getopts "t:c:s:r:" o; do
  case $o in t) SECS=$OPTARG;; c) CONNS=$OPTARG;; s) SIZE=$OPTARG;; r) ROUNDS=$OPTARG;; *) exit 2;; esac
done
for tool in wrk curl; do
  command -v "$tool" > /dev/null || { sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo; $sudo apt-get install -y -qq "$tool"; }
done
build_all
OUT="$ROOT/bench/run/webhdfs-$(date +%Y%m%d-%H%M%S)"; mkdir -p "$OUT"
WORK="${TMPDIR:-/tmp}/ferrite-bench-webhdfs"; mkdir -p "$WORK"
U="$(id -un)"  # both servers' superuser: the benchmark writes at the root
echo "# secs=$SECS conns=$CONNS size=${SIZE}MiB rounds=$ROUNDS  $(nproc) cpus  $(date -u)" | tee "$OUT/params"

# The upload's source, read from the page cache in every round.
BIG="$WORK/big.bin"
if [ "$(stat -c %s "$BIG" 2>/dev/null || echo 0)" != $((SIZE << 20)) ]; then
  head -c "$((SIZE << 20))" /dev/urandom > "$BIG"
fi
cat "$BIG" > /dev/null
EMPTY="$WORK/empty"; : > "$EMPTY"

# HDFS's WebHDFS (Jersey) reflects into the JDK, which Java 17 refuses without these.
for m in java.lang java.util java.lang.reflect java.net java.io; do
  JAVA_OPTS="$JAVA_OPTS --add-opens=java.base/$m=ALL-UNNAMED"
done
NN_HTTP_PORT=$(free_port)
start_hdfs_cluster "$WORK/hdfs" 1
HDFS_PID=$PID; HDFS_DNS=$DN_PIDS; HDFS_HTTP="http://127.0.0.1:$NN_HTTP_PORT"
start_ferrite_cluster "$WORK/ferrite" 1
FERRITE_PID=$PID; FERRITE_DNS=$DN_PIDS; FERRITE_HTTP=$HTTP
cleanup() { for p in $HDFS_PID $HDFS_DNS $FERRITE_PID $FERRITE_DNS; do stop_server "$p"; done; }
trap cleanup EXIT

api() { echo "$1/webhdfs/v1$2?user.name=$U&$3"; }

# create HTTP PATH SOURCE: HDFS's two steps; prints the seconds both took.
create() {
  local t0 t1 loc
  t0=$(date +%s.%N)
  loc=$(curl -sf -X PUT "$(api "$1" "$2" "op=CREATE&overwrite=true&replication=1&noredirect=true")" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["Location"])')
  curl -sf -X PUT -T "$3" -H 'Content-Type: application/octet-stream' -o /dev/null "$loc"
  t1=$(date +%s.%N)
  python3 -c "print($t1 - $t0)"
}

prepare() {  # prepare HTTP: the files the request benchmarks read
  curl -sf -X PUT "$(api "$1" /wb/list op=MKDIRS)" > /dev/null
  local i
  for i in $(seq -w 1 100); do create "$1" "/wb/list/f$i" "$EMPTY" > /dev/null; done
  create "$1" /wb/stat "$EMPTY" > /dev/null
  local n; n=$(curl -sf "$(api "$1" /wb/list op=LISTSTATUS)" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["FileStatuses"]["FileStatus"]))')
  [ "$n" = 100 ] || { echo "LISTSTATUS of /wb/list gave $n entries" >&2; exit 1; }
}
prepare "$HDFS_HTTP"; prepare "$FERRITE_HTTP"

# requests SYSTEM HTTP PID OP PATH: one wrk run; one result line.
requests() {
  local sys=$1 http=$2 pid=$3 op=$4 path=$5 log c0 c1
  log="$OUT/wrk-$sys-$op-$round.txt"
  c0=$(cpu_ticks "$pid")
  wrk -t2 -c"$CONNS" -d"${SECS}s" --latency "$(api "$http" "$path" "op=$op")" > "$log"
  c1=$(cpu_ticks "$pid")
  if grep -q "Non-2xx" "$log"; then echo "$sys $op: errors in $log" >&2; exit 1; fi
  local reqs rps p50 p99
  reqs=$(awk '/requests in/{print $1}' "$log")
  rps=$(awk '/Requests\/sec/{print $2}' "$log")
  p50=$(awk '$1 == "50%"{print $2}' "$log")
  p99=$(awk '$1 == "99%"{print $2}' "$log")
  echo "system=$sys op=$op round=$round rps=$rps nn_cpu_us_per_req=$(( (c1 - c0) * 10000 / reqs )) p50=$p50 p99=$p99 nn_threads=$(awk '/^Threads/{print $2}' "/proc/$pid/status") nn_rss_kb=$(awk '/^VmRSS/{print $2}' "/proc/$pid/status") load=$(loadavg | tr ' ' ,)" \
    | tee -a "$OUT/results.txt"
}

# bytes SYSTEM HTTP: CREATE then OPEN of SIZE MiB; two result lines.
bytes() {
  local sys=$1 http=$2 s t0 t1 got
  s=$(create "$http" /wb/big "$BIG")
  echo "system=$sys op=CREATE round=$round mib_per_s=$(python3 -c "print(round($SIZE / $s, 1))") load=$(loadavg | tr ' ' ,)" | tee -a "$OUT/results.txt"
  t0=$(date +%s.%N)
  got=$(curl -sf -L -o /dev/null -w '%{size_download}' "$(api "$http" /wb/big op=OPEN)")
  t1=$(date +%s.%N)
  [ "$got" = $((SIZE << 20)) ] || { echo "$sys OPEN read $got bytes" >&2; exit 1; }
  echo "system=$sys op=OPEN round=$round mib_per_s=$(python3 -c "print(round($SIZE / ($t1 - $t0), 1))") load=$(loadavg | tr ' ' ,)" | tee -a "$OUT/results.txt"
}

one() {  # one SYSTEM
  if [ "$1" = hdfs ]; then set -- hdfs "$HDFS_HTTP" "$HDFS_PID"; else set -- ferrite "$FERRITE_HTTP" "$FERRITE_PID"; fi
  requests "$1" "$2" "$3" GETFILESTATUS /wb/stat
  requests "$1" "$2" "$3" LISTSTATUS /wb/list
  bytes "$1" "$2"
}

# A warm-up pass each (the JVM's JIT, both page caches), not recorded.
round=warmup; SAVED=$SECS; SECS=5
for s in hdfs ferrite; do requests "$s" "$([ $s = hdfs ] && echo "$HDFS_HTTP" || echo "$FERRITE_HTTP")" \
  "$([ $s = hdfs ] && echo "$HDFS_PID" || echo "$FERRITE_PID")" GETFILESTATUS /wb/stat > /dev/null; done
SECS=$SAVED; : > "$OUT/results.txt"
for round in $(seq 1 "$ROUNDS"); do
  if [ $((round % 2)) = 1 ]; then one hdfs; one ferrite; else one ferrite; one hdfs; fi
done

python3 "$ROOT/bench/summarize_webhdfs.py" "$OUT/results.txt" | tee "$OUT/summary.txt"
echo "raw output: $OUT"
