"""Rack awareness as Hadoop's own tools show it: a Ferrite NameNode with a topology table
(Hadoop's `TableMapping` keys) and four DataNode processes, each on its own loopback
address (a host of its own, as far as the NameNode can tell), two per rack.
`hdfs dfsadmin -printTopology` (DFSAdmin, unchanged) groups them by rack, and
`hdfs fsck -files -blocks -racks` places a three-replica block on two racks."""

import json
import re
import time
import urllib.request

from conftest import FsShell, Server, stop
from hdfs_native import Client, WriteOptions
from test_ha import start_process
from test_webhdfs import fsck

RACKS = {f"127.0.1.{i + 1}": ("/dc1/rackA", "/dc1/rackB")[i // 2] for i in range(4)}


def start_hosts(w, keys: dict, ips: list) -> Server:
    """A Ferrite NameNode with `keys` and one DataNode process serving on each of `ips` (a
    host of its own, as the NameNode sees it), once all have registered."""
    nn = start_process(w, "nn", ["namenode", "--port", "0", "--data", str(w / "nn")], keys)
    url, http = nn.ready_line.split()[1:3]
    dns = [
        start_process(w, f"dn{i}", ["datanode", "--namenode", url.removeprefix("hdfs://"),
                                    "--bind", ip, "--port", "0", "--ipc-port", "0",
                                    "--data", str(w / f"dn{i}")], keys)
        for i, ip in enumerate(ips)
    ]
    server = Server(url, int(url.rsplit(":", 1)[1]), nn, w, others=dns, http=http)
    state = f"{http}/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState"
    deadline = time.time() + 30
    while json.load(urllib.request.urlopen(state, timeout=5))["beans"][0]["NumLiveDataNodes"] < len(ips):
        if time.time() > deadline:
            stop(server)
            raise AssertionError(f"{len(ips)} DataNodes did not register")
        time.sleep(0.2)
    return server


def test_print_topology_and_fsck_show_the_racks(workroot):
    w = workroot / "topology"
    w.mkdir()
    table = w / "topology.table"
    table.write_text("".join(f"{ip} {rack}\n" for ip, rack in RACKS.items()))
    keys = {
        "net.topology.node.switch.mapping.impl": "org.apache.hadoop.net.TableMapping",
        "net.topology.table.file.name": str(table),
        "dfs.namenode.fs-limits.min-block-size": "0",
        "dfs.namenode.safemode.extension": "0",
        "dfs.heartbeat.interval": "1",
    }
    server = start_hosts(w, keys, list(RACKS))
    try:
        client = Client(server.url)
        with client.create("/racks/f", WriteOptions(replication=3)) as f:
            f.write(b"r" * 5000)
        [topo] = FsShell(server, w).run(["dfsadmin", "-printTopology"])
        assert topo.rc == 0, topo
        # "Rack: /dc1/rackA" then its nodes, "   127.0.1.1:PORT (HOST) In Service", then a
        # blank line.
        groups = re.findall(r"^Rack: (\S+)\n((?:   .*\n)+)", topo.out, re.M)
        shown = {rack: sorted(re.findall(r"^   (127\.0\.1\.\d+):\d+ ", nodes, re.M))
                 for rack, nodes in groups}
        assert shown == {"/dc1/rackA": ["127.0.1.1", "127.0.1.2"],
                         "/dc1/rackB": ["127.0.1.3", "127.0.1.4"]}, topo.out
        rc, report = fsck(server, w, "/racks/f", "-files", "-blocks", "-racks")
        assert rc == 0, report
        racks = re.findall(r"(/dc1/rack[AB])/127\.0\.1\.\d+:\d+", report)
        assert len(racks) == 3 and set(racks) == {"/dc1/rackA", "/dc1/rackB"}, report
    finally:
        stop(server)
