"""Write semantics with real clients, side by side with a real HDFS 3.4.1 where one can say
what the answer should be: hflush and lease recovery (the write-ahead-log pattern), append
from every client, truncate, concat, the multipart uploader, located listings, path
handles, and paths that go on past a file."""

import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import FERRITE_BIN, FsShell, Server, java_cp
from hdfs_native import Client, WriteOptions
from test_datapath import process_cluster, remote_ports

RECORDS, RECORD = 300, 512


def shell(server, w, user=None):
    """Hadoop's shell for `server`. The real HDFS cluster here has one DataNode: its files
    get one replica, so that appends to them do not look for a DataNode to add."""
    site = {"dfs.replication": 1} if server.others else {}
    return FsShell(server, w, user=user, hdfs=site)


def java(server, w, cls, *args, **kw):
    """Runs one of the interop drivers (ferrite.interop.*) with a client configured for
    `server`; returns the Popen when `popen`, else the finished run."""
    sh = shell(server, w)
    cmd = ["java", "-Djava.net.preferIPv4Stack=true", "-cp", java_cp(sh.conf), f"ferrite.interop.{cls}", *args]
    kw.setdefault("cwd", w)
    if kw.pop("popen", False):
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=sh.env, **kw)
    kw.setdefault("timeout", 300)
    return subprocess.run(cmd, capture_output=True, text=True, env=sh.env, **kw)


def api(server, w, *commands):
    """ApiBatch: each command's answer, as text."""
    text = "".join("\t".join(c) + "\n" for c in commands)
    p = java(server, w, "ApiBatch", input=text)
    blocks = re.findall(r"==BEGIN==\n(.*?)==END==\n", p.stdout, re.S)
    assert len(blocks) == len(commands), p.stdout + p.stderr[-3000:]
    return [normalize(b, server) for b in blocks]


def normalize(text, server):
    """Answers differ between clusters only in the client's name and the address."""
    text = re.sub(r"DFSClient_NONMAPREDUCE_-?\d+_\d+", "DFSClient_X", text)
    return text.replace(server.url, "hdfs://NN").replace(f":{server.port}", ":PORT")


def start_writer(server, w, path, n=RECORDS, sync=False):
    """A Java writer of `n` records, each hflushed (hsynced), left open."""
    args = ["write", path, str(n), str(RECORD)] + (["hsync"] if sync else [])
    p = java(server, w, "WalCheck", *args, popen=True)
    deadline = time.time() + 120
    for line in p.stdout:
        if line.strip() == "done":
            return p
        assert time.time() < deadline, "the writer did not finish its records"
    raise AssertionError(f"the writer stopped early (rc {p.wait()})")


def wal_read(server, w, path):
    out = java(server, w, "WalCheck", "read", path, str(RECORD))
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.split("\n")


def wal_run(server, w, path, sync=False):
    """The write-ahead-log pattern: records hflushed, read live, writer killed with
    SIGKILL, lease recovered from another client, read again."""
    writer = start_writer(server, w, path, sync=sync)
    live = wal_read(server, w, path)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    rec = java(server, w, "WalCheck", "recover", path)
    assert rec.returncode == 0, rec.stderr[-3000:]
    return live, rec.stdout.split("\n"), wal_read(server, w, path)


def test_hflushed_records_survive_a_killed_writer_and_lease_recovery_as_on_hdfs(ferrite, hdfs_cluster, workroot):
    got = {}
    for name, server in (("ferrite", ferrite), ("hdfs", hdfs_cluster)):
        w = workroot / f"wal-{name}"
        w.mkdir()
        got[name] = [wal_run(server, w, "/wal/hflush.log"), wal_run(server, w, "/wal/hsync.log", sync=True)]
    whole = [f"records {RECORDS}", f"length {RECORDS * RECORD}", ""]
    for run in got["ferrite"]:
        live, recovered, after = run
        assert live == whole, "a live reader sees every flushed record"
        assert recovered == ["recovered", f"length {RECORDS * RECORD}", ""]
        assert after == whole, "every record flushed before the kill is there, nothing torn"
    assert got["ferrite"] == got["hdfs"]


def uuid_of(dn_dir: Path) -> str:
    text = (dn_dir / "current" / "VERSION").read_text()
    return re.search(r"datanodeUuid=(\S+)", text).group(1)


def lease_answers(text):
    """LeaseCheck's lines with what differs between clusters (inode and block ids, the
    block pool) masked. HDFS 3.4.1 removes a deleted file's blocks from its block map in
    the background (its marked-delete scrubber), so a block call made just after the delete
    finds the block gone ("does not exist") or still there with its file gone ("belonged
    to does not exist"), as the scrubber's timing has it; Ferrite removes them with the
    delete. Both are the same IOException, read here as one answer."""
    text = re.sub(r"\(inode [1-9]\d*\)", "(inode ID)", text)
    text = re.sub(r"BP-[\w.-]+:", "BP:", text)
    text = re.sub(r"blk_\d+_\d+", "blk", text)
    text = text.replace(
        "The file blk belonged to does not exist or it is not under construction.",
        "BP:blk does not exist.",
    )
    return text.splitlines()


def test_a_writer_whose_file_is_no_longer_its_own_is_refused_as_on_hdfs(ferrite, hdfs_cluster, workroot):
    """A frozen writer that wakes after its file was recovered (and moved), deleted,
    renamed over, or deleted and created anew by another client: each call its client
    makes on the file (addBlock, getAdditionalDatanode, fsync, abandonBlock, complete,
    updateBlockForPipeline, updatePipeline) answers HDFS's exception and message, and the
    file is left as it was."""
    runs = {}
    for name, server in (("ferrite", ferrite), ("hdfs", hdfs_cluster)):
        p = java(server, workroot, "LeaseCheck", timeout=600)
        assert p.returncode == 0, p.stdout + p.stderr[-3000:]
        runs[name] = lease_answers(p.stdout)
    ours, theirs = runs["ferrite"], runs["hdfs"]
    assert len(ours) == len(theirs) == 5 * 8 + 5, ours
    diffs = [f"ferrite: {a}\n   hdfs: {b}" for a, b in zip(ours, theirs) if a != b]
    assert not diffs, "\n".join(diffs)
    # Pinned, so that both being wrong the same way would still fail.
    expired = "org.apache.hadoop.hdfs.server.namenode.LeaseExpiredException: File is not open for writing"
    assert f"recovered-moved getAdditionalDatanode: error {expired}: /lease/recovered-moved.moved (inode ID)" in "\n".join(ours)
    assert not [line for line in ours if ": ok " in line], ours
    assert "recovered state: length 100 closed true" in ours
    assert "recreated state: length 7 closed true" in ours


def test_recovery_goes_on_when_the_primary_dies_before_it_is_told(workroot):
    """The NameNode picks a primary DataNode and orders it to recover the block. Here every
    DataNode is frozen when the order is made, and the chosen primary is then killed: the
    order can never be carried out. After the recovery timeout the NameNode starts again
    with another primary, which also finds the dead node unreachable and agrees on the
    length with the one left; every flushed record is kept."""
    w = workroot / "wal-primary-dies"
    with process_cluster(w, 3, nn_conf=["ferrite.namenode.block-recovery.timeout.ms=3000"]) as (url, dns, dirs, _):
        srv = Server(url, int(url.rsplit(":", 1)[1]), None, w)
        writer = start_writer(srv, w, "/wal/log", n=100)
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        for p in dns:
            p.send_signal(signal.SIGSTOP)
        once = java(srv, w, "WalCheck", "recoverOnce", "/wal/log")
        assert once.stdout.strip() == "false", once.stdout + once.stderr[-2000:]
        log = w / "cluster.log"
        m = None
        for _ in range(100):
            m = re.search(r"block recovery started.*path=/wal/log.*primary=(\S+)", re.sub(r"\x1b\[[0-9;]*m", "", log.read_text()))
            if m:
                break
            time.sleep(0.1)
        assert m, "the NameNode logged no recovery"
        primary = [uuid_of(d) for d in dirs].index(m.group(1))
        dns[primary].send_signal(signal.SIGKILL)
        # Meanwhile another client's append is told to come back later. recoverLease handed
        # the lease to the recoverer (fresh, not lapsed) and the last block is under
        # recovery, so HDFS's recoverLeaseInternal words it as another's recovery.
        busy = api(srv, w, ("append", "/wal/log", "x"))[0]
        assert "Failed to APPEND_FILE /wal/log for DFSClient_X on 127.0.0.1 because another recovery is in progress by DFSClient_X on 127.0.0.1" in busy, busy
        for i, p in enumerate(dns):
            if i != primary:
                p.send_signal(signal.SIGCONT)
        # `hdfs debug recoverLease` retries until the file is closed.
        rec = shell(srv, w).run(["debug", "recoverLease", "-path", "/wal/log", "-retries", "10"])[0]
        assert rec.rc == 0 and "recoverLease SUCCEEDED on /wal/log" in rec.out, rec.out + rec.err[-2000:]
        plain = re.sub(r"\x1b\[[0-9;]*m", "", log.read_text())
        # Started again (by the next recoverLease or the NameNode's own check, whichever
        # came first once the first attempt was overdue) with another primary.
        starts = re.findall(r"block recovery started.*path=/wal/log.*primary=(\S+)", plain)
        assert len(starts) >= 2 and starts[-1] != m.group(1), starts
        assert wal_read(srv, w, "/wal/log") == ["records 100", f"length {100 * RECORD}", ""]


def test_a_silent_datanode_is_named_by_the_node_before_it(workroot):
    """A DataNode that stops answering mid-write (SIGSTOP: its connections stay open and
    nothing comes back) is named by the node before it in the pipeline, and Hadoop's
    client drops exactly that node and writes on with the other two. Each waits for the
    next node's ack the DataNodes' socket timeout (3 s here) plus 5 s per node after it,
    as HDFS's do, so the nearest gives up first: the tail's neighbour after 8 s, the head
    after 13 s, the client (5 s + 5 s per node) after 20 s. The writer's heartbeats (every
    2.5 s, half its own timeout) go on reaching the nodes meanwhile, and must not put off
    the wait for an ack; had they, the client would have timed out and blamed its first
    node."""
    w = workroot / "silent-datanode"
    with process_cluster(w, 3, dn_conf=["dfs.client.socket-timeout=3000"]) as (url, dns, dirs, xfer):
        srv = Server(url, int(url.rsplit(":", 1)[1]), None, w)
        sh = FsShell(srv, w / "client", hdfs={
            "dfs.client.socket-timeout": 5000,
            # Three DataNodes: no spare to bring in, so write on with two.
            "dfs.client.block.write.replace-datanode-on-failure.enable": "false",
        })
        cmd = ["java", "-Djava.net.preferIPv4Stack=true", "-cp", java_cp(sh.conf), "ferrite.interop.WalCheck", "trickle", "/wal/silent", "40", str(RECORD), "100"]
        writer = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=sh.env, cwd=sh.workdir)
        silent = None
        try:
            for line in writer.stdout:
                if line.strip() == "flushed 10":
                    break
            holders = [i for i, d in enumerate(dirs) if any(d.rglob("rbw/blk_*"))]
            assert len(holders) == 3
            # Not the node the client streams to: that one only the client can time out.
            first = remote_ports(writer.pid)
            silent = next(i for i in holders if xfer[i] not in first)
            dns[silent].send_signal(signal.SIGSTOP)
            out, err = writer.communicate(timeout=120)
        finally:
            if silent is not None:
                dns[silent].send_signal(signal.SIGCONT)
            if writer.poll() is None:
                writer.kill()
        assert writer.returncode == 0 and "closed" in out, err[-3000:]
        bad = re.findall(r"datanode \d+\(DatanodeInfoWithStorage\[127\.0\.0\.1:(\d+)", err)
        assert bad and {int(p) for p in bad} == {xfer[silent]}, err[-3000:]
        for i in range(3):
            if i != silent:
                assert any(dirs[i].rglob("finalized/**/blk_*")), f"DataNode {i} kept the block"
        whole = ["records 40", f"length {40 * RECORD}", ""]
        assert wal_read(srv, w, "/wal/silent") == whole


def ferrite_dfs(url, *args):
    p = subprocess.run([str(FERRITE_BIN), "dfs", "-fs", url, *args], capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode()[-3000:]
    return p.stdout


def test_append_from_every_client_gives_the_bytes_and_checksum_hdfs_gives(ferrite, hdfs_cluster, workroot):
    """The same appends from Hadoop's shell and API, hdfs-native and `ferrite dfs`, on 1 MiB
    blocks so that they fill partial chunks, partial blocks and cross into new blocks."""
    local = workroot / "append-parts"
    local.mkdir()
    parts = [bytes([i]) * n for i, n in enumerate([700, 1000, 333_333, 511, 900_000, 3])]
    for i, p in enumerate(parts):
        (local / f"p{i}").write_bytes(p)
    out = {}
    for name, server in (("ferrite", ferrite), ("hdfs", hdfs_cluster)):
        w = workroot / f"append-{name}"
        w.mkdir()
        sh = shell(server, w)
        r = sh.run(["-mkdir", "-p", "/ap"], ["-D", "dfs.blocksize=1048576", "-put", str(local / "p0"), "/ap/f"], ["-appendToFile", str(local / "p1"), "/ap/f"])
        assert all(x.rc == 0 for x in r), [x.err for x in r]
        with Client(server.url).append("/ap/f") as f:
            f.write(parts[2])
        ferrite_dfs(server.url, "-appendToFile", str(local / "p3"), str(local / "p4"), "/ap/f")
        assert api(server, w, ("append", "/ap/f", "\x05\x05\x05")) == ["appended\n"]
        got = sh.run(["-checksum", "/ap/f"], ["-ls", "/ap/f"])
        with Client(server.url).read("/ap/f") as f:
            data = f.read()
        out[name] = (data, normalize(got[0].out, server), got[1].out.split()[4])
    assert out["ferrite"][0] == b"".join(parts)
    assert out["ferrite"] == out["hdfs"]


def test_append_refusals_are_hdfs_s(ferrite, hdfs_cluster, workroot):
    answers = {}
    for name, server in (("ferrite", ferrite), ("hdfs", hdfs_cluster)):
        w = workroot / f"append-refused-{name}"
        w.mkdir()
        writer = start_writer(server, w, "/apr/open", n=3)
        try:
            answers[name] = api(
                server,
                w,
                ("append", "/apr", "x"),
                ("append", "/apr/missing", "x"),
                ("append", "/apr/open", "x"),
                ("truncate", "/apr/open", "1"),
                ("hsyncLength", "/apr/synced", "70000"),
            )
        finally:
            writer.kill()
            writer.wait()
    assert answers["ferrite"] == answers["hdfs"]
    assert "Failed to APPEND_FILE /apr/open for DFSClient_X on 127.0.0.1 because this file lease is currently owned by" in answers["ferrite"][2]
    # hsync with UPDATE_LENGTH: the NameNode records the length while the file is open.
    assert answers["ferrite"][4] == "open 70000\nclosed 70000\n"


def test_truncate_concat_and_the_multipart_uploader_as_on_hdfs(ferrite, hdfs_cluster, workroot):
    local = workroot / "truncate-data"
    local.write_bytes(bytes(range(256)) * 5000)  # 1,280,000 bytes: two 1 MiB blocks
    out = {}
    for name, server in (("ferrite", ferrite), ("hdfs", hdfs_cluster)):
        w = workroot / f"tc-{name}"
        w.mkdir()
        sh = shell(server, w)
        put = ["-D", "dfs.blocksize=1048576", "-put", str(local)]
        cmds = sh.run(
            ["-mkdir", "-p", "/tc/up"],
            [*put, "/tc/t"],
            ["-truncate", "-w", "1048576", "/tc/t"],  # on the block boundary
            ["-truncate", "-w", "1000", "/tc/t"],  # inside the first block
            ["-truncate", "2000", "/tc/t"],  # beyond the length
            ["-checksum", "/tc/t"],
            [*put, "/tc/a"],
            [*put, "/tc/b"],
            [*put, "/tc/c"],
            ["-D", "dfs.blocksize=2097152", "-put", str(local), "/tc/big"],
            ["-mkdir", "/tc/other"],
            [*put, "/tc/other/x"],
        )
        calls = api(
            server,
            w,
            ("read", "/tc/t"),
            ("concat", "/tc/a", "/tc/b", "/tc/c"),
            ("read", "/tc/a"),
            ("concat", "/tc/a", "/tc/a"),
            ("concat", "/tc/a", "/tc/big"),
            ("concat", "/tc/a", "/tc/other/x"),
            ("concat", "/tc/a", "/tc/missing"),
            ("truncate", "/tc/a", "-1"),
            ("truncate", "/tc", "0"),
            ("mpu", "/tc/up", "whole", "part one, ", "part two, ", "part three"),
            ("listLocated", "/tc"),
        )
        check = sh.run(["-checksum", "/tc/a"], ["-ls", "-R", "/tc"])
        listing = [" ".join(l.split()[4:5] + l.split()[7:]) for l in check[1].out.splitlines()]
        out[name] = ([(r.rc, normalize(r.out + r.err, server)) for r in cmds], calls, normalize(check[0].out, server), listing)
    assert out["ferrite"][1][0] == "length 1000 md5 " + __import__("hashlib").md5(local.read_bytes()[:1000]).hexdigest() + "\n"
    for i, (f, h) in enumerate(zip(out["ferrite"][0], out["hdfs"][0])):
        assert f == h, f"shell command {i}"
    assert out["ferrite"][1:] == out["hdfs"][1:]


def test_located_listings_and_path_handles_as_on_hdfs(ferrite, hdfs_cluster, workroot):
    """listLocatedStatus / listFiles (what Spark's file index calls) get located statuses,
    and every PathHandle option finds or refuses a moved or changed file as HDFS decides."""
    out = {}
    for name, server in (("ferrite", ferrite), ("hdfs", hdfs_cluster)):
        w = workroot / f"handles-{name}"
        w.mkdir()
        c = Client(server.url)
        c.mkdirs("/ph/sub", create_parent=True)
        # One replica on the one-DataNode HDFS cluster, so that appends add no node.
        opts = WriteOptions(overwrite=True, replication=1 if server.others else 3)
        for path, data in (("/ph/a", b"a" * 10), ("/ph/b", b"b" * 20), ("/ph/sub/c", b"c" * 30), ("/ph/d", b"d" * 40)):
            with c.create(path, opts) as f:
                f.write(data)
        out[name] = api(
            server,
            w,
            ("listLocated", "/ph"),
            ("listFiles", "/ph"),
            ("handle", "exact", "/ph/a", "exact"),
            ("handle", "content", "/ph/b", "content"),
            ("handle", "path", "/ph/d", "path"),
            ("handle", "reference", "/ph/sub/c", "reference"),
            ("openHandle", "exact"),
            ("rename", "/ph/a", "/ph/a2"),
            ("rename", "/ph/b", "/ph/b2"),
            ("rename", "/ph/sub/c", "/ph/c2"),
            ("append", "/ph/d", "more"),
            ("append", "/ph/c2", "more"),
            ("openHandle", "exact"),
            ("openHandle", "content"),
            ("openHandle", "path"),
            ("openHandle", "reference"),
            ("append", "/ph/b2", "more"),
            ("openHandle", "content"),
            ("appendNewBlock", "/ph/c2", "new block"),
            ("listLocated", "/ph"),
            ("read", "/ph/c2"),
        )
    assert out["ferrite"] == out["hdfs"]
    assert out["ferrite"][0] == "a\tfalse\t10\t1\nb\tfalse\t20\t1\nd\tfalse\t40\t1\nsub\ttrue\t0\t0\n"


def test_a_path_past_a_file_answers_as_hdfs(ferrite, hdfs, workroot):
    """The superuser finds nothing under a file; anyone else meets HDFS's traverse check
    (ParentNotDirectoryException); nobody can create there."""
    commands = [
        ("-ls", "/pf/f/x"),
        ("-test", "-e", "/pf/f/x"),
        ("-stat", "/pf/f/x"),
        ("-cat", "/pf/f/x"),
        ("-mkdir", "/pf/f/x"),
        ("-touchz", "/pf/f/x"),
        ("-mv", "/pf/d", "/pf/f/x"),
        ("-mv", "/pf/d", "/pf/f/x/y"),
        ("-rm", "/pf/f/x"),
        ("-chmod", "700", "/pf/f/x"),
    ]
    out = {}
    for name, server in (("ferrite", ferrite), ("hdfs", hdfs)):
        w = workroot / f"past-file-{name}"
        w.mkdir()
        su = shell(server, w)
        setup = su.run(["-mkdir", "-p", "/pf/d"], ["-touchz", "/pf/f"], ["-chmod", "-R", "777", "/pf"])
        assert all(r.rc == 0 for r in setup), [r.err for r in setup]
        alice = shell(server, w / "alice", user="alice")
        out[name] = [[(r.rc, normalize(r.out + r.err, server)) for r in sh.run(*commands)] for sh in (su, alice)]
    for who, (f, h) in zip(("superuser", "alice"), zip(out["ferrite"], out["hdfs"])):
        for c, a, b in zip(commands, f, h):
            assert a == b, (who, c)


def test_hadoop_contract_tests_for_append_concat_and_path_handles_pass_as_on_hdfs(ferrite, hdfs_cluster, workroot):
    """AbstractContractAppendTest, AbstractContractConcatTest and
    AbstractContractPathHandleTest from Hadoop's test jar, bound to each running cluster."""
    from conftest import write_site

    results = {}
    for name, server in (("ferrite", ferrite), ("hdfs", hdfs_cluster)):
        conf = workroot / f"contract-{name}"
        site = {"dfs.replication": 1} if server.others else {}
        write_site(conf, {"fs.defaultFS": server.url, "fs.contract.test.fs.hdfs": server.url}, site)
        cmd = ["java", "-Djava.net.preferIPv4Stack=true", "-cp", java_cp(conf), "ferrite.interop.ContractTests"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=conf)
        results[name] = sorted(l for l in p.stdout.splitlines() if l.split(" ", 1)[0] in ("pass", "fail", "skip"))
        assert results[name], p.stdout + p.stderr[-3000:]
    failed = [l for l in results["ferrite"] if not l.startswith("pass")]
    assert not failed, failed
    assert len(results["ferrite"]) >= 60
    assert results["ferrite"] == results["hdfs"]
