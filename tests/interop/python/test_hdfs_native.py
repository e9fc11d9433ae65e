"""The pinned hdfs-native Python client against a running Ferrite NameNode."""

import contextlib
import getpass
import io
import os
import stat

import pytest
from hdfs_native import Client, WriteOptions
from conftest import start_ferrite, stop


@pytest.fixture(scope="module")
def client(ferrite):
    return Client(ferrite.url)


def touch(c, path):
    c.create(path).close()


def own_ferrite(workroot, name, conf=(), datanodes=0):
    """A Ferrite of this test's own in `workroot/name`, started with `conf`, and a client."""
    w = workroot / name
    w.mkdir()
    s = start_ferrite(w, conf, datanodes=datanodes)
    return s, Client(s.url)


def test_mkdirs_and_file_info(client):
    client.mkdirs("/hn/a/b", create_parent=True)
    st = client.get_file_info("/hn/a/b")
    assert st.isdir and st.permission == 0o755 and st.length == 0
    # The owner is the user the client sent (SIMPLE auth: HADOOP_USER_NAME, else the login user).
    assert st.owner == (os.environ.get("HADOOP_USER_NAME") or getpass.getuser())
    assert st.group == "supergroup", "a new directory takes its parent's group"
    # mkdirs without create_parent under a missing parent fails.
    with pytest.raises(FileNotFoundError):
        client.mkdirs("/hn/missing/x")


def test_create_close_and_status(client):
    touch(client, "/hn/empty")
    st = client.get_file_info("/hn/empty")
    assert not st.isdir
    assert st.length == 0
    assert st.permission == 0o644
    assert st.replication == 3
    assert st.blocksize == 128 * 1024 * 1024
    with pytest.raises(FileExistsError):
        client.create("/hn/empty")
    # Overwrite replaces it.
    client.create("/hn/empty", WriteOptions(overwrite=True)).close()
    assert client.get_file_info("/hn/empty").length == 0


def test_missing_paths_raise_file_not_found(client):
    with pytest.raises(FileNotFoundError):
        client.get_file_info("/hn/nope")
    with pytest.raises(FileNotFoundError):
        next(client.list_status("/hn/nope"))
    with pytest.raises(FileNotFoundError):
        client.get_content_summary("/hn/nope")
    with pytest.raises(FileNotFoundError):
        client.rename("/hn/nope", "/hn/x")
    with pytest.raises(FileNotFoundError):
        client.set_permission("/hn/nope", 0o700)
    assert client.delete("/hn/nope") is False


def test_listing_pages_through_a_big_directory(client):
    client.mkdirs("/hn/big", create_parent=True)
    n = 3500  # more than three pages of dfs.ls.limit=1000
    for i in range(n):
        client.mkdirs(f"/hn/big/d{i:05}")
    names = [os.path.basename(s.path) for s in client.list_status("/hn/big")]
    assert len(names) == n
    assert names == sorted(names)
    assert names[0] == "d00000" and names[-1] == f"d{n - 1:05}"


def test_rename_and_delete(client):
    client.mkdirs("/hn/r", create_parent=True)
    touch(client, "/hn/r/a")
    touch(client, "/hn/r/b")
    client.rename("/hn/r/a", "/hn/r/c")
    assert client.get_file_info("/hn/r/c")
    with pytest.raises(FileNotFoundError):
        client.get_file_info("/hn/r/a")
    with pytest.raises(FileExistsError):
        client.rename("/hn/r/c", "/hn/r/b")
    client.rename("/hn/r/c", "/hn/r/b", overwrite=True)
    assert [os.path.basename(s.path) for s in client.list_status("/hn/r")] == ["b"]
    with pytest.raises(Exception, match="PathIsNotEmptyDirectoryException"):
        client.delete("/hn/r", recursive=False)
    assert client.delete("/hn/r", recursive=True) is True
    with pytest.raises(FileNotFoundError):
        client.get_file_info("/hn/r")


def test_permission_owner_times_replication(client):
    touch(client, "/hn/p")
    client.set_permission("/hn/p", 0o600)
    assert client.get_file_info("/hn/p").permission == 0o600
    client.set_owner("/hn/p", "alice", "staff")
    st = client.get_file_info("/hn/p")
    assert (st.owner, st.group) == ("alice", "staff")
    client.set_owner("/hn/p", group="other")
    st = client.get_file_info("/hn/p")
    assert (st.owner, st.group) == ("alice", "other")
    client.set_times("/hn/p", 1_000_000, 2_000_000)
    st = client.get_file_info("/hn/p")
    assert (st.modification_time, st.access_time) == (1_000_000, 2_000_000)
    assert client.set_replication("/hn/p", 2) is True
    assert client.get_file_info("/hn/p").replication == 2
    assert client.set_replication("/hn", 2) is False


def test_content_summary(client):
    client.mkdirs("/hn/cs/x/y", create_parent=True)
    for p in ["/hn/cs/1", "/hn/cs/x/2", "/hn/cs/x/y/3"]:
        touch(client, p)
    cs = client.get_content_summary("/hn/cs")
    assert (cs.file_count, cs.directory_count, cs.length) == (3, 3, 0)
    assert cs.quota == 2**64 - 1 or cs.quota == -1


def test_lease_recovery_closes_an_open_file(client, ferrite):
    w = client.create("/hn/open")
    other = Client(ferrite.url)
    with pytest.raises(Exception, match="lease is currently owned by"):
        other.create("/hn/open", WriteOptions(overwrite=True))
    assert other.recover_lease("/hn/open") is True
    # Closed now, so another writer may replace it.
    other.create("/hn/open", WriteOptions(overwrite=True)).close()
    with pytest.raises(Exception):
        w.close()  # the first writer lost its lease
    # Its close failed, so Python would try it again whenever `w` is collected, perhaps
    # after the server has stopped (see the no-datanodes test below): mark it closed.
    io.RawIOBase.close(w)


def test_writing_data_fails_clearly_without_datanodes(workroot):
    s, client = own_ferrite(workroot, "no-datanodes")
    client.mkdirs("/hn", create_parent=True)
    f = client.create("/hn/data")
    with pytest.raises(Exception, match="could only be written to 0"):
        f.write(b"x" * 1024)
        f.close()
    # The server keeps serving.
    assert client.get_file_info("/hn").isdir
    # hdfs-native's FileWriter is an io.RawIOBase whose close() never marks it closed, so
    # Python closes it again whenever it is collected, possibly tests later: by then this
    # NameNode is stopped, and hdfs-native retries it forever (it hung a whole suite run).
    # Close it while the server is up, then mark it closed for good.
    with contextlib.suppress(Exception):
        f.close()
    io.RawIOBase.close(f)
    assert stop(s) == 0


def test_trash_moves_into_dot_trash(ferrite_trash):
    c = Client(ferrite_trash.url)
    c.mkdirs("/tr", create_parent=True)
    touch(c, "/tr/f")
    assert c.trash("/tr/f")
    user = c.get_file_info("/tr").owner
    st = c.get_file_info(f"/user/{user}/.Trash/Current/tr/f")
    assert not st.isdir
    with pytest.raises(FileNotFoundError):
        c.get_file_info("/tr/f")


def test_trash_disabled_is_reported(client):
    touch(client, "/hn/t")
    with pytest.raises(Exception):
        client.trash("/hn/t")
    assert client.get_file_info("/hn/t")


def test_a_full_directory_refuses_new_entries(workroot):
    conf = ["dfs.namenode.fs-limits.max-directory-items=2", "dfs.namenode.fs-limits.max-component-length=8"]
    s, c = own_ferrite(workroot, "dir-limit", conf)
    c.mkdirs("/full/sub", create_parent=True)
    touch(c, "/full/a")
    full = "MaxDirectoryItemsExceededException.*The directory item limit of /full is exceeded: limit=2 items=2"
    with pytest.raises(Exception, match=full):
        touch(c, "/full/b")
    with pytest.raises(Exception, match=full):
        c.mkdirs("/full/c")
    # Renaming within the directory adds no entry.
    c.rename("/full/a", "/full/a2")
    touch(c, "/other")
    with pytest.raises(Exception, match=full):
        c.rename("/other", "/full/other")
    # Room again once an entry goes.
    c.delete("/full/sub")
    c.rename("/other", "/full/other")
    assert sorted(os.path.basename(x.path) for x in c.list_status("/full")) == ["a2", "other"]
    # A create refused partway (a 9-byte name) keeps the parents it made, as HDFS's does.
    long = "PathComponentTooLongException.*in directory /made/new is exceeded: limit=8 length=9"
    with pytest.raises(Exception, match=long):
        touch(c, "/made/new/123456789")
    assert c.get_file_info("/made/new").isdir
    assert list(c.list_status("/made/new")) == []
    assert stop(s) == 0


def test_a_file_at_its_block_limit_gets_no_further_block(workroot):
    conf = ["dfs.namenode.fs-limits.max-blocks-per-file=2", "dfs.namenode.fs-limits.min-block-size=1024"]
    s, c = own_ferrite(workroot, "block-limit", conf, datanodes=1)
    opts = WriteOptions(block_size=1024, replication=1)
    with c.create("/two-blocks", opts) as f:
        f.write(b"y" * 2048)
    assert c.get_file_info("/two-blocks").length == 2048
    f = c.create("/three-blocks", opts)
    limit = r"maximum number of blocks \(dfs.namenode.fs-limits.max-blocks-per-file\): 2 >= 2"
    with pytest.raises(Exception, match=limit):
        f.write(b"x" * 3072)
        f.close()
    # As in the test above: close the failed writer while the server is up, for good.
    with contextlib.suppress(Exception):
        f.close()
    io.RawIOBase.close(f)
    assert c.get_file_info("/two-blocks").length == 2048
    assert stop(s) == 0
