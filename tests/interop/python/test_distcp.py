"""`distcp -update -diff s1 s2` from one Ferrite directory to another with Hadoop 3.4.1's own
distcp (MapReduce's local job runner): the target ends equal to the source's snapshot s2, and
only what changed between the snapshots is applied to it (a renamed file is renamed, not
copied again; an unchanged file is left alone)."""

import subprocess

import pytest

from conftest import FsShell, _server, java_cp, start_ferrite, write_site
from test_fsshell import C

HOSTS = "/etc/hosts"


def distcp(server, workroot, *args):
    conf = workroot / f"conf-distcp-{server.port}"
    write_site(conf, {"fs.defaultFS": server.url, "mapreduce.framework.name": "local"}, {})
    cmd = ["java", "-Djava.net.preferIPv4Stack=true", "-cp", java_cp(conf), "org.apache.hadoop.tools.DistCp", *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=conf)
    assert p.returncode == 0, f"distcp {' '.join(args)} failed:\n{p.stdout}\n{p.stderr[-4000:]}"
    return p


def tree(shell, top):
    """(relative path, kind, length) of everything under `top`, from `-ls -R`."""
    (r,) = shell.run(C("-ls", "-R", top))
    assert r.rc == 0, r.err
    out = []
    for line in r.out.splitlines():
        f = line.split()
        if len(f) >= 8:
            out.append((f[-1][len(top):], f[0][0], int(f[4])))
    return sorted(out)


def mtimes(shell, paths):
    return [r.out.strip() for r in shell.run(*[C("-stat", "%Y", p) for p in paths])]


CLEANUP = [
    C("-deleteSnapshot", "/dc/src", "s1"),
    C("-deleteSnapshot", "/dc/src", "s2"),
    C("-deleteSnapshot", "/dc/dst", "s1"),
    C("-rm", "-r", "-skipTrash", "/dc"),
]


@pytest.fixture(scope="module")
def ferrite_distcp(workroot):
    # A server of its own: other suites compare snapshot ids, which every snapshot taken
    # on a server moves on.
    yield from _server(workroot, "ferrite-distcp", lambda w: start_ferrite(w))


def test_distcp_update_diff_applies_only_the_changes(ferrite_distcp, workroot):
    ferrite = ferrite_distcp
    sh = FsShell(ferrite, workroot)
    try:
        copy_by_diff(ferrite, workroot, sh)
    finally:
        sh.run(*CLEANUP)
    (r,) = sh.run(C("-test", "-e", "/dc"))
    assert r.rc == 1, "the snapshottable directories went with their snapshots"


def copy_by_diff(ferrite, workroot, sh):
    setup = [
        C("-mkdir", "-p", "/dc/src/a", "/dc/src/b"),
        C("-put", HOSTS, "/dc/src/a/one"),
        C("-put", HOSTS, "/dc/src/a/two"),
        C("-put", HOSTS, "/dc/src/b/three"),
        C("-put", HOSTS, "/dc/src/keep"),
        ["dfsadmin", "-allowSnapshot", "/dc/src"],
        C("-createSnapshot", "/dc/src", "s1"),
    ]
    assert all(r.rc == 0 for r in sh.run(*setup))
    distcp(ferrite, workroot, "-update", "/dc/src/.snapshot/s1", "/dc/dst")
    for r in sh.run(["dfsadmin", "-allowSnapshot", "/dc/dst"], C("-createSnapshot", "/dc/dst", "s1")):
        assert r.rc == 0, r.err
    assert tree(sh, "/dc/dst") == tree(sh, "/dc/src/.snapshot/s1")
    before = mtimes(sh, ["/dc/dst/a/one", "/dc/dst/b/three"])

    changes = [
        C("-rm", "-skipTrash", "/dc/src/a/two"),
        C("-mv", "/dc/src/b/three", "/dc/src/b/renamed"),
        C("-appendToFile", HOSTS, "/dc/src/keep"),
        C("-put", HOSTS, "/dc/src/a/new"),
        C("-mkdir", "/dc/src/c"),
        C("-put", HOSTS, "/dc/src/c/four"),
        C("-createSnapshot", "/dc/src", "s2"),
        # After s2: not copied.
        C("-put", HOSTS, "/dc/src/late"),
    ]
    assert all(r.rc == 0 for r in sh.run(*changes))
    p = distcp(ferrite, workroot, "-update", "-diff", "s1", "s2", "/dc/src", "/dc/dst")
    # distcp falls back to a plain -update copy when the diff cannot be used.
    assert "Failed to use snapshot diff" not in p.stderr + p.stdout
    assert "sync failed" not in p.stderr + p.stdout

    want = tree(sh, "/dc/src/.snapshot/s2")
    assert tree(sh, "/dc/dst") == want
    assert ("/late", "-", len(open(HOSTS).read())) not in want
    hosts = open(HOSTS).read()
    cats = sh.run(*[C("-cat", f"/dc/dst{p}") for p, kind, _ in want if kind == "-"])
    files = [p for p, kind, _ in want if kind == "-"]
    for p, r in zip(files, cats):
        assert r.out == (hosts * 2 if p == "/keep" else hosts), p
    # The unchanged file was not copied again, and the renamed one was renamed in place.
    assert mtimes(sh, ["/dc/dst/a/one", "/dc/dst/b/renamed"]) == before
    (diff,) = sh.run(["snapshotDiff", "/dc/src", "s1", "s2"])
    assert "R\t./b/three -> ./b/renamed" in diff.out, diff.out
