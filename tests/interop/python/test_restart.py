"""The namespace survives NameNode restarts, clean (SIGTERM) and hard (kill -9), as seen by
the real clients."""

import signal

from conftest import FsShell, start_ferrite, stop
from hdfs_native import Client


def snapshot(c):
    return sorted((s.path, s.isdir, s.permission, s.owner, s.group, s.length) for s in c.list_status("/", recursive=True))


def restart(server, workdir, hard):
    if hard:
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait()
    else:
        assert stop(server) == 0
    return start_ferrite(workdir)


def test_hdfs_native_namespace_survives_restarts(workroot):
    w = workroot / "restart-native"
    w.mkdir()
    s = start_ferrite(w)
    c = Client(s.url)
    c.mkdirs("/keep/a/b", create_parent=True)
    for i in range(50):
        c.create(f"/keep/a/f{i}").close()
    c.rename("/keep/a/f0", "/keep/moved")
    c.delete("/keep/a/f1")
    c.set_permission("/keep/a", 0o700)
    c.set_owner("/keep/moved", "alice", "staff")
    before = snapshot(c)
    for hard in (False, True, True, False):
        s = restart(s, w, hard)
        c = Client(s.url)
        assert snapshot(c) == before
        c.create(f"/keep/after-{len(before)}").close()
        before = snapshot(c)
    stop(s)


def test_fsshell_sees_the_same_tree_after_restarts(workroot):
    w = workroot / "restart-shell"
    w.mkdir()
    s = start_ferrite(w)
    setup = [["-mkdir", "-p", "/r/x/y"], ["-touchz", "/r/x/f"], ["-chmod", "750", "/r/x"], ["-mv", "/r/x/f", "/r/g"]]
    looks = [["-ls", "-R", "/"], ["-count", "/r"], ["-stat", "%n %F %a %u:%g", "/r/g"]]
    out = FsShell(s, w).run(*setup, *looks)
    assert all(r.rc == 0 for r in out)
    want = [(r.out, r.rc) for r in out[len(setup):]]
    assert "/r/g" in want[0][0]
    for hard in (True, False):
        s = restart(s, w, hard)
        got = [(r.out, r.rc) for r in FsShell(s, w).run(*looks)]
        assert got == want
    stop(s)


def test_admin_safemode_and_save_namespace(workroot):
    import subprocess

    from conftest import FERRITE_BIN

    w = workroot / "admin"
    w.mkdir()
    s = start_ferrite(w)
    admin = lambda *a: subprocess.run([str(FERRITE_BIN), "admin", "--fs", s.url, *a], capture_output=True, text=True, timeout=60)
    assert admin("safemode", "get").stdout.strip() == "Safe mode is OFF"
    assert admin("safemode", "enter").stdout.strip() == "Safe mode is ON"
    c = Client(s.url)
    try:
        c.mkdirs("/blocked")
        raise AssertionError("mkdirs must fail in safe mode")
    except Exception as e:
        assert "SafeModeException" in str(e) or "safe mode" in str(e)
    assert admin("safemode", "leave").stdout.strip() == "Safe mode is OFF"
    c.mkdirs("/saved/d", create_parent=True)
    r = admin("save-namespace")
    assert r.returncode == 0 and "successful" in r.stdout, r.stderr
    images = sorted(p.name for p in (w / "data" / "name").iterdir() if p.name.startswith("fsimage_"))
    assert images, "an image was written"
    assert admin("safemode", "get").stdout.strip() == "Safe mode is OFF", "save-namespace left safe mode again"
    s = restart(s, w, hard=True)
    assert Client(s.url).get_file_info("/saved/d").isdir
    stop(s)


def test_java_dfsadmin_drives_safe_mode_the_journal_and_checkpoints(workroot):
    """Hadoop's own `hdfs dfsadmin` (DFSAdmin) against Ferrite: safe mode, -rollEdits,
    -restoreFailedStorage and -saveNamespace, as an operator of HDFS would use them."""
    import re

    w = workroot / "dfsadmin"
    w.mkdir()
    s = start_ferrite(w)
    admin = lambda *a: ["dfsadmin", *a]
    shell = FsShell(s, w)
    out = shell.run(
        ["-mkdir", "-p", "/adm/a"],
        admin("-safemode", "get"),
        admin("-rollEdits"),
        ["-touchz", "/adm/a/f"],
        admin("-rollEdits"),
    )
    assert all(r.rc == 0 for r in out), out
    assert out[1].out.strip() == "Safe mode is OFF"
    first, second = (int(re.search(r"New segment starts at txid (\d+)", r.out).group(1)) for r in (out[2], out[4]))
    assert second > first, (out[2], out[4])
    # The roll finalized the segment before `second` in the journal directory.
    names = {p.name for p in (w / "data").rglob("edits_*")}
    assert f"edits_{first:019d}-{second - 1:019d}" in names, names
    assert f"edits_inprogress_{second:019d}" in names, names
    out = shell.run(
        admin("-restoreFailedStorage", "check"),
        admin("-restoreFailedStorage", "true"),
        admin("-restoreFailedStorage", "check"),
        admin("-safemode", "enter"),
        admin("-rollEdits"),
        ["-mkdir", "/adm/refused"],
        admin("-saveNamespace"),
        admin("-saveNamespace", "-beforeShutdown"),
        admin("-safemode", "leave"),
    )
    assert [r.rc == 0 for r in out] == [True] * 4 + [False, False, True, True, True], out
    text = [r.out.strip() for r in out]
    assert text[:3] == ["restoreFailedStorage is set to false", "restoreFailedStorage is set to true", "restoreFailedStorage is set to true"]
    assert text[3] == "Safe mode is ON"
    assert "Log not rolled" in out[4].err, out[4]
    assert "safe mode" in out[5].err, out[5]
    assert text[6] == "Save namespace successful"
    # The image just written is recent and current: the shutdown checkpoint is skipped.
    assert text[7].endswith("No extra checkpoint has been made"), out[7]
    assert text[8] == "Safe mode is OFF"
    # After a hard restart the namespace is there; the restore switch is a running setting.
    s = restart(s, w, hard=True)
    again = FsShell(s, w).run(["-test", "-e", "/adm/a/f"], ["-test", "-e", "/adm/refused"], admin("-restoreFailedStorage", "check"))
    assert [r.rc for r in again[:2]] == [0, 1], again
    assert again[2].out.strip() == "restoreFailedStorage is set to false"
    stop(s)
