"""Storage policies through Hadoop 3.4.1's `hdfs storagepolicies` (StoragePolicyAdmin) and
FsShell, against Ferrite and a real HDFS 3.4.1: the built-in suite, set / get / unset,
inheritance from a directory to what is created below it, names HDFS does not know, and
a user without write access; line by line."""

from conftest import FsShell
from test_fsshell import C, compare

SP = "storagepolicies"

ADMIN = [
    C(SP, "-listPolicies"),
    C("-mkdir", "-p", "/sp/d/e"),
    C("-touchz", "/sp/d/f"),
    C(SP, "-getStoragePolicy", "-path", "/sp/d"),
    C(SP, "-setStoragePolicy", "-path", "/sp/d", "-policy", "COLD"),
    C(SP, "-getStoragePolicy", "-path", "/sp/d"),
    C(SP, "-getStoragePolicy", "-path", "/sp/d/f"),
    C(SP, "-getStoragePolicy", "-path", "/sp/d/e"),
    C("-touchz", "/sp/d/e/g"),
    C(SP, "-getStoragePolicy", "-path", "/sp/d/e/g"),
    C(SP, "-setStoragePolicy", "-path", "/sp/d/e", "-policy", "ALL_SSD"),
    C(SP, "-getStoragePolicy", "-path", "/sp/d/e/g"),
    C(SP, "-setStoragePolicy", "-path", "/sp/d", "-policy", "hot"),
    C(SP, "-setStoragePolicy", "-path", "/sp/d", "-policy", "FAST"),
    C(SP, "-setStoragePolicy", "-path", "/sp/nope", "-policy", "HOT"),
    C(SP, "-getStoragePolicy", "-path", "/sp/nope"),
    C(SP, "-unsetStoragePolicy", "-path", "/sp/d/e"),
    C(SP, "-getStoragePolicy", "-path", "/sp/d/e/g"),
    C(SP, "-unsetStoragePolicy", "-path", "/sp/d"),
    C(SP, "-getStoragePolicy", "-path", "/sp/d/e/g"),
    C(SP, "-setStoragePolicy", "-path", "/sp/d", "-policy", "WARM"),
]

USER = [
    C(SP, "-setStoragePolicy", "-path", "/sp/d", "-policy", "COLD"),
    C(SP, "-getStoragePolicy", "-path", "/sp/d"),
    C(SP, "-listPolicies"),
]


def test_storage_policies_match_hdfs(ferrite, hdfs, workroot):
    ours = FsShell(ferrite, workroot).run(*ADMIN)
    theirs = FsShell(hdfs, workroot).run(*ADMIN)
    compare(ADMIN, ours, theirs)
    assert "BlockStoragePolicy{HOT:7, storageTypes=[DISK], creationFallbacks=[], replicationFallbacks=[ARCHIVE]}" in ours[0].out
    assert "COLD:2" in ours[9].out, ours[9].out
    assert "ALL_SSD:12" in ours[11].out, ours[11].out
    assert "Cannot find a block policy with the name FAST" in ours[13].err
    u_ours = FsShell(ferrite, workroot, user="alice").run(*USER)
    u_theirs = FsShell(hdfs, workroot, user="alice").run(*USER)
    compare(USER, u_ours, u_theirs)
    assert u_ours[0].rc != 0 and "Permission denied" in u_ours[0].err, u_ours[0]


WEB = [
    ("GET", "/?op=GETALLSTORAGEPOLICY"),
    ("PUT", "/spw/d?op=MKDIRS"),
    ("GET", "/spw/d?op=GETSTORAGEPOLICY"),
    ("PUT", "/spw/d?op=SETSTORAGEPOLICY&storagepolicy=ONE_SSD"),
    ("GET", "/spw/d?op=GETSTORAGEPOLICY"),
    ("PUT", "/spw/d/e?op=MKDIRS"),
    ("GET", "/spw/d/e?op=GETSTORAGEPOLICY"),
    ("GET", "/spw/d/e?op=GETFILESTATUS"),
    ("PUT", "/spw/d?op=SETSTORAGEPOLICY&storagepolicy=NOPE"),
    ("PUT", "/spw/d?op=SETSTORAGEPOLICY"),
    ("GET", "/spw/nope?op=GETSTORAGEPOLICY"),
    ("POST", "/spw/d?op=UNSETSTORAGEPOLICY"),
    ("GET", "/spw/d/e?op=GETSTORAGEPOLICY"),
]


def test_webhdfs_storage_policies_match_hdfs(ferrite, hdfs_cluster):
    import json

    from test_webhdfs import SU, call

    answers = []
    for server in (ferrite, hdfs_cluster):
        got = []
        for method, path in WEB:
            status, _, body, _ = call(server.http, method, f"/webhdfs/v1{path}&user.name={SU}")
            doc = json.loads(body) if body else None
            if isinstance(doc, dict) and "FileStatus" in doc:
                for k in ("accessTime", "modificationTime", "fileId"):
                    doc["FileStatus"].pop(k, None)
            got.append((status, doc))
        answers.append(got)
    ours, theirs = answers
    for (method, path), a, b in zip(WEB, ours, theirs):
        assert a == b, f"{method} {path}\n ferrite: {a}\n    hdfs: {b}"
    assert len(ours[0][1]["BlockStoragePolicies"]["BlockStoragePolicy"]) == 8
    assert ours[6][1]["BlockStoragePolicy"]["name"] == "ONE_SSD"
    assert ours[7][1]["FileStatus"]["storagePolicy"] == 10
