"""Typed volumes and placement by storage policy: DataNodes with an `[SSD]` and a `[DISK]`
volume each (`ferrite.local.datanode.storage.types`, as MiniDFSCluster's storage types),
files written by Hadoop's FsShell under HOT, ALL_SSD, ONE_SSD and WARM directories, and
where their replicas went read back from Hadoop's own `hdfs fsck -files -blocks -locations`
(which names each replica's storage type). The expectations are HDFS's policies: ALL_SSD
puts every replica on SSD, ONE_SSD the first, HOT none, and WARM, with no ARCHIVE volume
anywhere, falls back to DISK for the replicas it would archive."""

import re
import subprocess
import time

import pytest
from conftest import FsShell, _server, start_ferrite
from test_fsshell import C
from test_webhdfs import SU, call, fsck

POLICIES = {"hot": "HOT", "ssd": "ALL_SSD", "one": "ONE_SSD", "warm": "WARM"}


@pytest.fixture(scope="module")
def typed(workroot):
    conf = ["ferrite.local.datanode.storage.types=SSD,DISK", "dfs.replication=3"]
    yield from _server(workroot, "ferrite-typed", lambda w: start_ferrite(w, conf, datanodes=3))


def replica_types(report: str, path: str):
    """Each block's replicas' storage types, for the file `path` in an fsck report."""
    section = report.split(f"{path} ", 1)[1].split("\n\n", 1)[0]
    return [sorted(re.findall(r"DatanodeInfoWithStorage\[[^,]+,[^,]+,(\w+)\]", line))
            for line in section.splitlines() if "blk_" in line]


def test_replicas_land_on_the_storage_types_their_policy_asks_for(typed, workroot):
    batch = [C("-mkdir", "-p", *[f"/t/{d}" for d in POLICIES])]
    for d, policy in POLICIES.items():
        batch.append(["storagepolicies", "-setStoragePolicy", "-path", f"/t/{d}", "-policy", policy])
    for d in POLICIES:
        batch.append(C("-put", "/etc/services", f"/t/{d}/f"))
    batch.append(["storagepolicies", "-getStoragePolicy", "-path", "/t/one/f"])
    out = FsShell(typed, workroot).run(*batch)
    assert all(r.rc == 0 for r in out), [(c, r) for c, r in zip(batch, out) if r.rc]
    assert "ONE_SSD" in out[-1].out
    rc, report = fsck(typed, workroot, "/t", "-files", "-blocks", "-locations")
    assert rc == 0 and report.rstrip().endswith("is HEALTHY"), report
    want = {
        "hot": ["DISK", "DISK", "DISK"],
        "ssd": ["SSD", "SSD", "SSD"],
        "one": ["DISK", "DISK", "SSD"],
        "warm": ["DISK", "DISK", "DISK"],
    }
    for d, types in want.items():
        blocks = replica_types(report, f"/t/{d}/f")
        assert blocks and all(b == types for b in blocks), (d, blocks, report)
    # And the files read back whole from whichever storage holds them.
    back = FsShell(typed, workroot).run(*[C("-cat", f"/t/{d}/f") for d in POLICIES])
    services = open("/etc/services").read()
    assert all(r.out == services for r in back)


def wait_for_types(server, workroot, path, want, timeout=60):
    """Polls Hadoop's fsck until every block of `path` has replicas on exactly `want`
    (sorted storage type names); returns the last report."""
    deadline = time.monotonic() + timeout
    while True:
        # fsck of the parent: a report's header names the path checked too.
        parent = path.rsplit("/", 1)[0] or "/"
        rc, report = fsck(server, workroot, parent, "-files", "-blocks", "-locations")
        blocks = replica_types(report, path) if rc == 0 and f"{path} " in report else []
        if blocks and all(b == want for b in blocks):
            return report
        assert time.monotonic() < deadline, (path, want, blocks, report)
        time.sleep(1)


def wait_unmarked(server, workroot, path, timeout=60):
    """Waits for the satisfier's `user.hdfs.sps` mark to leave `path` (it is done with it)."""
    deadline = time.monotonic() + timeout
    while True:
        r = FsShell(server, workroot).run(C("-getfattr", "-d", path))[0]
        assert r.rc == 0, r
        if "user.hdfs.sps" not in r.out:
            return
        assert time.monotonic() < deadline, r.out
        time.sleep(1)


def test_the_satisfier_moves_replicas_between_a_node_s_own_volumes(typed, workroot):
    """HOT data made ALL_SSD: every replica moves to its own node's SSD (REPLACE_BLOCK with
    the node itself as source), the bytes intact."""
    shell = FsShell(typed, workroot)
    out = shell.run(
        C("-mkdir", "-p", "/sat/local"),
        C("-put", "/etc/services", "/sat/local/f"),
        C("-checksum", "/sat/local/f"),
        ["storagepolicies", "-setStoragePolicy", "-path", "/sat/local", "-policy", "ALL_SSD"],
        ["storagepolicies", "-satisfyStoragePolicy", "-path", "/sat/local"],
    )
    assert all(r.rc == 0 for r in out), out
    assert "Scheduled blocks to move based on the current storage policy on /sat/local" in out[-1].out
    wait_for_types(typed, workroot, "/sat/local/f", ["SSD", "SSD", "SSD"])
    wait_unmarked(typed, workroot, "/sat/local")
    back = shell.run(C("-cat", "/sat/local/f"), C("-checksum", "/sat/local/f"))
    assert back[0].out == open("/etc/services").read()
    assert back[1].out == out[2].out


@pytest.fixture(scope="module")
def mixed(workroot):
    """Three DISK-only DataNodes and one with only an SSD."""
    conf = ["ferrite.local.datanode.storage.types=DISK;DISK;DISK;SSD", "dfs.replication=3"]
    yield from _server(workroot, "ferrite-mixed", lambda w: start_ferrite(w, conf, datanodes=4))


def test_the_satisfier_copies_to_another_node_and_gives_up_on_what_cannot_be_placed(mixed, workroot):
    """ONE_SSD (asked through FsShell): one replica goes to the SSD node (COPY_BLOCK from a DISK node, whose copy
    the NameNode then drops by the delete hint), leaving three. ALL_SSD with one SSD node in
    the cluster (asked through WebHDFS): one replica moves, the other two cannot; the satisfier gives up after its
    rounds and removes its mark, and the file stays whole at three replicas."""
    shell = FsShell(mixed, workroot)
    out = shell.run(
        C("-mkdir", "-p", "/sat/one", "/sat/all"),
        C("-put", "/etc/services", "/sat/one/f"),
        C("-put", "/etc/services", "/sat/all/f"),
        ["storagepolicies", "-setStoragePolicy", "-path", "/sat/one", "-policy", "ONE_SSD"],
        ["storagepolicies", "-setStoragePolicy", "-path", "/sat/all", "-policy", "ALL_SSD"],
        ["storagepolicies", "-satisfyStoragePolicy", "-path", "/sat/one/f"],
    )
    assert all(r.rc == 0 for r in out), out
    # And through WebHDFS.
    status, _, body, _ = call(mixed.http, "PUT", f"/webhdfs/v1/sat/all?op=SATISFYSTORAGEPOLICY&user.name={SU}")
    assert status == 200, body
    wait_for_types(mixed, workroot, "/sat/one/f", ["DISK", "DISK", "SSD"])
    wait_for_types(mixed, workroot, "/sat/all/f", ["DISK", "DISK", "SSD"])
    wait_unmarked(mixed, workroot, "/sat/all")
    wait_unmarked(mixed, workroot, "/sat/one/f")
    services = open("/etc/services").read()
    back = shell.run(C("-cat", "/sat/one/f"), C("-cat", "/sat/all/f"))
    assert all(r.out == services for r in back)
    # A file without blocks is skipped, a missing path refused as HDFS refuses it.
    out = shell.run(
        C("-touchz", "/sat/empty"),
        ["storagepolicies", "-satisfyStoragePolicy", "-path", "/sat/empty"],
        ["storagepolicies", "-satisfyStoragePolicy", "-path", "/sat/missing"],
    )
    assert out[1].rc == 0, out[1]
    assert out[2].rc != 0 and "cannot find /sat/missing" in out[2].err, out[2]


def test_hadoops_mover_moves_replicas_to_their_policy_s_types(mixed, workroot):
    """`hdfs mover -p PATH` (Hadoop 3.4.1's Mover, unchanged): a HOT file made ONE_SSD gets
    one replica on the SSD node, copied with REPLACE_BLOCK / COPY_BLOCK signed with the
    NameNode's exported block keys; the Mover exits 0 once nothing is left to move."""
    shell = FsShell(mixed, workroot)
    out = shell.run(
        C("-mkdir", "-p", "/mover"),
        C("-put", "/etc/services", "/mover/f"),
        ["storagepolicies", "-setStoragePolicy", "-path", "/mover", "-policy", "ONE_SSD"],
    )
    assert all(r.rc == 0 for r in out), out
    from conftest import HADOOP_JAVA_OPENS, java_cp, write_site

    conf = workroot / "conf-mover"
    write_site(conf, {"fs.defaultFS": mixed.url}, {})
    cmd = ["java", "-Djava.net.preferIPv4Stack=true", *HADOOP_JAVA_OPENS, "-cp", java_cp(conf),
           "org.apache.hadoop.hdfs.server.mover.Mover", "-p", "/mover"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=workroot)
    assert p.returncode == 0, f"{p.stdout}\n{p.stderr}"
    wait_for_types(mixed, workroot, "/mover/f", ["DISK", "DISK", "SSD"])
    back = shell.run(C("-cat", "/mover/f"))
    assert back[0].out == open("/etc/services").read()
