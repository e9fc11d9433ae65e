"""The namespace summary against the real clients: Hadoop's FsShell `-count` and `-du -s`
and hdfs-native's content summary over a tree of 100,000 files match an exact walk of the
tree (a recursive listing), before and after clean and hard restarts; `ferrite summary`
agrees."""

import signal
import subprocess

from conftest import FERRITE_BIN, FsShell, start_ferrite, stop
from hdfs_native import Client, WriteOptions

FILES = 100_000
# The bench creates files as NNThroughputBenchmark does, with 16-byte blocks.
CONF = ["dfs.namenode.fs-limits.min-block-size=16"]


def walk(c, top):
    """(files, dirs including `top`, bytes) by listing every entry."""
    files = dirs = size = 0
    for s in c.list_status(top, recursive=True):
        if s.isdir:
            dirs += 1
        else:
            files += 1
            size += s.length
    return files, dirs + 1, size


def check(server, workroot, c, tops):
    exact = {t: walk(c, t) for t in tops}
    for t in tops:
        cs = c.get_content_summary(t)
        assert (cs.file_count, cs.directory_count, cs.length) == exact[t], t
    shell = FsShell(server, workroot)
    cmds = [["-count", t] for t in tops] + [["-du", "-s", t] for t in tops]
    out = shell.run(*cmds)
    for t, r in zip(tops, out[: len(tops)]):
        assert r.rc == 0, r.err
        dirs, files, size, path = r.out.split()
        assert (int(files), int(dirs), int(size), path) == (*exact[t], t)
    for t, r in zip(tops, out[len(tops):]):
        assert r.rc == 0, r.err
        size, raw, path = r.out.split()
        assert (int(size), path) == (exact[t][2], t)
        assert int(raw) >= int(size)
    summary = subprocess.run(
        [str(FERRITE_BIN), "summary", "--fs", server.url, tops[0], "--top", "3"],
        capture_output=True, text=True, check=True,
    ).stdout
    files, dirs, _ = exact[tops[0]]
    assert f"files {files} " in summary and f"directories {dirs} " in summary, summary


def test_count_and_du_over_100k_files_match_an_exact_walk(workroot):
    w = workroot / "summary"
    w.mkdir()
    s = start_ferrite(w, CONF)
    bench = [str(FERRITE_BIN), "bench", "namenode", "--fs", s.url, "--ops", "create", "--count", str(FILES), "--threads", "16"]
    subprocess.run(bench, check=True, capture_output=True, timeout=600)
    c = Client(s.url)
    c.mkdirs("/nnbench/data", create_parent=True)
    for i, n in enumerate([0, 1, 1023, 1024, 70_000, 1 << 20]):
        with c.create(f"/nnbench/data/f{i}", WriteOptions(replication=2)) as f:
            f.write(b"x" * n)
    c.set_replication("/nnbench/data/f5", 1)
    c.rename("/nnbench/data/f4", "/nnbench/moved")
    c.delete("/nnbench/create/t0", recursive=True)
    tops = ["/nnbench", "/nnbench/create", "/nnbench/data", "/"]
    check(s, w, c, tops)
    for hard in (False, True):
        if hard:
            s.proc.send_signal(signal.SIGKILL)
            s.proc.wait()
        else:
            assert stop(s) == 0
        s = start_ferrite(w, CONF)
        c = Client(s.url)
        assert c.delete(f"/nnbench/create/t{1 + hard}", recursive=True)
        with c.create(f"/nnbench/data/late{hard}") as f:
            f.write(b"y" * 4096)
        check(s, w, c, tops)
    assert stop(s) == 0
