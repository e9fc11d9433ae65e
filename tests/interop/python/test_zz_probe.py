from conftest import FsShell
from test_fsshell import C
HOSTS = "/etc/hosts"
S = [
    C("-mkdir", "-p", "/p/d/sub/deep", "/p/d/keep"),
    C("-put", HOSTS, "/p/d/f"),
    C("-put", HOSTS, "/p/d/g"),
    C("-put", HOSTS, "/p/d/sub/x"),
    C("-put", HOSTS, "/p/d/sub/deep/y"),
    C("-put", HOSTS, "/p/d/keep/z"),
    ["dfsadmin", "-setQuota", "100", "/p/d"],
    ["dfsadmin", "-allowSnapshot", "/p/d"],
    C("-createSnapshot", "/p/d", "s1"),
    C("-count", "-q", "/p/d"),
    C("-rm", "-skipTrash", "/p/d/f"),
    C("-rm", "-r", "-skipTrash", "/p/d/sub"),
    C("-appendToFile", HOSTS, "/p/d/g"),
    C("-count", "/p/d"),
    C("-count", "-x", "/p/d"),
    C("-count", "-q", "/p/d"),
    C("-du", "-s", "/p/d"),
    C("-du", "-s", "-x", "/p/d"),
    C("-du", "/p/d"),
    C("-count", "/p/d/keep"),
    C("-count", "/p"),
    C("-count", "-x", "/p"),
    C("-createSnapshot", "/p/d", "s2"),
    C("-rm", "-skipTrash", "/p/d/g"),
    C("-count", "/p/d"),
    C("-count", "-x", "/p/d"),
    C("-count", "-q", "/p/d"),
    C("-deleteSnapshot", "/p/d", "s1"),
    C("-count", "/p/d"),
    C("-count", "-q", "/p/d"),
    C("-deleteSnapshot", "/p/d", "s2"),
    C("-count", "-q", "/p/d"),
]
def test_probe(ferrite, hdfs_cluster, workroot):
    one = {"dfs.replication": 1}
    for srv in (hdfs_cluster, ferrite):
        for c, r in zip(S, FsShell(srv, workroot, hdfs=one).run(*S)):
            if "count" in c[0] or "du" in c[0]:
                print(" ".join(c), "=>", r.rc, repr(r.out[-600:]), repr(r.err[-300:]))
