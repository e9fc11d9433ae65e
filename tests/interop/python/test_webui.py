"""The NameNode's web UI in a real headless Chromium (Debian's `chromium`, driven through
`chromedriver` by Selenium): every page loads with no error in the browser's console and
shows the cluster's real numbers, the usage chart drills down, and the file browser makes
a directory, uploads, views, downloads and deletes through WebHDFS — each result checked
through hdfs-native, not through the page."""

import getpass
import os
import time
from pathlib import Path

import pytest
from conftest import FsShell, start_ferrite, stop
from hdfs_native import Client, WriteOptions
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

SU = getpass.getuser()
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
DATANODES = 2


@pytest.fixture(scope="module")
def cluster(workroot):
    w = workroot / "ferrite-webui"
    w.mkdir()
    # An exclude file, empty until a test decommissions a node.
    (w / "exclude").write_text("")
    s = start_ferrite(w, conf=["dfs.replication=2", f"dfs.hosts.exclude={w / 'exclude'}"], datanodes=DATANODES)
    yield s
    assert stop(s) == 0


@pytest.fixture(scope="module")
def client(cluster):
    return Client(cluster.url)


@pytest.fixture(scope="module")
def downloads(workroot):
    d = workroot / "webui-downloads"
    d.mkdir()
    return d


@pytest.fixture(scope="module")
def browser(downloads):
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1280,1000"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    opts.add_experimental_option("prefs", {
        "download.default_directory": str(downloads),
        "download.prompt_for_download": False,
    })
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.execute_cdp_cmd("Browser.setDownloadBehavior",
                           {"behavior": "allow", "downloadPath": str(downloads)})
    yield driver
    driver.quit()


def console_errors(driver):
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def wait(driver, css, timeout=30):
    return WebDriverWait(driver, timeout).until(
        EC.presence_of_element_located((By.CSS_SELECTOR, css)))


def value(driver, element_id) -> int:
    return int(wait(driver, f"#{element_id}").get_attribute("data-value"))


def open_page(driver, cluster, hash_):
    driver.get(f"{cluster.http}/#{hash_}")


def write(client, path, data: bytes):
    with client.create(path) as f:
        f.write(data)


def test_pages_show_the_clusters_numbers_without_console_errors(browser, cluster, client):
    client.mkdirs("/ui/usage/big", create_parent=True)
    client.mkdirs("/ui/usage/small", create_parent=True)
    for i in range(3):
        write(client, f"/ui/usage/big/f{i}", b"x" * 5000)
    for i in range(2):
        write(client, f"/ui/usage/small/g{i}", b"y" * 10)

    # Overview: what the namespace holds (HDFS counts directories, the root too, as
    # files) and the DataNodes serving, as a client sees them.
    cs = client.get_content_summary("/")
    open_page(browser, cluster, "overview")
    assert value(browser, "files-total") == cs.file_count + cs.directory_count
    assert value(browser, "blocks-total") == 5
    assert value(browser, "live-nodes") == DATANODES
    assert value(browser, "dead-nodes") == 0
    assert value(browser, "capacity") > 0
    dirs = browser.find_elements(By.CSS_SELECTOR, "#name-dirs tr[data-dir]")
    assert [d.get_attribute("data-dir") for d in dirs] == [str(cluster.workdir / "data" / "name")]

    open_page(browser, cluster, "datanodes")
    rows = WebDriverWait(browser, 30).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#live tr[data-node]"))
    assert len(rows) == DATANODES
    assert not browser.find_elements(By.CSS_SELECTOR, "#dead tr[data-node]")

    # Namespace usage of /ui/usage: totals, the histogram, the chart, where bytes sit.
    open_page(browser, cluster, "usage/ui/usage")
    assert value(browser, "usage-files") == 5
    assert value(browser, "usage-dirs") == 3
    assert value(browser, "usage-bytes") == 3 * 5000 + 2 * 10
    buckets = browser.find_elements(By.CSS_SELECTOR, "#histogram g.bucket")
    assert sorted(int(b.get_attribute("data-files")) for b in buckets) == [2, 3]
    bars = browser.find_elements(By.CSS_SELECTOR, "#child-chart g.dir")
    assert [b.get_attribute("data-name") for b in bars] == ["big", "small"]
    heaviest = browser.find_elements(By.CSS_SELECTOR, "#heaviest tr td:first-child")
    assert [h.text for h in heaviest] == ["/ui/usage/big", "/ui/usage/small"]

    assert not browser.find_elements(By.ID, "quota"), "no quota on /ui/usage"

    # Drill down: a click on a directory's bar shows that directory, with the quota set on
    # it (names: the directory and its 3 files; space: 15,000 bytes at 2 replicas).
    import urllib.request
    quota = "op=SETQUOTA&namespacequota=10&storagespacequota=1000000"
    req = urllib.request.Request(f"{cluster.http}/webhdfs/v1/ui/usage/big?{quota}&user.name={SU}", method="PUT")
    urllib.request.urlopen(req).read()
    bars[0].click()
    wait(browser, 'section#usage[data-path="/ui/usage/big"]')
    assert value(browser, "usage-files") == 3
    assert value(browser, "usage-bytes") == 15000
    names = wait(browser, "#quota-names")
    assert (names.get_attribute("data-used"), names.get_attribute("data-quota")) == ("4", "10")
    space = browser.find_element(By.ID, "quota-space")
    assert (space.get_attribute("data-used"), space.get_attribute("data-quota")) == ("30000", "1000000")

    assert console_errors(browser) == []


def set_user(driver, name):
    box = driver.find_element(By.ID, "user")
    box.clear()
    box.send_keys(name, Keys.TAB)


def test_file_browser_makes_uploads_views_downloads_and_deletes(
        browser, cluster, client, downloads, tmp_path):
    client.mkdirs("/ui/files", create_parent=True)
    text = b"hello from the file browser\n" * 10
    write(client, "/ui/files/hello.txt", text)

    # The user first: a change of user redraws the page.
    set_user(browser, SU)
    open_page(browser, cluster, "browse/ui/files")
    wait(browser, '#listing tr[data-name="hello.txt"]')

    # mkdir
    browser.find_element(By.ID, "mkdir-name").send_keys("made")
    browser.find_element(By.ID, "mkdir").click()
    wait(browser, '#listing tr[data-name="made"]')
    assert client.get_file_info("/ui/files/made").isdir

    # upload: 300 KiB of varied bytes through the two-step CREATE
    local = tmp_path / "up.bin"
    payload = bytes((i * 7 + i // 251) % 256 for i in range(300 * 1024))
    local.write_bytes(payload)
    browser.find_element(By.ID, "upload-file").send_keys(str(local))
    browser.find_element(By.ID, "upload").click()
    wait(browser, '#listing tr[data-name="up.bin"]')
    with client.read("/ui/files/up.bin") as f:
        assert f.read() == payload

    # view
    browser.find_element(By.CSS_SELECTOR, '#listing tr[data-name="hello.txt"] a.entry').click()
    shown = wait(browser, "#content")
    assert shown.text.strip() == text.decode().strip()

    # download: the browser follows the NameNode's redirect to a DataNode
    browser.find_element(By.ID, "download").click()
    got = downloads / "hello.txt"
    deadline = time.monotonic() + 30
    while not (got.exists() and got.read_bytes() == text) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert got.read_bytes() == text

    # delete, after the page asks
    open_page(browser, cluster, "browse/ui/files")
    wait(browser, '#listing tr[data-name="made"] button.delete').click()
    WebDriverWait(browser, 10).until(EC.alert_is_present()).accept()
    WebDriverWait(browser, 30).until(
        lambda d: not d.find_elements(By.CSS_SELECTOR, '#listing tr[data-name="made"]'))
    with pytest.raises(FileNotFoundError):
        client.get_file_info("/ui/files/made")

    assert console_errors(browser) == []


def test_a_refused_action_is_shown_not_thrown(browser, cluster, client):
    """dr.who may not write in a directory of the superuser's: the page says why."""
    client.mkdirs("/ui/locked", create_parent=True)
    client.set_permission("/ui/locked", 0o755)
    set_user(browser, "")
    open_page(browser, cluster, "browse/ui/locked")
    wait(browser, 'section#browse[data-path="/ui/locked"]')
    browser.find_element(By.ID, "mkdir-name").send_keys("nope")
    browser.find_element(By.ID, "mkdir").click()
    err = WebDriverWait(browser, 30).until(
        lambda d: d.find_element(By.ID, "error") if d.find_element(By.ID, "error").is_displayed() else None)
    assert "AccessControlException" in err.text
    assert "dr.who" in err.text
    with pytest.raises(FileNotFoundError):
        client.get_file_info("/ui/locked/nope")
    # The refusal was an answer the page handled: the console shows the 403, nothing thrown.
    errors = console_errors(browser)
    assert all("403" in e["message"] for e in errors), errors


def test_datanodes_page_shows_a_node_being_decommissioned(browser, cluster, client, workroot):
    """One of the two DataNodes excluded while files ask for two replicas: it cannot finish
    leaving, so it stays Decommission In Progress, listed with its waiting blocks; then it
    comes back. (Last in the module: it changes the cluster the other tests share.)"""
    with client.create("/ui/leaving", WriteOptions(replication=2)) as f:
        f.write(b"x" * 1000)
    shell = FsShell(cluster, workroot)
    (nodes,) = shell.run(["datanodes"])
    xfer = nodes.out.split()[0]
    exclude = cluster.workdir / "exclude"
    exclude.write_text(xfer + "\n")
    assert shell.run(["dfsadmin", "-refreshNodes"])[0].rc == 0
    try:
        # The waiting blocks are counted by the NameNode's next replication scan.
        deadline = time.monotonic() + 60
        while True:
            open_page(browser, cluster, "datanodes")
            browser.refresh()
            rows = WebDriverWait(browser, 30).until(
                lambda d: d.find_elements(By.CSS_SELECTOR, "#decommissioning tr[data-node]"))
            assert len(rows) == 1
            cells = [c.text for c in rows[0].find_elements(By.TAG_NAME, "td")]
            if int(cells[1]) >= 1:
                break
            assert time.monotonic() < deadline, cells
            time.sleep(1)
        states = [r.find_elements(By.TAG_NAME, "td")[-1].text
                  for r in browser.find_elements(By.CSS_SELECTOR, "#live tr[data-node]")]
        assert sorted(states) == ["Decommission In Progress", "In Service"], states
        assert not browser.find_elements(By.CSS_SELECTOR, "#entering-maintenance tr[data-node]")
        assert console_errors(browser) == []
    finally:
        exclude.write_text("")
        assert shell.run(["dfsadmin", "-refreshNodes"])[0].rc == 0
