"""An HA nameservice of three `ferrite namenode` processes, configured in HDFS's own keys,
used by unmodified clients: Hadoop's FsShell through ConfiguredFailoverProxyProvider and
hdfs-native with the same keys, against `hdfs://test/`. The active is killed with SIGKILL;
both clients carry on against the new active, and what was acknowledged before is there."""

import json
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from hdfs_native import Client

from conftest import FERRITE_BIN, FsShell, Server, free_port, java_cp


NAMES = ["nn1", "nn2", "nn3"]


def ha_keys():
    keys = {
        "dfs.nameservices": "test",
        "dfs.ha.namenodes.test": ",".join(NAMES),
        "dfs.client.failover.proxy.provider.test":
            "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider",
        # `hdfs haadmin -failover` refuses to run without a fencing method.
        "dfs.ha.fencing.methods": "shell(/bin/true)",
    }
    for n in NAMES:
        keys[f"dfs.namenode.rpc-address.test.{n}"] = f"127.0.0.1:{free_port()}"
        keys[f"dfs.namenode.http-address.test.{n}"] = f"127.0.0.1:{free_port()}"
        keys[f"ferrite.ha.raft-address.test.{n}"] = f"127.0.0.1:{free_port()}"
    return keys


def start_process(workdir: Path, name: str, args: list, keys: dict) -> subprocess.Popen:
    """A `ferrite` process with `keys`, once it has said it is ready (the line kept as its
    `ready_line`); its log in NAME.log."""
    args = [str(FERRITE_BIN), *args]
    for k, v in keys.items():
        args += ["--conf", f"{k}={v}"]
    log = open(workdir / f"{name}.log", "a")
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True, cwd=workdir)
    line = p.stdout.readline()
    assert line.startswith("ready "), f"{name}: {line!r}"
    p.ready_line = line.strip()
    return p


def start_member(workdir: Path, keys: dict, n: str) -> subprocess.Popen:
    """NameNode `n` of the nameservice, on the directory its earlier lives left."""
    args = ["namenode", "--data", str(workdir / n)]
    return start_process(workdir, n, args, {**keys, "dfs.ha.namenode.id": n})


def start_group(workdir: Path, keys: dict) -> dict:
    return {n: start_member(workdir, keys, n) for n in NAMES}


def start_datanode(workdir: Path, keys: dict, i: int) -> subprocess.Popen:
    """A DataNode that reports to every NameNode of the nameservice."""
    args = ["datanode", "--namenode", "hdfs://test", "--port", "0", "--ipc-port", "0",
            "--data", str(workdir / f"dn{i}")]
    return start_process(workdir, f"dn{i}", args, keys)


def bean(keys: dict, n: str, name: str) -> dict:
    """NameNode `n`'s JMX bean `Hadoop:service=NameNode,name=NAME`."""
    url = f"http://{keys[f'dfs.namenode.http-address.test.{n}']}/jmx?qry=Hadoop:service=NameNode,name={name}"
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.load(r)["beans"][0]


def state(keys: dict, n: str) -> str:
    """What NameNode `n`'s NameNodeStatus bean says it is (`active`, `standby`)."""
    return bean(keys, n, "NameNodeStatus")["State"]


def active(keys: dict, procs: dict, timeout=20.0) -> str:
    """The one live NameNode that is active, once there is one (the others standby)."""
    deadline = time.time() + timeout
    while True:
        live = [n for n, p in procs.items() if p.poll() is None]
        states = {n: state(keys, n) for n in live}
        actives = [n for n, s in states.items() if s == "active"]
        assert len(actives) <= 1, f"several active: {states}"
        if actives:
            assert all(s == "standby" for n, s in states.items() if n not in actives), states
            return actives[0]
        assert time.time() < deadline, f"no active NameNode: {states}"
        time.sleep(0.2)


def stop_group(procs: dict):
    for p in procs.values():
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs.values():
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()


def test_unmodified_clients_fail_over_across_a_killed_active(workroot):
    workdir = workroot / "ha"
    workdir.mkdir()
    keys = ha_keys()
    procs = start_group(workdir, keys)
    try:
        first = active(keys, procs)
        nameservice = Server("hdfs://test", 0, procs[first], workdir)
        shell = FsShell(nameservice, workdir, hdfs=keys)
        native = Client("hdfs://test", config=keys)
        standby = next(n for n in NAMES if n != first)
        addr = keys[f"dfs.namenode.rpc-address.test.{standby}"]
        r = shell.run(["-ls", f"hdfs://{addr}/"], ["-mkdir", "-p", "/ha/java"], ["-ls", "/ha"])
        assert r[0].rc != 0 and "Operation category READ is not supported in state standby" in r[0].err, r[0]
        assert [x.rc for x in r[1:]] == [0, 0], r
        native.mkdirs("/ha/native")

        procs[first].send_signal(signal.SIGKILL)
        procs[first].wait()
        second = active(keys, {n: p for n, p in procs.items() if n != first})
        assert second != first

        r = shell.run(["-mkdir", "/ha/java-after"], ["-ls", "/ha"])
        assert [x.rc for x in r] == [0, 0], r
        listed = r[1].out
        for name in ("java", "native", "java-after"):
            assert f"/ha/{name}" in listed, listed
        native = Client("hdfs://test", config=keys)
        native.mkdirs("/ha/native-after")
        names = sorted(s.path.rsplit("/", 1)[-1] for s in native.list_status("/ha"))
        assert names == ["java", "java-after", "native", "native-after"], names
    finally:
        stop_group(procs)


def test_haadmin_reports_states_and_moves_the_active(workroot):
    """`hdfs haadmin` (DFSHAAdmin, unmodified) against the Raft group: states as HDFS prints
    them, a manual failover to a chosen NameNode, a transition of the active to standby
    (leadership moves elsewhere), and `ferrite admin ha-status` naming one leader."""
    workdir = workroot / "haadmin"
    workdir.mkdir()
    keys = ha_keys()
    procs = start_group(workdir, keys)
    try:
        first = active(keys, procs)
        nameservice = Server("hdfs://test", 0, procs[first], workdir)
        shell = FsShell(nameservice, workdir, hdfs=keys)
        target = next(n for n in NAMES if n != first)
        r = shell.run(
            ["haadmin", "-getServiceState", first],
            ["haadmin", "-getServiceState", target],
            ["haadmin", "-getAllServiceState"],
            ["haadmin", "-checkHealth", target],
            ["haadmin", "-transitionToActive", target],
            ["haadmin", "-failover", first, target],
        )
        assert [x.rc for x in r[:4]] == [0, 0, 0, 0], r
        assert r[0].out.strip() == "active" and r[1].out.strip() == "standby", r
        listed = r[2].out.splitlines()
        assert len(listed) == 3, r[2]
        for n in NAMES:
            # HAAdmin prints the host as Java resolves it (localhost), so match the port.
            port = keys[f"dfs.namenode.rpc-address.test.{n}"].rsplit(":", 1)[1]
            line = next((x for x in listed if x.split()[0].endswith(f":{port}")), f"{n} missing")
            want = "active" if n == first else "standby"
            assert line.split()[-1] == want, listed
        # Without --forceactive HAAdmin refuses while another NameNode is active.
        assert r[4].rc != 0 and f"{first} is already active" in r[4].err, r[4]
        assert r[5].rc == 0 and f"Failover from {first} to {target} successful" in r[5].out, r[5]
        assert active(keys, procs) == target

        r = shell.run(["haadmin", "-transitionToStandby", target], ["-mkdir", "-p", "/moved"])
        assert [x.rc for x in r] == [0, 0], r
        third = active(keys, procs)
        assert third != target

        status = subprocess.run(
            [str(FERRITE_BIN), "admin", "--fs", "hdfs://test", "ha-status"]
            + [a for k, v in keys.items() for a in ("--conf", f"{k}={v}")],
            capture_output=True, text=True, timeout=60, cwd=workdir,
        )
        assert status.returncode == 0, status.stderr
        rows = status.stdout.splitlines()[1:]
        roles = sorted(row.split()[2] for row in rows)
        assert roles == ["follower", "follower", "leader"], status.stdout
        leader_addr = keys[f"dfs.namenode.rpc-address.test.{third}"]
        assert any(row.startswith(leader_addr) and " leader " in row for row in rows), status.stdout
    finally:
        stop_group(procs)


def test_hadoops_client_carries_on_through_twenty_kills_of_the_active(workroot):
    """Twenty rounds of `kill -9` of the active (each restarted) while Hadoop's client, four
    threads with a FileSystem each, creates and writes files (two replicas, two DataNode
    processes), renames every other one and deletes every third through `hdfs://test/`.
    Each new active serves at once (no safe mode). No error reaches the application, and afterwards the active holds exactly what the client
    was told was done: every file at its length, nothing it was told is gone, nothing else."""
    workdir = workroot / "ha-rounds"
    workdir.mkdir()
    keys = ha_keys()
    procs = start_group(workdir, keys)
    dns = [start_datanode(workdir, keys, i) for i in range(2)]
    stop = workdir / "stop"
    load = None
    try:
        first = active(keys, procs)
        nameservice = Server("hdfs://test", 0, procs[first], workdir, others=dns)
        shell = FsShell(nameservice, workdir, hdfs=keys)
        load = subprocess.Popen(
            ["java", "-Djava.net.preferIPv4Stack=true", "-cp", java_cp(shell.conf),
             "ferrite.interop.HaLoad", "hdfs://test", "4", str(stop)],
            stdout=subprocess.PIPE, stderr=open(workdir / "load.log", "w"), text=True, cwd=workdir,
        )
        for _ in range(20):
            time.sleep(1.5)
            assert load.poll() is None, "the client stopped: " + (workdir / "load.log").read_text()[-3000:]
            victim = active(keys, procs)
            procs[victim].send_signal(signal.SIGKILL)
            procs[victim].wait()
            successor = active(keys, {n: p for n, p in procs.items() if n != victim})
            # The standby that took over is one the DataNodes report to already, not
            # the one restarted a round ago: it serves at once, with no safe mode.
            safemode = bean(keys, successor, "NameNodeInfo")["Safemode"]
            assert safemode == "", f"{successor} took over in safe mode: {safemode}"
            procs[victim] = start_member(workdir, keys, victim)
        stop.touch()
        out, _ = load.communicate(timeout=180)
        assert load.returncode == 0, out[-2000:] + (workdir / "load.log").read_text()[-3000:]

        live, gone = {}, set()
        for line in out.splitlines():
            kind, path, *length = line.split()
            if kind == "live":
                live[path] = int(length[0])
            else:
                gone.add(path)
        assert len(live) > 10 and len(gone) > 10, f"the client did little: {len(live)} {len(gone)}"
        native = Client("hdfs://test", config=keys)
        found = {}
        for d in native.list_status("/load"):
            name = d.path.rsplit("/", 1)[-1]
            for f in native.list_status(f"/load/{name}"):
                found[f"/load/{name}/{f.path.rsplit('/', 1)[-1]}"] = f.length
        assert found == live, (
            f"missing {sorted(set(live) - set(found))[:10]}, "
            f"unexpected {sorted(set(found) - set(live))[:10]}"
        )
    finally:
        if load is not None and load.poll() is None:
            load.kill()
        for p in dns:
            p.kill()
        stop_group(procs)
