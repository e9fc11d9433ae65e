"""Decommission as Hadoop's own `hdfs dfsadmin` drives and shows it: a Ferrite NameNode
with an exclude file (`dfs.hosts.exclude`) and three DataNode processes on addresses of
their own. `-refreshNodes` starts the decommission of the excluded node, `-report` shows it
"Decommission in progress" or "Decommissioned" as HDFS words it, and the file written
before keeps two replicas on the nodes in service."""

import json
import re
import time
import urllib.request

from conftest import FsShell, stop
from hdfs_native import Client, WriteOptions
from test_topology import start_hosts

NODES = [f"127.0.1.{31 + i}" for i in range(3)]


def test_refresh_nodes_decommissions_an_excluded_node(workroot):
    w = workroot / "decommission"
    w.mkdir()
    exclude = w / "exclude"
    exclude.write_text("")
    keys = {
        "dfs.hosts.exclude": str(exclude),
        "dfs.namenode.fs-limits.min-block-size": "0",
        "dfs.namenode.safemode.extension": "0",
        "dfs.heartbeat.interval": "1",
        "dfs.namenode.redundancy.interval.seconds": "1",
    }
    server = start_hosts(w, keys, NODES)
    state = f"{server.http}/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState"
    try:
        client = Client(server.url)
        with client.create("/dec/f", WriteOptions(replication=2, block_size=1024)) as f:
            f.write(b"d" * 10_000)
        victim = NODES[0]
        exclude.write_text(f"{victim}\n")
        shell = FsShell(server, w)
        [refresh] = shell.run(["dfsadmin", "-refreshNodes"])
        assert refresh.rc == 0 and "Refresh nodes successful" in refresh.out, refresh
        deadline = time.time() + 60
        while True:
            [report] = shell.run(["dfsadmin", "-report"])
            entry = re.search(rf"Name: {re.escape(victim)}:\d+.*?\n\n", report.out + "\n\n", re.S)
            assert entry, report.out
            status = re.search(r"Decommission Status : (.*)", entry.group(0)).group(1)
            if status == "Decommissioned":
                break
            assert status == "Decommission in progress", entry.group(0)
            assert time.time() < deadline, entry.group(0)
            time.sleep(1)
        beans = json.load(urllib.request.urlopen(state, timeout=5))["beans"][0]
        assert beans["NumDecomLiveDataNodes"] == 1, beans
        with client.read("/dec/f") as r:
            assert r.read() == b"d" * 10_000
    finally:
        stop(server)
