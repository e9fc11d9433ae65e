"""Typed volumes and placement by storage policy: DataNodes with an `[SSD]` and a `[DISK]`
volume each (`ferrite.local.datanode.storage.types`, as MiniDFSCluster's storage types),
files written by Hadoop's FsShell under HOT, ALL_SSD, ONE_SSD and WARM directories, and
where their replicas went read back from Hadoop's own `hdfs fsck -files -blocks -locations`
(which names each replica's storage type). The expectations are HDFS's policies: ALL_SSD
puts every replica on SSD, ONE_SSD the first, HOT none, and WARM, with no ARCHIVE volume
anywhere, falls back to DISK for the replicas it would archive."""

import re

import pytest
from conftest import FsShell, _server, start_ferrite
from test_fsshell import C
from test_webhdfs import fsck

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
