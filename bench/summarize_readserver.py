"""Summarizes bench/readserver-vs-hdfs.sh's results.txt: one table per case, HDFS vs Ferrite."""
import re
import statistics
import sys

rows = []
for line in open(sys.argv[1]):
    kv = dict(re.findall(r"(\w+)=([^\s]+)", line))
    if "system" in kv:
        rows.append(kv)


def get(sys_, phase, key, f=float):
    vals = [f(r[key]) for r in rows if r["system"] == sys_ and r["phase"].startswith(phase) and key in r]
    return statistics.median(vals) if vals else float("nan")


def ratio(a, b):
    return a / b if b else float("nan")


print("case                         |        HDFS |     Ferrite | Ferrite/HDFS")
def line(name, phase, key, f=float):
    h, fe = get("hdfs", phase, key, f), get("ferrite", phase, key, f)
    print(f"{name:<28} | {h:11.1f} | {fe:11.1f} | {ratio(fe, h):8.2f}x")

line("loopback MiB/s (1 stream)", "loopback", "mib_per_s")
line("1. stream MiB/s, Java client", "stream", "mib_per_s")
line("1. stream MiB/s, Rust client", "rust_stream", "mib_per_s")
line("1. stream MiB/s, raw (no CRC)", "raw_stream", "mib_per_s")
line("1. stream MiB/s, raw + CRC", "rawv_stream", "mib_per_s")
for s in ("hdfs", "ferrite"):
    raw, lo = get(s, "raw_stream", "mib_per_s"), get(s, "loopback", "mib_per_s")
    print(f"   {s:<8} raw stream / loopback:  {100 * ratio(raw, lo):8.1f} %")
line("2. pread ops/s", "pread200", "ops_per_s")
line("2. pread p50 ms", "pread200", "p50_ms")
line("2. pread p99 ms", "pread200", "p99_ms")
for s in ("hdfs", "ferrite"):
    ops = get(s, "pread200", "ops")
    ticks = get(s, "pread200", "dn_cpu_ticks")
    print(f"   {s:<8} DataNode CPU per read: {ticks * 1e4 / ops:8.1f} us" if ops == ops and ops else "")
line("2. peak threads", "pread200", "peak_threads")
line("2. peak fds", "pread200", "peak_fds")
line("3. slow: reads done", "slow", "reads")
line("3. slow: failures", "slow", "failures")
line("3. slow: peak threads", "slow", "peak_threads")
line("3. slow: peak fds", "slow", "peak_fds")
line("3. slow: peak RSS MiB", "slow", "peak_rss_kb", lambda v: float(v) / 1024)
line("4. 128 threads: peak fds", "rand128", "peak_fds")
line("4. 128 threads: ops/s", "rand128", "ops_per_s")
line("idle threads", "idle", "threads")
line("idle fds", "idle", "fds")
