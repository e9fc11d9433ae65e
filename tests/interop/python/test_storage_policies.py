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
