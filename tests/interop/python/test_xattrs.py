"""Extended attributes through Hadoop 3.4.1's FsShell (`-setfattr`, `-getfattr`), compared
line by line with a real HDFS 3.4.1 NameNode: the namespaces, the CREATE/REPLACE rules,
the per-inode and size limits, values in each encoding, permissions for an ordinary user;
then the attributes survive restarts (journal replay, and an image), and WebHDFS's
GETXATTRS / LISTXATTRS / SETXATTR / REMOVEXATTR answer as HDFS's do."""

import json

import pytest
from conftest import FsShell, start_ferrite, stop
from test_fsshell import C, compare, norm
from test_webhdfs import call, SU

BIG = "v" * 16400

ADMIN = [
    C("-mkdir", "-p", "/x/d"),
    C("-touchz", "/x/f"),
    C("-setfattr", "-n", "user.colour", "-v", "blue", "/x/f"),
    C("-setfattr", "-n", "user.size", "-v", "0x0102ff", "/x/f"),
    C("-setfattr", "-n", "user.b64", "-v", "0sAAEC", "/x/f"),
    C("-setfattr", "-n", "user.empty", "/x/f"),
    C("-setfattr", "-n", "trusted.t", "-v", "root-only", "/x/f"),
    C("-getfattr", "-d", "/x/f"),
    C("-getfattr", "-d", "-e", "hex", "/x/f"),
    C("-getfattr", "-d", "-e", "base64", "/x/f"),
    C("-getfattr", "-n", "user.colour", "/x/f"),
    C("-getfattr", "-n", "user.missing", "/x/f"),
    C("-getfattr", "-R", "-d", "/x"),
    # Replacing keeps one attribute of the name, and moves it first.
    C("-setfattr", "-n", "user.colour", "-v", "green", "/x/f"),
    C("-getfattr", "-d", "/x/f"),
    C("-setfattr", "-x", "user.size", "/x/f"),
    C("-setfattr", "-x", "user.size", "/x/f"),
    C("-getfattr", "-d", "/x/f"),
    # Namespaces a user may not touch, and names without one.
    C("-setfattr", "-n", "system.s", "-v", "1", "/x/f"),
    C("-setfattr", "-n", "security.s", "-v", "1", "/x/f"),
    C("-setfattr", "-n", "raw.r", "-v", "1", "/x/f"),
    C("-setfattr", "-n", "nonamespace", "-v", "1", "/x/f"),
    C("-setfattr", "-n", "user.big", "-v", BIG, "/x/f"),
    C("-setfattr", "-n", "user.d", "-v", "dir", "/x/d"),
    C("-getfattr", "-d", "/x/d"),
    C("-getfattr", "-d", "/x/nope"),
    C("-setfattr", "-n", "user.a", "-v", "1", "/x/nope"),
    C("-chmod", "777", "/x/d"),
    C("-chmod", "1777", "/x"),
    C("-touchz", "/x/mine"),
    C("-chmod", "666", "/x/mine"),
    # A file its owners keep from the superuser: the mark takes no value and stays.
    C("-touchz", "/x/secret"),
    C("-setfattr", "-n", "security.hdfs.unreadable.by.superuser", "-v", "1", "/x/secret"),
    C("-setfattr", "-n", "security.hdfs.unreadable.by.superuser", "/x/secret"),
    C("-getfattr", "-d", "/x/secret"),
    C("-cat", "/x/secret"),
    C("-setfattr", "-x", "security.hdfs.unreadable.by.superuser", "/x/secret"),
]

# As alice, who owns nothing there.
USER = [
    C("-getfattr", "-d", "/x/f"),
    C("-setfattr", "-n", "user.u", "-v", "1", "/x/f"),
    C("-setfattr", "-n", "user.u", "-v", "1", "/x/d"),
    C("-getfattr", "-d", "/x/d"),
    C("-setfattr", "-n", "trusted.t", "-v", "1", "/x/d"),
    # /x is sticky: only its owner changes its user attributes.
    C("-setfattr", "-n", "user.u", "-v", "1", "/x"),
    C("-setfattr", "-n", "user.u", "-v", "1", "/x/mine"),
    C("-getfattr", "-d", "/x/mine"),
]


def test_fsshell_xattrs_match_hdfs(ferrite, hdfs, workroot):
    ours = FsShell(ferrite, workroot).run(*ADMIN)
    theirs = FsShell(hdfs, workroot).run(*ADMIN)
    compare(ADMIN, ours, theirs)
    by = {" ".join(c): r for c, r in zip(ADMIN, ours)}
    dump = ours[7].out
    assert 'user.colour="blue"' in dump and "trusted.t" in dump, dump
    # (The shell prints a Java HashMap of the attributes: its order is the client's.)
    assert 'user.colour="green"' in ours[14].out and "blue" not in ours[14].out, ours[14].out
    assert "At least one of the attributes provided was not found" in by["-getfattr -n user.missing /x/f"].err
    assert "No matching attributes found for remove operation" in ours[16].err
    assert "superuser is not allowed to perform this operation" in ours[35].err, ours[35]

    u_ours = FsShell(ferrite, workroot, user="alice").run(*USER)
    u_theirs = FsShell(hdfs, workroot, user="alice").run(*USER)
    compare(USER, u_ours, u_theirs)
    assert [r.rc for r in u_ours] == [0, 1, 0, 0, 1, 1, 0, 0]
    assert "trusted" not in u_ours[0].out


def test_xattrs_survive_restarts_and_an_image(workroot):
    import signal

    w = workroot / "xattr-restart"
    w.mkdir()
    s = start_ferrite(w)
    batch = [
        C("-mkdir", "/k"),
        C("-touchz", "/k/f"),
        C("-setfattr", "-n", "user.one", "-v", "1", "/k/f"),
        C("-setfattr", "-n", "user.two", "-v", "0x00ff", "/k/f"),
        C("-setfattr", "-n", "trusted.three", "/k"),
        C("-setfattr", "-x", "user.one", "/k/f"),
        C("-touchz", "/k/gone"),
        C("-setfattr", "-n", "user.gone", "-v", "x", "/k/gone"),
        C("-rm", "-skipTrash", "/k/gone"),
        C("-touchz", "/k/gone"),
    ]
    look = [C("-getfattr", "-R", "-d", "-e", "hex", "/k")]
    out = FsShell(s, w).run(*batch, *look)
    assert all(r.rc == 0 for r in out), out
    before = out[-1].out
    assert "user.two=0x00ff" in before and "trusted.three" in before and "user.one" not in before
    assert "user.gone" not in before, "a new file of a deleted one's name has no attributes"
    # Journal replay after kill -9, then an image (saveNamespace) and a clean restart.
    s.proc.send_signal(signal.SIGKILL)
    s.proc.wait()
    s = start_ferrite(w)
    assert FsShell(s, w).run(*look)[0].out == before
    saved = FsShell(s, w).run(["dfsadmin", "-safemode", "enter"], ["dfsadmin", "-saveNamespace"], ["dfsadmin", "-safemode", "leave"])
    assert all(r.rc == 0 for r in saved), saved
    assert stop(s) == 0
    s = start_ferrite(w)
    assert FsShell(s, w).run(*look)[0].out == before
    assert stop(s) == 0


WEB = [
    ("PUT", "/wx?op=MKDIRS"),
    ("PUT", "/wx/f?op=CREATE&overwrite=true"),
    ("PUT", "/wx/f?op=SETXATTR&xattr.name=user.a&xattr.value=hello&flag=CREATE"),
    ("PUT", "/wx/f?op=SETXATTR&xattr.name=user.a&xattr.value=again&flag=CREATE"),
    ("PUT", "/wx/f?op=SETXATTR&xattr.name=user.a&xattr.value=0x6869&flag=REPLACE"),
    ("PUT", "/wx/f?op=SETXATTR&xattr.name=user.b&xattr.value=0sAAE%3D&flag=CREATE"),
    ("PUT", "/wx/f?op=SETXATTR&xattr.name=bad&xattr.value=1&flag=CREATE"),
    ("GET", "/wx/f?op=GETXATTRS"),
    ("GET", "/wx/f?op=GETXATTRS&encoding=hex"),
    ("GET", "/wx/f?op=GETXATTRS&encoding=base64"),
    ("GET", "/wx/f?op=GETXATTRS&encoding=text"),
    ("GET", "/wx/f?op=GETXATTRS&xattr.name=user.b&encoding=hex"),
    ("GET", "/wx/f?op=GETXATTRS&xattr.name=user.nope&encoding=text"),
    ("GET", "/wx/f?op=GETXATTRS&xattr.name=user.a&xattr.name=user.b&encoding=HEX"),
    ("GET", "/wx/f?op=LISTXATTRS"),
    ("PUT", "/wx/f?op=REMOVEXATTR&xattr.name=user.a"),
    ("PUT", "/wx/f?op=REMOVEXATTR&xattr.name=user.a"),
    ("GET", "/wx/f?op=LISTXATTRS"),
    ("GET", "/wx/nope?op=LISTXATTRS"),
    ("GET", "/wx/nope?op=GETXATTRS&encoding=hex"),
    ("PUT", "/wx/nope?op=SETXATTR&xattr.name=user.a&xattr.value=1&flag=CREATE"),
    ("PUT", "/wx/nope?op=REMOVEXATTR&xattr.name=user.a"),
    ("PUT", "/wx/f?op=SETXATTR&xattr.name=trusted.t&xattr.value=1&flag=CREATE"),
    ("GET", "/wx/f?op=GETXATTRS&encoding=text"),
    ("PUT", "/wx/f?op=SETXATTR&xattr.name=system.s&xattr.value=1&flag=CREATE"),
]


@pytest.fixture(scope="module")
def ferrite_one_dn(workroot):
    """A Ferrite of its own, with one DataNode like the HDFS it is compared with (the
    shared `ferrite` is compared with an HDFS that never sees these requests)."""
    w = workroot / "ferrite-xattr-web"
    w.mkdir()
    s = start_ferrite(w, datanodes=1)
    yield s
    assert stop(s) == 0


def test_webhdfs_xattrs_match_hdfs(ferrite_one_dn, hdfs_cluster):
    answers = []
    for server in (ferrite_one_dn, hdfs_cluster):
        got = []
        for method, path in WEB:
            sep = "&" if "?" in path else "?"
            status, _, body, _ = call(server.http, method, f"/webhdfs/v1{path}{sep}user.name={SU}", body=b"" if "CREATE" in path and "op=CREATE" in path else None)
            try:
                doc = json.loads(body) if body else None
            except ValueError:
                doc = body.decode(errors="replace")
            if isinstance(doc, dict) and "RemoteException" in doc:
                doc["RemoteException"].pop("javaClassName", None)
            got.append((status, doc))
        answers.append(got)
    ours, theirs = answers
    for (method, path), a, b in zip(WEB, ours, theirs):
        assert a == b, f"{method} {path}\n ferrite: {a}\n    hdfs: {b}"
    # Pinned, so that both being wrong the same way would still fail.
    assert ours[8][1] == {"XAttrs": [{"name": "user.b", "value": "0x0001"}, {"name": "user.a", "value": "0x6869"}]}
    assert ours[14][1] == {"XAttrNames": '["user.b","user.a"]'}
    assert ours[16][0] == 403 and ours[17][1] == {"XAttrNames": '["user.b"]'}
