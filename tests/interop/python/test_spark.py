"""PySpark in local mode (its own Hadoop client) against Ferrite and against a real HDFS
3.4.1: every check that passes on HDFS passes on Ferrite. Before located listings, every
DataFrame read of a directory failed with `HdfsNamedFileStatus cannot be cast to
HdfsLocatedFileStatus`."""

import subprocess
import sys
from pathlib import Path

CHECKS = Path(__file__).with_name("spark_checks.py")


def spark_run(server):
    p = subprocess.run([sys.executable, str(CHECKS), server.url], capture_output=True, text=True, timeout=900)
    lines = [l for l in p.stdout.splitlines() if ": ok" in l or ": FAIL" in l]
    assert len(lines) == 10, p.stdout + p.stderr[-4000:]
    return lines


def test_spark_reads_and_writes_directories_as_on_hdfs(ferrite, hdfs_cluster):
    ours, theirs = spark_run(ferrite), spark_run(hdfs_cluster)
    assert all(l.endswith(": ok") for l in theirs), theirs
    assert ours == theirs
