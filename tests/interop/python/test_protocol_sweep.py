"""Every ClientProtocol method of Hadoop 3.4.1 is served or refused as HDFS refuses it,
never "Unknown method": the protocol's whole method list (from Hadoop's own descriptor)
checked against what Ferrite answers, and the less-used calls made through Hadoop's client
proxy against Ferrite and a real HDFS 3.4.1 NameNode, compared line by line. Where Ferrite
differs on purpose (it writes no erasure-coded files, so it enables no EC policy), the
difference is spelled out below."""

import subprocess

import pytest
from conftest import _server, java_cp, start_ferrite, start_hdfs, write_site
from hdfs_native import Client

# Ferrite's answer where it differs from HDFS's on purpose.
DIFFERENT = {
    # No erasure coding: every system policy is reported disabled, so none can be set.
    "getErasureCodingPolicies": "getErasureCodingPolicies ok [RS-10-4-1024k=DISABLED, RS-3-2-1024k=DISABLED, "
    "RS-6-3-1024k=DISABLED, RS-LEGACY-6-3-1024k=DISABLED, XOR-2-1-1024k=DISABLED]",
    "setErasureCodingPolicy": "setErasureCodingPolicy error org.apache.hadoop.HadoopIllegalArgumentException: "
    "Policy 'RS-6-3-1024k' does not match any enabled erasure coding policies: []. An erasure coding "
    "policy can be enabled by enableErasureCodingPolicy API.",
    "setErasureCodingPolicyUnknown": "setErasureCodingPolicyUnknown error org.apache.hadoop.HadoopIllegalArgumentException: "
    "Policy 'NO-SUCH' does not match any enabled erasure coding policies: []. An erasure coding "
    "policy can be enabled by enableErasureCodingPolicy API.",
    "enableErasureCodingPolicy": "enableErasureCodingPolicy error java.lang.UnsupportedOperationException: "
    "Erasure coding policy XOR-2-1-1024k cannot be enabled: Ferrite stores replicated files only",
}




@pytest.fixture(scope="module")
def ferrite_sweep(workroot):
    yield from _server(workroot, "ferrite-sweep", lambda w: start_ferrite(w, datanodes=0))


@pytest.fixture(scope="module")
def hdfs_sweep(workroot):
    # HDFS's satisfier mode `external` (its default, `none`, refuses the call): Ferrite's
    # NameNode runs the satisfier itself and takes the call by default.
    sps = {"dfs.storage.policy.satisfier.mode": "external"}
    yield from _server(workroot, "hdfs-sweep", lambda w: start_hdfs(w, 0, sps))


def sweep(server, workroot):
    c = Client(server.url)
    c.mkdirs("/sweep")
    c.create("/sweep/f").close()
    conf = workroot / f"conf-sweep-{server.port}"
    write_site(conf, {"fs.defaultFS": server.url}, {})
    p = subprocess.run(["java", "-cp", java_cp(conf), "ferrite.interop.ProtocolSweep"], capture_output=True, text=True, timeout=300, cwd=conf)
    lines = [l for l in p.stdout.splitlines() if " ok " in l or " error " in l]
    assert lines, p.stdout + p.stderr[-3000:]
    return lines


def test_no_method_of_client_protocol_is_unknown(ferrite_sweep, workroot):
    """Each method named in Hadoop 3.4.1's ClientNamenodeProtocol service is called with an
    empty request: whatever the answer (often a complaint about the empty request), it is
    never that the method is unknown."""
    conf = workroot / "conf-sweep-methods"
    write_site(conf, {"fs.defaultFS": ferrite_sweep.url}, {})
    p = subprocess.run(["java", "-cp", java_cp(conf), "ferrite.interop.ProtocolSweep", "--methods"], capture_output=True, text=True, timeout=300, cwd=conf)
    methods = [l.split()[1] for l in p.stdout.splitlines() if l.startswith("method ")]
    assert len(methods) >= 110, p.stdout + p.stderr[-3000:]
    unknown = [l.split()[1] for l in p.stdout.splitlines() if "Unknown method" in l or "unknown method" in l]
    assert unknown == [], unknown


def test_the_rest_of_client_protocol_answers_as_hdfs(ferrite_sweep, hdfs_sweep, workroot):
    ours = sweep(ferrite_sweep, workroot)
    theirs = sweep(hdfs_sweep, workroot)
    assert [l.split(" ", 1)[0] for l in ours] == [l.split(" ", 1)[0] for l in theirs]
    for a, b in zip(ours, theirs):
        name = a.split(" ", 1)[0]
        want = DIFFERENT.get(name, b)
        assert a == want, f"\n ferrite: {a}\n    want: {want}\n    hdfs: {b}"
    assert not any("Unknown method" in l for l in ours), ours


def test_inotify_reports_changes_as_hdfs_does(ferrite_sweep, hdfs_sweep, workroot):
    """Changes made after Hadoop's DFSInotifyEventInputStream opens come back as the same
    events, in the same order, with the same fields, from both NameNodes."""
    answers = []
    for server in (ferrite_sweep, hdfs_sweep):
        conf = workroot / f"conf-inotify-{server.port}"
        write_site(conf, {"fs.defaultFS": server.url}, {})
        p = subprocess.run(["java", "-cp", java_cp(conf), "ferrite.interop.ProtocolSweep", "--inotify"], capture_output=True, text=True, timeout=300, cwd=conf)
        answers.append([l for l in p.stdout.splitlines() if l.startswith("event ")] or [p.stderr[-3000:]])
    ours, theirs = answers
    assert ours == theirs
    assert len(ours) == 12 and ours[0].startswith("event CREATE DIRECTORY /ino"), ours
