"""Does hdfs-native's writer stall in pipeline recovery against Apache HDFS too?

A diagnostic, not a benchmark: it runs the scenario of the interop test
`test_hdfs_native_writer_replaces_a_dead_datanode` (four DataNodes; a writer streams 16 MiB,
a DataNode in its pipeline that is not the first is killed, the writer streams 32 MiB more
and closes) against fresh Ferrite and Apache HDFS 3.4.1 clusters, and counts the attempts in
which the writer neither finishes nor fails within the timeout.

    .venv/bin/python bench/native-recovery-stall.py --system both --attempts 10

Needs `cargo build` (Ferrite's debug binary, as the interop tests use) and, for HDFS, the
jars `bench/java` fetches (`bench/lib.sh`'s `build_all`). Results: BENCHMARKS.md is not the
place (nothing is timed); see the test's docstring.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "interop" / "python"))
import test_datapath as t  # noqa: E402  (the scenario's writer and cluster helpers)

HDFS_START = """
. bench/lib.sh
HADOOP_CP="$(cat bench/java/target/cp.txt)"
NN_EXTRA="dfs.heartbeat.interval=1" start_hdfs_cluster "$1" 4; rc=$?
echo "nn $URL $PID"
i=0
for p in $DN_PIDS; do
  echo "dn $p $(grep -o 'dfs.datanode.address</name><value>127.0.0.1:[0-9]*' "$1/conf-dn$i/hdfs-site.xml" | sed 's/.*://')"
  i=$((i + 1))
done
exit $rc
"""


class Hdfs:
    """A fresh HDFS NameNode and four DataNode JVMs, as (url, [pid], [dir], [xfer port])."""

    def __init__(self, w):
        self.w = w

    def __enter__(self):
        r = subprocess.run(["bash", "-c", HDFS_START, "start", str(self.w)], cwd=REPO, capture_output=True, text=True)
        lines = [l.split() for l in r.stdout.splitlines() if l.startswith(("nn ", "dn "))]
        self.pids = [int(l[1]) for l in lines if l[0] == "dn"]
        self.nn = next((int(l[2]) for l in lines if l[0] == "nn" and len(l) == 3), None)
        if r.returncode != 0:
            self.__exit__()
            raise RuntimeError(f"HDFS did not start: {r.stderr[-400:]}")
        url = next(l[1] for l in lines if l[0] == "nn")
        xfer = [int(l[2]) for l in lines if l[0] == "dn"]
        return url, self.pids, [self.w / f"dn{i}" for i in range(4)], xfer

    def __exit__(self, *_):
        for p in [*self.pids, self.nn]:
            if p:
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass


class Ferrite:
    """`process_cluster`'s Ferrite NameNode and four DataNodes, with pids instead of Popens."""

    def __init__(self, w):
        self.cm = t.process_cluster(w, 4)

    def __enter__(self):
        url, dns, dirs, xfer = self.cm.__enter__()
        return url, [p.pid for p in dns], dirs, xfer

    def __exit__(self, *exc):
        return self.cm.__exit__(*exc)


def attempt(cluster, w, timeout):
    """One run of the scenario: 'ok', 'failed', or 'STALL', with the pipeline's shape."""
    with cluster(w) as (url, pids, dirs, xfer):
        env = {**os.environ, "RUST_LOG": "hdfs_native=debug"}
        writer = subprocess.Popen([sys.executable, "-c", t.WRITER, url], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(w / "writer.log", "w"), text=True, env=env)
        try:
            assert writer.stdout.readline().strip() == "half"
            time.sleep(2)
            holders = [i for i, d in enumerate(dirs) if any(d.rglob("rbw/blk_*"))]
            first = [i for i in holders if xfer[i] in t.remote_ports(writer.pid)]
            victim = next(i for i in holders if i not in first)
            os.kill(pids[victim], signal.SIGKILL)
            time.sleep(0.5)
            try:
                out, _ = writer.communicate("go\n", timeout=timeout)
                outcome = "ok" if writer.returncode == 0 and "closed" in out else "failed"
            except subprocess.TimeoutExpired:
                # What the sockets looked like: the writer's Recv-Q and Send-Q, for the record.
                (w / "sockets.txt").write_text(subprocess.run(["ss", "-tnp"], capture_output=True, text=True).stdout)
                outcome = "STALL"
        finally:
            if writer.poll() is None:
                writer.kill()
        return f"{outcome} first={first} victim={victim} holders={holders}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--system", choices=["ferrite", "hdfs", "both"], default="both")
    ap.add_argument("--attempts", type=int, default=10)
    ap.add_argument("--timeout", type=float, default=40.0, help="seconds the writer gets after the kill")
    ap.add_argument("--keep", action="store_true", help="keep the work directories of stalled attempts")
    a = ap.parse_args()
    systems = {"ferrite": Ferrite, "hdfs": Hdfs}
    chosen = list(systems) if a.system == "both" else [a.system]
    root = Path(tempfile.mkdtemp(prefix="native-recovery-stall-"))
    totals = {}
    for i in range(a.attempts):
        for name in chosen:  # alternating, so both see the same machine load
            w = root / f"{name}-{i}"
            outcome = attempt(systems[name], w, a.timeout)
            totals.setdefault(name, []).append(outcome.split()[0])
            print(f"{name} {i}: {outcome}", flush=True)
            if not (a.keep and outcome.startswith("STALL")):
                shutil.rmtree(w, ignore_errors=True)
    for name, outcomes in totals.items():
        print(f"{name}: {outcomes.count('STALL')} stalled, {outcomes.count('failed')} failed, {outcomes.count('ok')} ok of {len(outcomes)}")
    if not a.keep:
        shutil.rmtree(root, ignore_errors=True)
    else:
        print(f"work directories: {root}")


if __name__ == "__main__":
    main()
