"""Hadoop 3.4.1's FsShell against Ferrite, compared line by line with the same commands
against a real Apache HDFS 3.4.1 NameNode (started by the fixtures, freshly formatted).

Both runs see the same client code, so any difference is a difference in what the servers
answered. Output is normalized only for what must differ: ports and timestamps."""

import re

from conftest import FsShell

NORMALIZE = [
    (re.compile(r"hdfs://127\.0\.0\.1:\d+"), "hdfs://NN"),
    (re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}(:\d{2})?"), "DATE"),
    (re.compile(r"\.Trash/\d{12}(-\d+)?"), ".Trash/CHECKPOINT"),
    # The shell appends the time in ms to a name already taken in the trash.
    (re.compile(r"\d{13}"), "MILLIS"),
]


def norm(text):
    for rx, rep in NORMALIZE:
        text = rx.sub(rep, text)
    return text


def C(*args):
    return list(args)


LONG = "x" * 256

# Commands run as the superuser (the user who started both NameNodes).
ADMIN_BATCH = [
    C("-mkdir", "-p", "/t/a/b"),
    C("-mkdir", "/t/a"),
    C("-mkdir", "/t/missing/x"),
    C("-touchz", "/t/a/f1"),
    C("-touchz", "/t/a/f1"),
    C("-touchz", "/t/a/b/f2"),
    C("-ls", "/t"),
    C("-ls", "-R", "/t"),
    C("-ls", "-d", "/t/a"),
    C("-ls", "/t/nope"),
    C("-stat", "%n %b %F %u:%g %r %o %a", "/t/a/f1"),
    C("-stat", "%n %F %u:%g %a", "/t/a"),
    C("-count", "/t"),
    C("-count", "-q", "-h", "/t"),
    C("-du", "/t"),
    C("-du", "-s", "/t"),
    C("-du", "-s", "-h", "/t/a"),
    C("-test", "-e", "/t/a/f1"),
    C("-test", "-e", "/t/nope"),
    C("-test", "-d", "/t/a"),
    C("-test", "-d", "/t/a/f1"),
    C("-test", "-f", "/t/a/f1"),
    C("-test", "-z", "/t/a/f1"),
    C("-chmod", "700", "/t/a"),
    C("-chmod", "-R", "go+rx", "/t/a"),
    C("-chmod", "1777", "/t/a/b"),
    C("-chown", "alice:staff", "/t/a/f1"),
    C("-chown", "-R", "bob", "/t/a/b"),
    C("-chgrp", "eng", "/t/a"),
    C("-ls", "-R", "/t"),
    C("-mv", "/t/a/f1", "/t/f3"),
    C("-mv", "/t/f3", "/t/a"),
    C("-mv", "/t/nope", "/t/x"),
    C("-mv", "/t/a/b/f2", "/t/a/f1"),
    C("-ls", "-R", "/t"),
    C("-rm", "/t/a"),
    C("-rm", "/t/nope"),
    C("-rm", "-f", "/t/nope"),
    C("-rmdir", "/t/a"),
    C("-mkdir", "/t/empty"),
    C("-rmdir", "/t/empty"),
    C("-mkdir", "-p", "/t/a/f1/x"),
    C("-rm", "-r", "/t/a"),
    C("-ls", "-R", "/t"),
    C("-mkdir", "/shared", "/private"),
    C("-chmod", "777", "/shared"),
    C("-chmod", "700", "/private"),
    C("-ls", "/"),
    # Names over 255 bytes: refused where added, simply absent where looked up.
    C("-touchz", f"/t/{LONG}"),
    C("-mkdir", "-p", f"/t/{'y' * 300}/z"),
    C("-ls", f"/t/{LONG}"),
    C("-test", "-e", f"/t/{LONG}"),
    C("-touchz", f"/t/{LONG[1:]}"),
    C("-mv", f"/t/{LONG[1:]}", f"/t/{LONG}"),
    C("-ls", "-C", "/t"),
]

# Then as an ordinary user that the host does not know (no groups).
USER_BATCH = [
    C("-mkdir", "/alice"),
    C("-mkdir", "/shared/alice"),
    C("-touchz", "/shared/alice/f"),
    C("-ls", "/private"),
    C("-mkdir", "/private/x"),
    C("-chmod", "600", "/shared/alice/f"),
    C("-chown", "bob", "/shared/alice/f"),
    C("-chmod", "777", "/private"),
    C("-ls", "-R", "/shared"),
    C("-rm", "-r", "-skipTrash", "/shared/alice"),
    C("-test", "-e", "/shared/alice"),
]

TRASH_BATCH = [
    C("-mkdir", "-p", "/tr/d"),
    C("-touchz", "/tr/d/f", "/tr/g"),
    C("-rm", "/tr/g"),
    C("-rm", "-r", "/tr/d"),
    C("-ls", "-R", "/tr"),
    C("-ls", "-R", "/user"),
    C("-touchz", "/tr/g"),
    C("-rm", "/tr/g"),
    C("-ls", "-R", "/user"),
    C("-rm", "-skipTrash", "/user/root/.Trash/Current/tr/d/f"),
    C("-expunge", "-immediate"),
    C("-ls", "-R", "/user"),
]

# Against a limit of 4 entries a directory (conftest's DIR_ITEMS_LIMIT).
LIMIT_BATCH = [
    C("-mkdir", "/lim"),
    C("-touchz", "/lim/a", "/lim/b", "/lim/c"),
    C("-mkdir", "/lim/d"),
    C("-touchz", "/lim/e"),
    C("-mkdir", "-p", "/lim/f/g"),
    C("-mv", "/lim/a", "/lim/a2"),
    C("-touchz", "/lim/d/x"),
    C("-mv", "/lim/d/x", "/lim/x"),
    C("-rm", "-skipTrash", "/lim/b"),
    C("-mv", "/lim/d/x", "/lim/x"),
    C("-ls", "-C", "/lim"),
    # The name limit (32 on this pair): a new directory, and a rename within /lim.
    C("-mkdir", "/lim/d/" + "y" * 33),
    C("-mv", "/lim/c", "/lim/" + "z" * 33),
    C("-mv", "/lim/c", "/lim/" + "z" * 32),
    # Refused partway: as in HDFS, the parent directories made before stay. (touchz checks
    # its parent itself, so it never asks the NameNode to make new2.)
    C("-mkdir", "-p", "/lim/d/new/" + "y" * 33),
    C("-touchz", "/lim/d/new2/" + "y" * 33),
    C("-ls", "-C", "-R", "/lim/d"),
]


def compare(batch, ours, theirs):
    assert len(ours) == len(theirs) == len(batch)
    for cmd, a, b in zip(batch, ours, theirs):
        got = (norm(a.out), norm(a.err), a.rc)
        want = (norm(b.out), norm(b.err), b.rc)
        assert got == want, f"hdfs dfs {' '.join(cmd)}\n ferrite: {got}\n    hdfs: {want}"


def test_fsshell_matches_hdfs(ferrite, hdfs, workroot):
    ours = FsShell(ferrite, workroot).run(*ADMIN_BATCH)
    theirs = FsShell(hdfs, workroot).run(*ADMIN_BATCH)
    compare(ADMIN_BATCH, ours, theirs)
    # The comparison alone would pass if both were broken the same way: pin some facts.
    by_cmd = {" ".join(c): r for c, r in zip(ADMIN_BATCH, ours)}
    assert by_cmd["-test -e /t/a/f1"].rc == 0 and by_cmd["-test -e /t/nope"].rc == 1
    assert "No such file or directory" in by_cmd["-ls /t/nope"].err
    assert "alice staff" in ours[29].out and "drwxrwxrwt" in ours[29].out
    assert norm(by_cmd["-count /t"].out).split() == ["3", "2", "0", "/t"]
    too_long = "is exceeded: limit=255 length=256"
    assert too_long in by_cmd[f"-touchz /t/{LONG}"].err
    assert "No such file or directory" in by_cmd[f"-ls /t/{LONG}"].err
    assert by_cmd[f"-test -e /t/{LONG}"].rc == 1
    assert too_long in by_cmd[f"-mv /t/{LONG[1:]} /t/{LONG}"].err

    u_ours = FsShell(ferrite, workroot, user="alice").run(*USER_BATCH)
    u_theirs = FsShell(hdfs, workroot, user="alice").run(*USER_BATCH)
    compare(USER_BATCH, u_ours, u_theirs)
    assert "Permission denied: user=alice, access=WRITE" in u_ours[0].err
    assert [r.rc for r in u_ours] == [1, 0, 0, 1, 1, 0, 1, 1, 0, 0, 1]


def test_fsshell_trash_matches_hdfs(ferrite_trash, hdfs_trash, workroot):
    ours = FsShell(ferrite_trash, workroot).run(*TRASH_BATCH)
    theirs = FsShell(hdfs_trash, workroot).run(*TRASH_BATCH)
    compare(TRASH_BATCH, ours, theirs)
    assert ours[2].rc == 0 and ours[3].rc == 0
    assert "/tr/g" not in ours[4].out and "/tr/d" not in ours[4].out
    assert ".Trash/Current/tr/d/f" in ours[5].out
    # -expunge -immediate checkpointed and removed the trash contents.
    assert ".Trash/Current" not in ours[11].out


def test_fsshell_directory_item_limit_matches_hdfs(ferrite_trash, hdfs_trash, workroot):
    ours = FsShell(ferrite_trash, workroot).run(*LIMIT_BATCH)
    theirs = FsShell(hdfs_trash, workroot).run(*LIMIT_BATCH)
    compare(LIMIT_BATCH, ours, theirs)
    full = "The directory item limit of /lim is exceeded: limit=4 items=4"
    assert [r.rc for r in ours] == [0, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0, 1, 1, 0, 1, 1, 0]
    for i in (3, 4, 7):
        assert full in ours[i].err, ours[i].err
    assert ours[10].out.split() == ["/lim/a2", "/lim/c", "/lim/d", "/lim/x"]
    for i in (11, 12, 14):
        assert "is exceeded: limit=32 length=33" in ours[i].err, ours[i].err
    assert "No such file or directory" in ours[15].err
    assert ours[16].out.split() == ["/lim/d/new"]
