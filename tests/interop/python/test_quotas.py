"""Quotas through Hadoop 3.4.1's `hdfs dfsadmin` (-setQuota, -clrQuota, -setSpaceQuota,
-clrSpaceQuota, by storage type too) and `hdfs dfs -count -q [-t] [-h] [-v]`, compared
line by line with a real HDFS 3.4.1 cluster (one DataNode each, as space is charged when
blocks are allocated): the exceptions and messages of creates, mkdirs, moves, writes and
setrep a quota refuses, the usage reported as it changes, WebHDFS's quota calls; then
the quotas and their usage survive a kill -9 (journal replay) and an image."""

import json
import signal

import pytest
from conftest import FsShell, _server, start_ferrite, start_hdfs_cluster, stop
from test_fsshell import C, compare
from test_webhdfs import SU, call


@pytest.fixture(scope="module")
def ferrite_q(workroot):
    yield from _server(workroot, "ferrite-quota", lambda w: start_ferrite(w, datanodes=1))


@pytest.fixture(scope="module")
def hdfs_q(workroot):
    yield from _server(workroot, "hdfs-quota", lambda w: start_hdfs_cluster(w, 1))


def D(*args):
    return ["dfsadmin", *args]


ADMIN = [
    C("-mkdir", "-p", "/q/a", "/q/b", "/q/c"),
    # Type quotas count only files under a storage policy, as in HDFS.
    ["storagepolicies", "-setStoragePolicy", "-path", "/q/b", "-policy", "HOT"],
    D("-setQuota", "4", "/q/a"),
    C("-count", "-q", "/q/a"),
    C("-touchz", "/q/a/f1"),
    C("-touchz", "/q/a/f2"),
    C("-touchz", "/q/a/f3"),
    C("-touchz", "/q/a/f4"),
    C("-mkdir", "-p", "/q/a/x/y"),
    C("-count", "-q", "-h", "-v", "/q/a"),
    C("-mv", "/q/c", "/q/a/"),
    # A move within the quota's own tree adds nothing.
    C("-mv", "/q/a/f3", "/q/a/f5"),
    D("-clrQuota", "/q/a"),
    C("-touchz", "/q/a/f4"),
    C("-count", "-q", "/q/a"),
    # Space: a block is charged at its full size times replication while it is written.
    D("-setSpaceQuota", "1k", "/q/b"),
    C("-count", "-q", "/q/b"),
    C("-put", "/etc/hostname", "/q/b/h"),
    C("-ls", "/q/b"),
    D("-setSpaceQuota", "1g", "/q/b"),
    C("-put", "/etc/hostname", "/q/b/h"),
    C("-count", "-q", "/q/b"),
    C("-count", "-q", "-h", "-v", "/q/b"),
    C("-setrep", "5", "/q/b/h"),
    C("-count", "-q", "/q/b"),
    D("-setSpaceQuota", "2k", "-storageType", "DISK", "/q/b"),
    C("-count", "-q", "-t", "/q/b"),
    C("-count", "-q", "-t", "DISK,SSD", "-v", "/q/b"),
    C("-put", "/etc/hosts", "/q/b/h2"),
    D("-clrSpaceQuota", "-storageType", "DISK", "/q/b"),
    D("-clrSpaceQuota", "/q/b"),
    C("-count", "-q", "-t", "/q/b"),
    C("-put", "/etc/hosts", "/q/b/h2"),
    # Nested quotas: the inner one is checked first.
    D("-setQuota", "10", "/q"),
    D("-setQuota", "3", "/q/b"),
    C("-touchz", "/q/b/n1"),
    C("-count", "-q", "/q", "/q/b"),
    # Refusals of setQuota itself.
    D("-setQuota", "0", "/q/a"),
    D("-setQuota", "3", "/q/nope"),
    D("-setQuota", "3", "/q/a/f1"),
    D("-clrQuota", "/"),
    C("-count", "-q", "/"),
    D("-setSpaceQuota", "-5", "/q/a"),
    C("-count", "-q", "/q/nope"),
]

USER = [
    D("-setQuota", "5", "/q/a"),
    C("-count", "-q", "/q/a"),
]


def test_quotas_match_hdfs(ferrite_q, hdfs_q, workroot):
    ours = FsShell(ferrite_q, workroot).run(*ADMIN)
    theirs = FsShell(hdfs_q, workroot).run(*ADMIN)
    compare(ADMIN, ours, theirs)

    def at(*cmd, nth=0):
        return [r for c, r in zip(ADMIN, ours) if c == list(cmd)][nth]

    # Pinned, so that both being wrong the same way would still fail.
    assert "quota=4 file count=5" in at("-touchz", "/q/a/f4").err
    assert "NameSpace quota" in at("-mv", "/q/c", "/q/a/").err
    assert "The DiskSpace quota of /q/b is exceeded: quota = 1024 B = 1 KB" in at("-put", "/etc/hostname", "/q/b/h").err
    assert "Quota by storage type : DISK on path : /q/b is exceeded" in at("-put", "/etc/hosts", "/q/b/h2").err
    assert at("-put", "/etc/hosts", "/q/b/h2", nth=1).rc == 0
    assert "of directory /q/b is exceeded: quota=3" in at("-touchz", "/q/b/n1").err
    assert at("dfsadmin", "-clrQuota", "/").rc == 0
    assert "9223372036854775807" in at("-count", "-q", "/").out, "the root's quota comes back to its first"

    u_ours = FsShell(ferrite_q, workroot, user="alice").run(*USER)
    u_theirs = FsShell(hdfs_q, workroot, user="alice").run(*USER)
    compare(USER, u_ours, u_theirs)
    assert u_ours[0].rc != 0 and "Superuser privilege is required" in u_ours[0].err


WEB = [
    ("PUT", "/wq?op=MKDIRS"),
    ("PUT", "/wq?op=SETQUOTA&namespacequota=7&storagespacequota=4096"),
    ("GET", "/wq?op=GETQUOTAUSAGE"),
    ("GET", "/wq?op=GETCONTENTSUMMARY"),
    ("PUT", "/wq?op=SETQUOTABYSTORAGETYPE&storagetype=SSD&storagespacequota=2048"),
    ("GET", "/wq?op=GETQUOTAUSAGE"),
    ("PUT", "/wq/a?op=MKDIRS"),
    ("GET", "/wq?op=GETCONTENTSUMMARY"),
    ("PUT", "/wq?op=SETQUOTA&namespacequota=7"),
    ("PUT", "/wq?op=SETQUOTABYSTORAGETYPE&storagetype=FLOPPY&storagespacequota=1"),
    ("PUT", "/wq?op=SETQUOTA&namespacequota=-1&storagespacequota=-1"),
    ("PUT", "/wq?op=SETQUOTABYSTORAGETYPE&storagetype=SSD&storagespacequota=-1"),
    ("GET", "/wq?op=GETQUOTAUSAGE"),
    ("GET", "/?op=GETQUOTAUSAGE"),
]


def test_webhdfs_quotas_match_hdfs(ferrite_q, hdfs_q):
    answers = []
    for server in (ferrite_q, hdfs_q):
        got = []
        for method, path in WEB:
            status, _, body, _ = call(server.http, method, f"/webhdfs/v1{path}&user.name={SU}")
            doc = json.loads(body) if body else None
            if isinstance(doc, dict) and "RemoteException" in doc:
                doc["RemoteException"].pop("javaClassName", None)
            got.append((status, doc))
        answers.append(got)
    ours, theirs = answers
    for (method, path), a, b in zip(WEB, ours, theirs):
        if path.startswith("/?"):
            continue  # the two clusters' roots hold different trees by now
        assert a == b, f"{method} {path}\n ferrite: {a}\n    hdfs: {b}"
    assert ours[2][1]["QuotaUsage"]["quota"] == 7 and ours[2][1]["QuotaUsage"]["spaceQuota"] == 4096
    assert ours[5][1]["QuotaUsage"]["typeQuota"] == {"SSD": {"consumed": 0, "quota": 2048}}
    assert ours[13][1]["QuotaUsage"]["quota"] == 2**63 - 1, "the root's quota, as HDFS reports it"


def test_quotas_survive_a_crash_and_an_image(workroot):
    w = workroot / "quota-restart"
    w.mkdir()
    s = start_ferrite(w, datanodes=1)
    batch = [
        C("-mkdir", "-p", "/k/a/b", "/k/c"),
        D("-setQuota", "20", "/k/a"),
        D("-setSpaceQuota", "1g", "/k/a/b"),
        D("-setSpaceQuota", "3g", "-storageType", "DISK", "/k"),
        C("-put", "/etc/hostname", "/k/a/b/h"),
        C("-touchz", "/k/a/t1", "/k/a/t2"),
        C("-mv", "/k/a/t2", "/k/c/"),
        C("-rm", "-skipTrash", "/k/a/t1"),
        C("-setrep", "2", "/k/a/b/h"),
    ]
    look = [C("-count", "-q", "-t", "DISK", "/k", "/k/a", "/k/a/b", "/k/c"), C("-count", "-q", "/k", "/k/a", "/k/a/b")]
    out = FsShell(s, w).run(*batch, *look)
    assert all(r.rc == 0 for r in out), [(c, r) for c, r in zip(batch + look, out) if r.rc]
    before = [r.out for r in out[-2:]]
    s.proc.send_signal(signal.SIGKILL)
    s.proc.wait()
    s = start_ferrite(w, datanodes=1)
    assert [r.out for r in FsShell(s, w).run(*look)] == before
    saved = FsShell(s, w).run(D("-safemode", "enter"), D("-saveNamespace"), D("-safemode", "leave"))
    assert all(r.rc == 0 for r in saved), saved
    assert stop(s) == 0
    s = start_ferrite(w, datanodes=1)
    after = FsShell(s, w).run(*look, D("-setQuota", "3", "/k/c"), C("-touchz", "/k/c/x", "/k/c/y"))
    assert [r.out for r in after[:2]] == before
    assert after[3].rc != 0 and "quota=3 file count=4" in after[3].err, after[3]
    assert stop(s) == 0
