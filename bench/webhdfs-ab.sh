#!/usr/bin/env bash
# A/B probe for one WebHDFS change on the NameNode: two Ferrite builds, alternating build by
# build so both see the same machine. Per run, a fresh `ferrite local` (one DataNode) of
# that build with a directory of 100 files, then wrk's CONNS connections for SECS seconds
# on GETFILESTATUS and on LISTSTATUS of the directory: requests/s and the process's CPU µs
# per request. Not a comparison with HDFS: that is webhdfs-vs-hdfs.sh.
#
#   bench/webhdfs-ab.sh [-r ROUNDS] [-t SECS] [-c CONNS] OLD NEW
set -euo pipefail
. "$(dirname "$0")/lib.sh"
ROUNDS=4; SECS=10; CONNS=64
while getopts "r:t:c:" o; do
  case $o in r) ROUNDS=$OPTARG;; t) SECS=$OPTARG;; c) CONNS=$OPTARG;; *) exit 2;; esac
done
shift $((OPTIND - 1))
[ $# -eq 2 ] || { echo "usage: $0 [-r ROUNDS] [-t SECS] [-c CONNS] OLD NEW" >&2; exit 2; }
OLD=$1; NEW=$2
command -v wrk > /dev/null || { echo "wrk is needed (apt-get install wrk)" >&2; exit 1; }
WORK=$(mktemp -d /tmp/ferrite-webhdfs-ab.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
U="$(id -un)"
echo "# old=$OLD new=$NEW rounds=$ROUNDS secs=$SECS conns=$CONNS $(date -u)"

# rate LABEL PID URL: one wrk run; "rps cpu_us_per_req".
rate() {
  local c0 c1 out reqs
  c0=$(cpu_ticks "$2")
  out=$(wrk -t2 -c"$CONNS" -d"${SECS}s" "$3")
  c1=$(cpu_ticks "$2")
  reqs=$(awk '/requests in/{print $1}' <<< "$out")
  echo "$(awk '/Requests\/sec/{print $2}' <<< "$out") $(( (c1 - c0) * 10000 / reqs ))"
}

one() {  # one LABEL BINARY
  local w="$WORK/$1" http i
  rm -rf "$w"; mkdir -p "$w"
  FERRITE_LOG=warn "$2" local --data "$w/data" --port 0 --datanodes 1 > "$w/ready" 2> "$w/log" &
  local pid=$!
  for _ in $(seq 1 100); do [ -s "$w/ready" ] && break; sleep 0.1; done
  http=$(awk '{print $3}' "$w/ready")
  curl -sf -X PUT "$http/webhdfs/v1/l?op=MKDIRS&user.name=$U" > /dev/null
  for i in $(seq -w 1 100); do
    curl -sf -L -X PUT --data-binary '' "$http/webhdfs/v1/l/f$i?op=CREATE&user.name=$U" > /dev/null
  done
  read -r s_rps s_cpu <<< "$(rate "$1" "$pid" "$http/webhdfs/v1/l/f001?op=GETFILESTATUS&user.name=$U")"
  read -r l_rps l_cpu <<< "$(rate "$1" "$pid" "$http/webhdfs/v1/l?op=LISTSTATUS&user.name=$U")"
  echo "build=$1 getfilestatus_rps=$s_rps getfilestatus_cpu_us=$s_cpu liststatus_rps=$l_rps liststatus_cpu_us=$l_cpu load=$(loadavg | tr ' ' ,)"
  stop_server "$pid"
}

for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then one old "$OLD"; one new "$NEW"; else one new "$NEW"; one old "$OLD"; fi
done
