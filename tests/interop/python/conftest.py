"""Shared fixtures: start Ferrite (and, for comparisons, a real Apache HDFS 3.4.1 NameNode)
on loopback ephemeral ports, and run Hadoop's FsShell against either."""

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hdfs_native import WriteOptions

REPO = Path(__file__).resolve().parents[3]
JAVA_DIR = REPO / "tests" / "interop" / "java"
FERRITE_BIN = Path(os.environ.get("FERRITE_BIN", REPO / "target" / "debug" / "ferrite"))


@dataclass
class Server:
    url: str
    port: int
    proc: subprocess.Popen
    workdir: Path
    # Further processes of the same cluster (DataNodes), stopped before `proc`.
    others: list = field(default_factory=list)
    # The NameNode's HTTP server (`/jmx`), when the test knows it.
    http: str = ""

    def __post_init__(self):
        _STARTED.append(self)


# Every server started, in order: a test that fails between starting a server and stopping
# it must not leave the server running (see `_stop_leftover_servers`).
_STARTED: list = []


@pytest.fixture(autouse=True)
def _stop_leftover_servers():
    """Kills what a test started itself and left running. Session and module fixtures are
    set up before this function-scoped one, so their shared servers are not touched."""
    before = len(_STARTED)
    yield
    leftover = _STARTED[before:]
    del _STARTED[before:]
    for server in leftover:
        for p in [*server.others, server.proc]:
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


# Hadoop's web services (WebHDFS's JAX-RS and JAXB) reach into the JDK's internals, which
# Java 17 closes unless opened: without these, every WebHDFS request of a real HDFS
# answers 500.
HADOOP_JAVA_OPENS = [
    f"--add-opens=java.base/{m}=ALL-UNNAMED"
    for m in ("java.lang", "java.util", "java.lang.reflect", "java.net", "java.io")
]


def own_log_dir(workdir: Path) -> list:
    """A reference JVM's files go to its own work directory: HDFS writes some (metaSave's
    report) under `hadoop.log.dir`, else where it was started. Servers start with `cwd`
    there too."""
    return [f"-Dhadoop.log.dir={workdir}"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_ferrite(workdir: Path, conf=(), datanodes=3) -> Server:
    args = [str(FERRITE_BIN), "local", "--data", str(workdir / "data"), "--port", "0", "--datanodes", str(datanodes)]
    for c in conf:
        args += ["--conf", c]
    log = open(workdir / "ferrite.log", "w")
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True, cwd=workdir)
    line = proc.stdout.readline().strip()
    m = re.fullmatch(r"ready hdfs://127\.0\.0\.1:(\d+) http://127\.0\.0\.1:(\d+)", line)
    assert m, f"unexpected first line from ferrite: {line!r}"
    port = int(m.group(1))
    return Server(f"hdfs://127.0.0.1:{port}", port, proc, workdir, http=f"http://127.0.0.1:{m.group(2)}")


def stop(server: Server):
    for p in server.others:
        p.send_signal(signal.SIGTERM)
    for p in server.others:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
    server.proc.send_signal(signal.SIGTERM)
    try:
        rc = server.proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        raise AssertionError("server did not stop on SIGTERM")
    return rc


def java_cp(conf_dir: Path) -> str:
    cp = (JAVA_DIR / "target" / "cp.txt").read_text().strip()
    return f"{conf_dir}:{JAVA_DIR / 'target' / 'classes'}:{cp}"


def write_site(conf_dir: Path, core: dict, hdfs: dict):
    conf_dir.mkdir(parents=True, exist_ok=True)
    (conf_dir / "log4j.properties").write_text(
        "log4j.rootLogger=WARN,stderr\n"
        "log4j.appender.stderr=org.apache.log4j.ConsoleAppender\n"
        "log4j.appender.stderr.Target=System.err\n"
        "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n"
        "log4j.appender.stderr.layout.ConversionPattern=%d %p %c: %m%n\n"
    )
    for name, props in (("core-site.xml", core), ("hdfs-site.xml", hdfs)):
        body = "".join(f"<property><name>{k}</name><value>{v}</value></property>" for k, v in props.items())
        (conf_dir / name).write_text(f'<?xml version="1.0"?><configuration>{body}</configuration>\n')


def start_hdfs(workdir: Path, trash_minutes: int, hdfs_site=None) -> Server:
    """A real Apache HDFS 3.4.1 NameNode (no DataNodes), freshly formatted; `hdfs_site`
    adds to its hdfs-site.xml."""
    port, http_port = free_port(), free_port()
    conf = workdir / "conf-nn"
    write_site(
        conf,
        {"fs.defaultFS": f"hdfs://127.0.0.1:{port}", "hadoop.tmp.dir": str(workdir / "tmp"), "fs.trash.interval": trash_minutes},
        {
            "dfs.namenode.name.dir": f"file://{workdir}/nn",
            "dfs.namenode.rpc-bind-host": "127.0.0.1",
            "dfs.namenode.http-address": f"127.0.0.1:{http_port}",
            "dfs.namenode.secondary.http-address": "127.0.0.1:0",
            "dfs.namenode.safemode.extension": 0,
            **(hdfs_site or {}),
        },
    )
    # The NameNode's web server wants its webapp folders on the classpath; they ship only in
    # Hadoop's test jar, and empty ones are enough for RPC.
    for app in ("hdfs", "static"):
        (conf / "webapps" / app).mkdir(parents=True, exist_ok=True)
    java = ["java", "-Djava.net.preferIPv4Stack=true", *HADOOP_JAVA_OPENS, *own_log_dir(workdir), "-cp", java_cp(conf)]
    main = "org.apache.hadoop.hdfs.server.namenode.NameNode"
    with open(workdir / "format.log", "w") as log:
        subprocess.run(java + [main, "-format", "-force", "-nonInteractive"], stdout=log, stderr=log, check=True, cwd=workdir)
    log = open(workdir / "nn.log", "w")
    proc = subprocess.Popen(java + [main], stdout=log, stderr=log, cwd=workdir)
    deadline = time.time() + 120
    while time.time() < deadline:
        assert proc.poll() is None, "HDFS NameNode died:\n" + (workdir / "nn.log").read_text()[-3000:]
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            time.sleep(0.3)
    else:
        raise AssertionError("HDFS NameNode did not start")
    # Wait until it leaves start-up safe mode (immediate with no blocks and extension 0).
    from hdfs_native import Client

    c = Client(f"hdfs://127.0.0.1:{port}")
    while time.time() < deadline:
        try:
            c.mkdirs("/.ready-probe")
            c.delete("/.ready-probe")
            break
        except Exception:
            time.sleep(0.3)
    return Server(f"hdfs://127.0.0.1:{port}", port, proc, workdir, http=f"http://127.0.0.1:{http_port}")


def start_hdfs_cluster(workdir: Path, datanodes=1) -> Server:
    """A real Apache HDFS 3.4.1 NameNode and DataNode(s), each its own JVM, on loopback."""
    port, http_port = free_port(), free_port()
    common = {
        "dfs.namenode.rpc-address": f"127.0.0.1:{port}",
        "dfs.namenode.rpc-bind-host": "127.0.0.1",
        "dfs.namenode.http-address": f"127.0.0.1:{http_port}",
        "dfs.namenode.secondary.http-address": "127.0.0.1:0",
        "dfs.replication": min(datanodes, 3),
        "dfs.namenode.safemode.extension": 0,
        "dfs.namenode.fs-limits.min-block-size": 0,
    }
    core = {"fs.defaultFS": f"hdfs://127.0.0.1:{port}", "hadoop.tmp.dir": str(workdir / "tmp")}
    procs = []

    def launch(name, conf_dir, hdfs, main, *extra):
        write_site(conf_dir, core, {**common, **hdfs})
        for app in ("hdfs", "static", "datanode"):
            (conf_dir / "webapps" / app).mkdir(parents=True, exist_ok=True)
        java = ["java", "-Djava.net.preferIPv4Stack=true", *HADOOP_JAVA_OPENS, "-Xmx512m", *own_log_dir(workdir), "-cp", java_cp(conf_dir)]
        if extra:
            with open(workdir / "format.log", "w") as log:
                subprocess.run(java + [main, *extra], stdout=log, stderr=log, check=True, cwd=workdir)
            return None
        log = open(workdir / f"{name}.log", "w")
        p = subprocess.Popen(java + [main], stdout=log, stderr=log, cwd=workdir)
        procs.append(p)
        return p

    nn_main = "org.apache.hadoop.hdfs.server.namenode.NameNode"
    nn_conf = {"dfs.namenode.name.dir": f"file://{workdir}/nn"}
    launch("nn", workdir / "conf-nn", nn_conf, nn_main, "-format", "-force", "-nonInteractive")
    nn = launch("nn", workdir / "conf-nn", nn_conf, nn_main)
    for i in range(datanodes):
        launch(
            f"dn{i}",
            workdir / f"conf-dn{i}",
            {
                "dfs.datanode.data.dir": f"file://{workdir}/dn{i}",
                "dfs.datanode.address": f"127.0.0.1:{free_port()}",
                "dfs.datanode.http.address": f"127.0.0.1:{free_port()}",
                "dfs.datanode.ipc.address": f"127.0.0.1:{free_port()}",
            },
            "org.apache.hadoop.hdfs.server.datanode.DataNode",
        )
    from hdfs_native import Client

    # Ready when a one-byte file can be written: the NameNode is out of safe mode and
    # DataNodes have registered.
    deadline = time.time() + 180
    while True:
        for p in procs:
            assert p.poll() is None, f"an HDFS process died; see {workdir}"
        try:
            c = Client(f"hdfs://127.0.0.1:{port}")
            with c.create("/.ready-probe", WriteOptions(overwrite=True)) as w:
                w.write(b"x")
            c.delete("/.ready-probe")
            break
        except Exception:
            assert time.time() < deadline, f"HDFS cluster did not start; see {workdir}"
            time.sleep(0.5)
    http = f"http://127.0.0.1:{http_port}"
    return Server(f"hdfs://127.0.0.1:{port}", port, nn, workdir, procs[1:], http=http)


@dataclass
class ShellResult:
    out: str
    err: str
    rc: int


class FsShell:
    """Hadoop's own FsShell, many commands per JVM (see ShellBatch.java)."""

    def __init__(self, server: Server, workdir: Path, user=None, hdfs=None):
        self.workdir = workdir
        self.conf = workdir / f"conf-client-{server.port}"
        write_site(self.conf, {"fs.defaultFS": server.url}, hdfs or {})
        self.env = dict(os.environ)
        if user:
            self.env["HADOOP_USER_NAME"] = user

    def run(self, *commands) -> list:
        text = "".join("\t".join(c) + "\n" for c in commands)
        cmd = ["java", "-Djava.net.preferIPv4Stack=true", "-cp", java_cp(self.conf), "ferrite.interop.ShellBatch"]
        p = subprocess.run(cmd, input=text, capture_output=True, text=True, env=self.env, timeout=300, cwd=self.workdir)
        blocks = re.findall(r"==BEGIN==\n(.*?)==STDERR==\n(.*?)==EXIT (-?\d+)==\n", p.stdout, re.S)
        assert len(blocks) == len(commands), f"ShellBatch failed:\n{p.stdout}\n{p.stderr}"
        return [ShellResult(o, e, int(rc)) for o, e, rc in blocks]


@pytest.fixture(scope="session")
def workroot():
    d = Path(tempfile.mkdtemp(prefix="ferrite-interop-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _server(workroot, name, starter):
    w = workroot / name
    w.mkdir()
    s = starter(w)
    yield s
    rc = stop(s)
    if name.startswith("ferrite"):
        assert rc == 0, f"ferrite exited with {rc} on SIGTERM; see {w}/ferrite.log"


@pytest.fixture(scope="session")
def ferrite(workroot):
    yield from _server(workroot, "ferrite", lambda w: start_ferrite(w))


# The trash pair also runs with a small directory item limit and a short name limit, so
# that the limits' answers can be compared without starting a third HDFS.
DIR_ITEMS_LIMIT = 4
NAME_LIMIT = 32


@pytest.fixture(scope="session")
def ferrite_trash(workroot):
    conf = [
        "fs.trash.interval=60",
        f"dfs.namenode.fs-limits.max-directory-items={DIR_ITEMS_LIMIT}",
        f"dfs.namenode.fs-limits.max-component-length={NAME_LIMIT}",
    ]
    yield from _server(workroot, "ferrite-trash", lambda w: start_ferrite(w, conf))


@pytest.fixture(scope="session")
def hdfs(workroot):
    yield from _server(workroot, "hdfs", lambda w: start_hdfs(w, 0))


@pytest.fixture(scope="session")
def hdfs_cluster(workroot):
    yield from _server(workroot, "hdfs-cluster", lambda w: start_hdfs_cluster(w, 1))


@pytest.fixture(scope="session")
def hdfs_trash(workroot):
    site = {
        "dfs.namenode.fs-limits.max-directory-items": DIR_ITEMS_LIMIT,
        "dfs.namenode.fs-limits.max-component-length": NAME_LIMIT,
    }
    yield from _server(workroot, "hdfs-trash", lambda w: start_hdfs(w, 60, site))
