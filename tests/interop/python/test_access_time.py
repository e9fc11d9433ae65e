"""Reads move access times, as HDFS does with `dfs.namenode.accesstime.precision`, seen by the
real clients: hdfs-native reads and FsShell's -cat move a file's access time (once per
precision, here 1 ms) and leave its modification time; the times survive a restart."""

import time

from conftest import FsShell, start_ferrite, stop
from hdfs_native import Client


def times(c, path):
    st = c.get_file_info(path)
    return st.modification_time, st.access_time


def test_reads_move_access_times(workroot):
    w = workroot / "access-time"
    w.mkdir()
    conf = ["dfs.namenode.accesstime.precision=1"]
    s = start_ferrite(w, conf)
    try:
        mtime, created = reads_move_the_access_time(s, workroot)
    finally:
        assert stop(s) == 0
    # The moves were journaled: a restart keeps the times last set.
    s = start_ferrite(w, conf)
    try:
        assert times(Client(s.url), "/at/f") == (mtime, created)
    finally:
        assert stop(s) == 0


def reads_move_the_access_time(s, workroot):
    """Returns the times the file is left with."""
    c = Client(s.url)
    with c.create("/at/f") as f:
        f.write(b"read me")
    mtime, created = times(c, "/at/f")
    assert created <= mtime  # a close moves only the modification time, as in HDFS

    time.sleep(0.05)
    with c.read("/at/f") as r:
        assert r.read() == b"read me"
    m1, a1 = times(c, "/at/f")
    assert (m1, a1 > created) == (mtime, True)

    time.sleep(0.05)
    shell = FsShell(s, workroot)
    cat, stat = shell.run(["-cat", "/at/f"], ["-stat", "%Y %X", "/at/f"])
    assert (cat.out, cat.rc) == ("read me", 0)
    m2, a2 = (int(x) for x in stat.out.split())
    assert (m2, a2 > a1) == (mtime, True)
    assert times(c, "/at/f") == (m2, a2)

    # setTimes with an access time is accepted when access times are on.
    c.set_times("/at/f", mtime, created)
    assert times(c, "/at/f") == (mtime, created)
    return mtime, created
