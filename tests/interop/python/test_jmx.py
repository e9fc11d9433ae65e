"""The NameNode's `/jmx`, read as monitoring reads an HDFS NameNode's HTTP port: the same
beans and attributes from Ferrite and from Apache HDFS 3.4.1, with the same types and
meanings."""

import json
import time
import urllib.error
import urllib.request
import uuid

from hdfs_native import Client

# What a monitoring setup for HDFS typically scrapes, bean by bean. Every attribute listed
# must be in HDFS's answer too, which keeps the list honest.
ATTRS = {
    "NameNodeInfo": [
        "Version",
        "SoftwareVersion",
        "ClusterId",
        "BlockPoolId",
        "Safemode",
        "TotalBlocks",
        "Threads",
        "NNStartedTimeInMillis",
        "NameDirStatuses",
        "NameJournalStatus",
        "JournalTransactionInfo",
    ],
    "FSNamesystem": [
        "tag.HAState",
        "FilesTotal",
        "BlocksTotal",
        "NumFilesUnderConstruction",
        "NumActiveClients",
        "NumLiveDataNodes",
        "NumDeadDataNodes",
        "LastWrittenTransactionId",
        "TransactionsSinceLastCheckpoint",
        "TransactionsSinceLastLogRoll",
        "LastCheckpointTime",
    ],
    "FSNamesystemState": ["FSState", "FilesTotal", "BlocksTotal", "NumLiveDataNodes", "NumDeadDataNodes"],
    "StartupProgress": ["ElapsedTime", "PercentComplete"]
    + [
        f"{phase}{what}"
        for phase in ("LoadingFsImage", "LoadingEdits", "SavingCheckpoint", "SafeMode")
        for what in ("Count", "ElapsedTime", "Total", "PercentComplete")
    ],
    "NameNodeStatus": ["State", "NNRole", "HostAndPort", "SecurityEnabled"],
    "NameNodeActivity": ["SyncsNumOps", "SyncsAvgTime", "TransactionsNumOps", "TransactionsBatchedInSync"],
}


def jmx(server, query):
    try:
        with urllib.request.urlopen(f"{server.http}/jmx?{query}", timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def bean(server, name):
    status, body = jmx(server, f"qry=Hadoop:service=NameNode,name={name}")
    assert status == 200
    assert len(body["beans"]) == 1, body
    return body["beans"][0]


def live_txid(server):
    info = bean(server, "NameNodeInfo")
    return int(json.loads(info["JournalTransactionInfo"])["LastAppliedOrWrittenTxId"])


def polled(server, name, ready):
    """Bean `name` once `ready(bean)` holds (or as it is after a minute). HDFS's metrics
    beans are snapshots, each refreshed at most every 10 seconds, while NameNodeInfo is
    read live; Ferrite reads every bean live."""
    deadline = time.time() + 60
    while True:
        b = bean(server, name)
        if ready(b) or time.time() > deadline:
            return b
        time.sleep(0.5)


def settled(server):
    """FSNamesystem once it shows the journal's last txid."""
    txid = live_txid(server)
    return polled(server, "FSNamesystem", lambda b: b["LastWrittenTransactionId"] == txid)


def test_the_beans_monitoring_reads_are_there_with_hdfs_types(ferrite, hdfs):
    for name, attrs in ATTRS.items():
        f, h = bean(ferrite, name), bean(hdfs, name)
        assert f["name"] == h["name"] == f"Hadoop:service=NameNode,name={name}"
        for a in attrs:
            assert a in h, f"HDFS has no {name}.{a}"
            assert a in f, f"Ferrite has no {name}.{a}"
            assert type(f[a]) is type(h[a]), f"{name}.{a}: {f[a]!r} against HDFS's {h[a]!r}"
    for s in (ferrite, hdfs):
        info = bean(s, "NameNodeInfo")
        assert info["Safemode"] == ""
        dirs = json.loads(info["NameDirStatuses"])
        assert set(dirs) == {"active", "failed"}
        assert list(dirs["active"].values()) == ["IMAGE_AND_EDITS"], dirs
        assert dirs["failed"] == {}
        txids = json.loads(info["JournalTransactionInfo"])
        assert set(txids) == {"MostRecentCheckpointTxId", "LastAppliedOrWrittenTxId"}
        assert int(txids["LastAppliedOrWrittenTxId"]) >= int(txids["MostRecentCheckpointTxId"])
        journals = json.loads(info["NameJournalStatus"])
        assert [j["disabled"] for j in journals] == ["false"]
        assert "edits_inprogress_" in journals[0]["stream"]
        assert bean(s, "NameNodeStatus")["State"] == "active"
        assert bean(s, "FSNamesystem")["tag.HAState"] == "active"
        assert bean(s, "FSNamesystemState")["FSState"] == "Operational"


def test_counts_move_as_they_do_in_hdfs(ferrite, hdfs):
    moved = {}
    for s in (ferrite, hdfs):
        c = Client(s.url)
        before, act = settled(s), bean(s, "NameNodeActivity")
        base = f"/jmx-{uuid.uuid4().hex[:8]}"
        c.mkdirs(f"{base}/a/b", create_parent=True)
        for i in range(3):
            c.create(f"{base}/a/f{i}").close()
        open_file = c.create(f"{base}/open")
        during = settled(s)
        open_file.close()
        after = settled(s)
        moved[s.url] = (
            during["FilesTotal"] - before["FilesTotal"],
            during["NumFilesUnderConstruction"] - before["NumFilesUnderConstruction"],
            after["NumFilesUnderConstruction"] - before["NumFilesUnderConstruction"],
        )
        assert after["LastWrittenTransactionId"] > before["LastWrittenTransactionId"]
        assert after["TransactionsSinceLastCheckpoint"] > before["TransactionsSinceLastCheckpoint"]
        synced = polled(s, "NameNodeActivity", lambda b: b["SyncsNumOps"] > act["SyncsNumOps"])
        assert synced["SyncsNumOps"] > act["SyncsNumOps"]
    # Three directories and four files are seven inodes; one file open, then none.
    assert moved[ferrite.url] == moved[hdfs.url] == (7, 1, 0), moved


COUNTERS = [
    "CreateFileOps",
    "FilesCreated",
    "FilesRenamed",
    "GetListingOps",
    "FilesInGetListingOps",
    "DeleteFileOps",
    "FilesDeleted",
    "FileInfoOps",
    "GetBlockLocations",
]


def test_operation_counters_move_as_they_do_in_hdfs(ferrite, hdfs):
    moved = {}
    for s in (ferrite, hdfs):
        c = Client(s.url)
        # A snapshot of HDFS's may predate calls made before it (the fixture's own): one
        # taken after a call it shows has everything before that call.
        first = bean(s, "NameNodeActivity")
        c.get_file_info("/")
        before = polled(s, "NameNodeActivity", lambda b: b["FileInfoOps"] > first["FileInfoOps"])
        base = f"/ops-{uuid.uuid4().hex[:8]}"
        c.mkdirs(f"{base}/a/b", create_parent=True)
        for i in range(3):
            c.create(f"{base}/a/f{i}").close()
        c.rename(f"{base}/a/f0", f"{base}/a/g0")
        listed = list(c.list_status(f"{base}/a"))
        c.get_file_info(f"{base}/a/g0")
        with c.read(f"{base}/a/g0") as r:
            r.read()
        assert c.delete(f"{base}/missing", recursive=False) is False
        assert c.delete(base, recursive=True)
        # HDFS refreshes the bean every 10 s: wait until it shows the last operation.
        after = polled(
            s, "NameNodeActivity", lambda b: b["FilesDeleted"] >= before["FilesDeleted"] + 6
        )
        moved[s.url] = {k: after[k] - before[k] for k in COUNTERS}
        assert len(listed) == 4  # b, g0, f1, f2
    f, h = moved[ferrite.url], moved[hdfs.url]
    assert f == h, (f, h)
    # Three directories and three files made; base, a, b and three files deleted.
    assert (f["FilesCreated"], f["CreateFileOps"], f["FilesDeleted"]) == (6, 3, 6), f
    assert (f["DeleteFileOps"], f["FilesRenamed"], f["FilesInGetListingOps"]) == (1, 1, 4), f


def test_startup_progress_is_the_document_hdfs_serves(ferrite, hdfs):
    docs = {}
    for s in (ferrite, hdfs):
        with urllib.request.urlopen(f"{s.http}/startupProgress", timeout=10) as r:
            assert r.status == 200
            assert r.headers["Content-Type"].startswith("application/json")
            docs[s.url] = json.load(r)
    f, h = docs[ferrite.url], docs[hdfs.url]
    assert set(f) == set(h) == {"elapsedTime", "percentComplete", "phases"}
    names = ["LoadingFsImage", "LoadingEdits", "SavingCheckpoint", "SafeMode"]
    assert [p["name"] for p in f["phases"]] == [p["name"] for p in h["phases"]] == names
    for fp, hp in zip(f["phases"], h["phases"]):
        # Both are up: every phase done. The image phase names its file only when there
        # is an image (a formatted HDFS always has one; a fresh Ferrite has none).
        assert fp["status"] == hp["status"] == "COMPLETE"
        assert fp["desc"] == hp["desc"]
        common = {"name", "desc", "status", "percentComplete", "elapsedTime", "steps"}
        assert common <= set(fp) and common <= set(hp), (fp, hp)
        for k in common:
            assert type(fp[k]) is type(hp[k]), (k, fp, hp)
    safe = [p["steps"] for p in (f["phases"][3], h["phases"][3])]
    assert [s[0]["name"] for s in safe] == ["AwaitingReportedBlocks"] * 2, safe
    assert set(safe[0][0]) == set(safe[1][0]), safe
    assert f["percentComplete"] == h["percentComplete"] == 1.0


def test_is_active_answers_as_the_active_hdfs_namenode(ferrite, hdfs):
    for s in (ferrite, hdfs):
        with urllib.request.urlopen(f"{s.http}/isActive", timeout=10) as r:
            assert (r.status, r.read()) == (200, b"I am Active!")


def test_queries_and_their_errors_answer_as_in_hdfs(ferrite, hdfs):
    for s in (ferrite, hdfs):
        status, body = jmx(s, "get=Hadoop:service=NameNode,name=FSNamesystem::FilesTotal")
        assert status == 200
        assert set(body["beans"][0]) == {"name", "modelerType", "FilesTotal"}
        _, body = jmx(s, "get=Hadoop:service=NameNode,name=FSNamesystem::Nope")
        b = body["beans"][0]
        assert (b["result"], b["message"]) == ("ERROR", "No attribute with name Nope was found.")
        assert jmx(s, "qry=Hadoop:service=Nope,*") == (200, {"beans": []})
        _, body = jmx(s, "qry=Hadoop:service=NameNode,*")
        names = {b["name"] for b in body["beans"]}
        assert {f"Hadoop:service=NameNode,name={n}" for n in ATTRS} <= names
        # A malformed get: the same JSON error (HDFS says it with status 200, Ferrite 400).
        status, body = jmx(s, "get=no-separator")
        assert body == {"result": "ERROR", "message": "query format is not as expected."}
        assert status in (200, 400)


def test_ferrite_says_how_far_its_summary_is_behind(ferrite):
    c = Client(ferrite.url)
    base = f"/jmx-sum-{uuid.uuid4().hex[:8]}"
    c.mkdirs(f"{base}/d", create_parent=True)
    c.create(f"{base}/d/f").close()
    _, body = jmx(ferrite, "qry=Ferrite:service=NameNode,name=Summary")
    before = body["beans"][0]
    txid = live_txid(ferrite)
    assert c.get_content_summary(base).file_count == 1
    _, body = jmx(ferrite, "qry=Ferrite:service=NameNode,name=Summary")
    after = body["beans"][0]
    assert after["AnsweredFromSummary"] == before["AnsweredFromSummary"] + 1
    # The answer waited for the summary to reach the namespace as the call found it, so
    # it has applied the records that made the directory and the file.
    assert after["AppliedTxId"] >= txid
    assert after["RecordsApplied"] > 0


def test_rpc_activity_counts_calls_as_hdfs_does(ferrite, hdfs):
    for s in (ferrite, hdfs):
        detailed, activity = f"RpcDetailedActivityForPort{s.port}", f"RpcActivityForPort{s.port}"
        c = Client(s.url)
        before = bean(s, detailed)
        for _ in range(5):
            c.get_file_info("/")
        want = before["GetFileInfoNumOps"] + 5
        after = polled(s, detailed, lambda b: b["GetFileInfoNumOps"] >= want)
        assert after["GetFileInfoNumOps"] >= want, after
        assert isinstance(after["GetFileInfoAvgTime"], float)
        assert after["tag.port"] == str(s.port)
        rpc = polled(s, activity, lambda b: b["NumOpenConnections"] >= 1)
        assert rpc["NumOpenConnections"] >= 1, "this test's client is connected"
        assert rpc["RpcProcessingTimeNumOps"] >= rpc["RpcCallSuccesses"] > 0
        assert isinstance(rpc["RpcProcessingTimeAvgTime"], float)
        assert rpc["TotalRequests"] >= rpc["RpcProcessingTimeNumOps"]


# A DataNode's beans as monitoring reads them.
DN_ATTRS = {
    "FSDatasetState": ["Capacity", "DfsUsed", "Remaining", "NumFailedVolumes"],
    "DataNodeInfo": [
        "Version",
        "SoftwareVersion",
        "ClusterId",
        "DataPort",
        "RpcPort",
        "HttpPort",
        "DNStartedTimeInMillis",
        "SecurityEnabled",
        "VolumeInfo",
    ],
}
LIVE_NODE_KEYS = {"infoAddr", "xferaddr", "lastContact", "adminState", "capacity", "usedSpace", "remaining", "volfails"}


def dn_beans(http, pattern):
    with urllib.request.urlopen(f"{http}/jmx?qry=Hadoop:service=DataNode,name={pattern}", timeout=10) as r:
        return json.load(r)["beans"]


def test_datanodes_and_their_jmx_are_found_and_read_as_in_hdfs(ferrite, hdfs_cluster):
    for s in (ferrite, hdfs_cluster):
        live = json.loads(bean(s, "NameNodeInfo")["LiveNodes"])
        assert live, f"{s.url}: no live DataNodes"
        for key, node in live.items():
            assert LIVE_NODE_KEYS <= set(node), f"{key}: {sorted(node)}"
            assert node["adminState"] == "In Service"
            assert node["volfails"] == 0
        # The NameNode says where each DataNode's /jmx is, as HDFS's web UI finds it.
        dn_http = "http://" + next(iter(live.values()))["infoAddr"]
        for name, attrs in DN_ATTRS.items():
            (b,) = dn_beans(dn_http, name)
            for a in attrs:
                assert a in b, f"{s.url} {name}.{a}"
        (per_uuid,) = dn_beans(dn_http, "FSDatasetState-*")
        assert per_uuid["NumFailedVolumes"] == 0
        assert per_uuid["FailedStorageLocations"] == []
        info = dn_beans(dn_http, "DataNodeInfo")[0]
        assert info["HttpPort"] == dn_http.rsplit(":", 1)[1]
        volumes = json.loads(info["VolumeInfo"])
        assert len(volumes) == 1
        for v in volumes.values():
            assert {"numBlocks", "usedSpace", "freeSpace", "reservedSpace", "storageType"} <= set(v)
            assert v["storageType"] == "DISK"
    # The same types from both.
    f_http = "http://" + next(iter(json.loads(bean(ferrite, "NameNodeInfo")["LiveNodes"]).values()))["infoAddr"]
    h_http = "http://" + next(iter(json.loads(bean(hdfs_cluster, "NameNodeInfo")["LiveNodes"]).values()))["infoAddr"]
    for name, attrs in DN_ATTRS.items():
        (f,), (h,) = dn_beans(f_http, name), dn_beans(h_http, name)
        for a in attrs:
            assert type(f[a]) is type(h[a]), f"{name}.{a}: {f[a]!r} against HDFS's {h[a]!r}"
