"""`hdfs dfsadmin -report` and `-listOpenFiles` (Hadoop 3.4.1's DFSAdmin, unchanged) against
Ferrite and a real HDFS 3.4.1 in the same state — one DataNode, a file asking for three
replicas (so one block is short of them), files open for write — compared line by line
once what must differ between two clusters (addresses, sizes, times, names) is masked."""

import re
import time

import pytest
from conftest import FsShell, _server, start_ferrite, start_hdfs_cluster, stop
from hdfs_native import Client, WriteOptions


@pytest.fixture(scope="module")
def ferrite_one_dn(workroot):
    w = workroot / "ferrite-dfsadmin"
    w.mkdir()
    s = start_ferrite(w, datanodes=1)
    yield s
    assert stop(s) == 0


@pytest.fixture(scope="module")
def hdfs_one_dn(workroot):
    """An HDFS of its own: the report counts every block and open file in the cluster, so
    the shared one, which other suites write to, would not be in the same state."""
    yield from _server(workroot, "hdfs-dfsadmin", lambda w: start_hdfs_cluster(w, 1))


def mask(text: str) -> str:
    text = re.sub(r"127\.0\.0\.1:\d+", "ADDR", text)
    text = re.sub(r"^(Name|Xceivers|Last contact|Last Block Report|Configured Capacity|Present Capacity|DFS Remaining|DFS Used|Non DFS Used|DFS Used%|DFS Remaining%):.*$",
                  r"\1: X", text, flags=re.M)
    text = re.sub(r"^(Decommission Status) : .*$", r"\1 : X", text, flags=re.M)
    text = re.sub(r"\S*DFSClient\S*|hdfs_native\S*|\S*client\S*", "CLIENT", text)
    return text


def test_report_and_open_files_match_hdfs(ferrite_one_dn, hdfs_one_dn, workroot):
    writers = []
    for s in (hdfs_one_dn, ferrite_one_dn):
        c = Client(s.url)
        c.mkdirs("/adm/open", create_parent=True)
        with c.create("/adm/three", WriteOptions(replication=3)) as f:
            f.write(b"z" * 4096)
        for name in ("a", "b"):
            w = c.create(f"/adm/open/{name}", WriteOptions(replication=1))
            w.write(b"x")
            writers.append(w)
        w = c.create("/adm/elsewhere", WriteOptions(replication=1))
        w.write(b"y")
        writers.append(w)
    # The replication monitors count the short block on their own time.
    cmds = [["dfsadmin", "-report"], ["dfsadmin", "-listOpenFiles"], ["dfsadmin", "-listOpenFiles", "-path", "/adm/open"]]
    deadline = time.time() + 30
    while True:
        ours = FsShell(ferrite_one_dn, workroot).run(*cmds)
        if "Under replicated blocks: 1" in ours[0].out or time.time() > deadline:
            break
        time.sleep(1)
    theirs = FsShell(hdfs_one_dn, workroot).run(*cmds)
    for cmd, a, b in zip(cmds, ours, theirs):
        got, want = (mask(a.out), a.rc), (mask(b.out), b.rc)
        assert got == want, f"{' '.join(cmd)}\n--- ferrite\n{a.out}{a.err}\n--- hdfs\n{b.out}{b.err}"
    assert "Under replicated blocks: 1" in ours[0].out, ours[0].out
    assert "Live datanodes (1):" in ours[0].out
    listed = ours[1].out
    assert "/adm/open/a" in listed and "/adm/open/b" in listed and "/adm/elsewhere" in listed, listed
    assert "/adm/elsewhere" not in ours[2].out and "/adm/open/a" in ours[2].out
    # Not for everyone: the superuser's alone.
    (refused,) = FsShell(ferrite_one_dn, workroot, user="alice").run(["dfsadmin", "-listOpenFiles"])
    assert refused.rc != 0 and "Superuser privilege is required" in refused.err, refused
    for w in writers:
        w.close()


def balancer_bandwidth_session(server, workroot):
    """What `dfsadmin` prints through a round of the Balancer's bandwidth: the DataNode's
    default, a new value set through the NameNode (polled until the DataNode has it from
    a heartbeat), a negative value, and a non-superuser's try."""
    sh = FsShell(server, workroot)
    (nodes,) = sh.run(["datanodes"])
    dn = nodes.out.split()[1]  # transfer address, then IPC address
    get = ["dfsadmin", "-getBalancerBandwidth", dn]
    (default,) = sh.run(get)
    set_ok, negative = sh.run(["dfsadmin", "-setBalancerBandwidth", "12345"], ["dfsadmin", "-setBalancerBandwidth", "-5"])
    deadline = time.time() + 30
    while True:
        (now,) = sh.run(get)
        # HDFS paces in half seconds of whole bytes, so 12345 reads back as 12344.
        if "12344" in now.out or time.time() > deadline:
            break
        time.sleep(0.5)
    (refused,) = FsShell(server, workroot, user="alice").run(["dfsadmin", "-setBalancerBandwidth", "1"])
    return [default, set_ok, negative, now, refused]


def test_balancer_bandwidth_reaches_datanodes_as_on_hdfs(ferrite_one_dn, hdfs_one_dn, workroot):
    ours = balancer_bandwidth_session(ferrite_one_dn, workroot)
    theirs = balancer_bandwidth_session(hdfs_one_dn, workroot)
    for a, b in zip(ours, theirs):
        first = lambda text: text.strip().splitlines()[:1]
        assert (a.out, first(a.err), a.rc) == (b.out, first(b.err), b.rc), f"--- ferrite\n{a}\n--- hdfs\n{b}"
    assert ours[0].out == "Balancer bandwidth is 104857600 bytes per second.\n"
    assert ours[3].out == "Balancer bandwidth is 12344 bytes per second.\n"
    assert ours[4].rc != 0 and "Superuser privilege is required" in ours[4].err, ours[4]
