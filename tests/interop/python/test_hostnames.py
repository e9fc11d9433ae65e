"""DataNode host names as Hadoop's clients use them: a DataNode registers the name
`dfs.datanode.hostname` gives it, and Hadoop 3.4.1's client with
`dfs.client.use.datanode.hostname=true` connects to DataNodes by that name rather than
their address. The name here does not resolve, so a client that uses it cannot read, and
one that does not reads as usual: the name it was handed is the one configured."""

import pytest
from conftest import FsShell, _server, start_ferrite
from hdfs_native import Client

NAME = "ferrite-dn.invalid"


@pytest.fixture(scope="module")
def named(workroot):
    conf = [f"dfs.datanode.hostname={NAME}", "dfs.replication=1"]
    yield from _server(workroot, "ferrite-hostnames", lambda w: start_ferrite(w, conf, datanodes=1))


def test_clients_reach_datanodes_by_the_name_they_registered_when_told_to(named, workroot):
    c = Client(named.url)
    with c.create("/named") as f:
        f.write(b"by name or by address\n")
    by_addr = FsShell(named, workroot).run(["-cat", "/named"], ["dfsadmin", "-report"])
    assert by_addr[0].rc == 0 and by_addr[0].out == "by name or by address\n", by_addr[0]
    assert f"Hostname: {NAME}" in by_addr[1].out, by_addr[1].out
    # No retry rounds: the name will not resolve on a second try either.
    hdfs = {"dfs.client.use.datanode.hostname": "true", "dfs.client.max.block.acquire.failures": "0"}
    (r,) = FsShell(named, workroot, hdfs=hdfs).run(["-cat", "/named"])
    assert r.rc != 0 and "Could not obtain block" in r.err, r
