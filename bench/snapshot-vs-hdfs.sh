#!/usr/bin/env bash
# Snapshots against Apache HDFS 3.4.1 (issue 45), Hadoop's own client for both
# (bench/java/src/SnapshotBench.java), one NameNode at a time on this machine:
#  1. createSnapshot latency on a tree of FILES closed files, for each size: 10 snapshots
#     taken one after another (after 3 untimed ones that warm the client JVM), median and
#     worst. `SnapshotBench URI DIR mkdirs N` times a plain journaled call the same way.
#     The diff's server-side time comes from each NameNode's RpcDetailedActivity (JMX).
#  2. The diff report after CHANGES changes (a quarter each: new files, chmods, renames,
#     deletes of files the snapshot holds), on the largest tree: median of 3 calls.
#  3. The NameNode's memory growth over those changes with a snapshot holding the tree, next
#     to the same changes with no snapshot: memory per changed inode. Ferrite's RSS; HDFS's
#     live heap after a full collection (jmap -histo:live), its RSS barely moving.
# Raw output goes to bench/run/snapshot-<time>/.
#
#   bench/snapshot-vs-hdfs.sh [-s "10000 100000 1000000"] [-c 100000] [-y "hdfs ferrite"]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
SIZES="10000 100000 1000000"; CHANGES=100000; CLIENTS=16; SYSTEMS="hdfs ferrite"
while getopts "s:c:y:" o; do case $o in s) SIZES=$OPTARG;; c) CHANGES=$OPTARG;; y) SYSTEMS=$OPTARG;; *) exit 2;; esac; done
build_all
OUT="$ROOT/bench/run/snapshot-$(date +%Y%m%d-%H%M%S)"; mkdir -p "$OUT"
WORK="${TMPDIR:-/tmp}/ferrite-bench-snap"; mkdir -p "$WORK"
CLASSES="$WORK/classes"; mkdir -p "$CLASSES"
javac -cp "$HADOOP_CP" -d "$CLASSES" "$ROOT/bench/java/src/SnapshotBench.java"
echo "# sizes=$SIZES changes=$CHANGES  $(nproc) cpus  $(date -u)" | tee "$OUT/params"
LARGEST=${SIZES##* }
BASE=/ferriteBench/mem

sb() {  # sb ARGS...: SnapshotBench against $URL
  write_site "$WORK/client" core "fs.defaultFS=$URL"
  java $JAVA_OPTS -cp "$WORK/client:$CLASSES:$HADOOP_CP" SnapshotBench "$URL" "$@" 2>>"$OUT/client.log"
}

fill() {  # fill N: N closed files under $BASE, kept
  "$FERRITE" bench namenode --fs "$URL" --pid "$PID" --ops inode-memory --files "$1" \
    --threads "$CLIENTS" --keep > "$OUT/fill-$sys-$1.txt" 2>&1
}

rss() { awk '/VmRSS/{print $2}' "/proc/$PID/status"; }

# rpc_time METHOD: the NameNode's own count and total handling time of METHOD calls
# (RpcDetailedActivity, which both serve over JMX): the server's share of a client's time.
rpc_time() {
  curl -s "$HTTP/jmx?qry=Hadoop:service=NameNode,name=RpcDetailedActivityForPort${URL##*:}" |
    python3 -c 'import json,sys; b=json.load(sys.stdin)["beans"][0]; m=sys.argv[1]
n=b.get(m+"NumOps",0); a=b.get(m+"AvgTime",0.0)
print(f"calls={n} avg_ms={a:.3f} total_ms={n*a:.1f}")' "$1"
}

# heap: HDFS's live heap in KiB after a full collection (jmap -histo:live forces one); RSS
# barely moves for a JVM with room in its heap. "-" for Ferrite, whose RSS is the figure.
heap() {
  if [ "$sys" = hdfs ]; then jmap -histo:live "$PID" | awk '/^Total/{print int($3/1024)}'; else echo -; fi
}

for sys in $SYSTEMS; do
  for n in $SIZES; do
    "start_$sys" "$WORK/$sys"
    fill "$n"
    sb "$BASE" create 10 | sed "s/^/system=$sys files=$n /" | tee -a "$OUT/results.txt"
    if [ "$n" = "$LARGEST" ]; then
      before=$(rss); hbefore=$(heap)
      sb "$BASE" change "$CHANGES" "$BASE" "$CLIENTS" | sed "s/^/system=$sys files=$n /" | tee -a "$OUT/results.txt"
      sleep 3; after=$(rss); hafter=$(heap)
      echo "system=$sys files=$n op=change_rss snapshot=yes kib_before=$before kib_after=$after heap_kib_before=$hbefore heap_kib_after=$hafter" | tee -a "$OUT/results.txt"
      sb "$BASE" diff s9 "" | sed "s/^/system=$sys files=$n /" | tee -a "$OUT/results.txt"
      sleep 11   # HDFS's JMX shows metrics cached for 10 s
      # Hadoop's client asks for the whole report (not the paged listing) when one side of
      # the diff is the current state.
      echo "system=$sys files=$n op=snapshotDiff_server $(rpc_time GetSnapshotDiffReport)" | tee -a "$OUT/results.txt"
    fi
    stop_server "$PID"
  done
  # The same changes with no snapshot: what they cost without one (on the largest tree).
  "start_$sys" "$WORK/$sys"
  fill "$LARGEST"
  before=$(rss); hbefore=$(heap)
  sb "$BASE" change "$CHANGES" "$BASE" "$CLIENTS" > /dev/null
  sleep 3; after=$(rss); hafter=$(heap)
  echo "system=$sys files=$LARGEST op=change_rss snapshot=no kib_before=$before kib_after=$after heap_kib_before=$hbefore heap_kib_after=$hafter" | tee -a "$OUT/results.txt"
  stop_server "$PID"
done
