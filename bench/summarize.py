"""Medians [min-max] and Ferrite/HDFS ratios from a bench results.txt (key=value lines)."""

import os
import statistics
import sys
from collections import defaultdict


def parse(path):
    for line in open(path):
        kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
        if kv:
            yield kv


def cell(v, fmt="{:,.0f}"):
    if not v:
        return "–"
    return f"{fmt.format(statistics.median(v))} [{fmt.format(min(v))}–{fmt.format(max(v))}] n={len(v)}"


def table(runs, title, key, unit, fmt="{:,.0f}"):
    keys = sorted({(d, o) for d, o, _ in runs})
    if not keys:
        return
    print(f"\n### {title}\n")
    print(f"| driver | op | HDFS {unit} | Ferrite {unit} | Ferrite / HDFS |")
    print("|---|---|---|---|---|")
    for d, o in keys:
        h, f = runs.get((d, o, "hdfs"), []), runs.get((d, o, "ferrite"), [])
        ratio = f"{statistics.median(f) / statistics.median(h):.2f}x" if h and f else "–"
        print(f"| {d} | {o} | {cell(h, fmt)} | {cell(f, fmt)} | {ratio} |")


def client_bound(client, ops):
    """The Java client's own CPU per operation, and the ops/s no server could exceed with that
    client on these cores (the server's CPU taken as zero)."""
    if not client:
        return
    cpus = os.cpu_count() or 1
    print("\n### NNThroughputBenchmark remote: the client's CPU, and the ceiling it sets\n")
    print(f"| op | client µs/op (HDFS) | client µs/op (Ferrite) | ceiling ops/s ({cpus} cores, server free) | ceiling / HDFS ops/s |")
    print("|---|---|---|---|---|")
    for o in sorted({o for o, _ in client}):
        h, f = client.get((o, "hdfs"), []), client.get((o, "ferrite"), [])
        hdfs_ops = ops.get(("nnthroughput-remote", o, "hdfs"), [])
        ceiling = cpus * 1e6 / statistics.median(f) if f else None
        ratio = f"{ceiling / statistics.median(hdfs_ops):.2f}x" if ceiling and hdfs_ops else "–"
        h, f = cell(h, "{:.1f}"), cell(f, "{:.1f}")
        print(f"| {o} | {h} | {f} | {ceiling:,.0f} | {ratio} |" if ceiling else f"| {o} | {h} | {f} | – | – |")


def main(path):
    ops, cpu, sync = defaultdict(list), defaultdict(list), defaultdict(list)
    client = defaultdict(list)
    rest = []
    for kv in parse(path):
        if "driver" in kv and kv.get("ops_per_s") not in (None, "FAILED", ""):
            ops[(kv.get("driver", "?"), kv["op"], kv["system"])].append(float(kv["ops_per_s"]))
        if kv.get("server_cpu_us_per_op") not in (None, "NA", ""):
            cpu[(kv["driver"], kv["op"], kv["system"])].append(float(kv["server_cpu_us_per_op"]))
        if kv.get("client_cpu_us_per_op") not in (None, "NA", ""):
            client[(kv["op"], kv["system"])].append(float(kv["client_cpu_us_per_op"]))
        if "txns_per_sync" in kv and "op" in kv:
            sync[kv["op"]].append(float(kv["txns_per_sync"]))
        # The remote server's journal statistics (whole suite, no op) are listed as they are.
        remote_journal = "mean_sync_us" in kv
        if "probe" in kv or "rss_kib_after" in kv or kv.get("system") == "disk" or kv.get("op") == "listing" or remote_journal:
            rest.append(kv)
    table(ops, "Throughput (ops/s)", "ops_per_s", "ops/s")
    table(cpu, "Server CPU per operation (µs, lower is better; ratio < 1 favours Ferrite)", "cpu", "µs/op", "{:.1f}")
    client_bound(client, ops)
    if sync:
        print("\n### Ferrite in-process journal: transactions per fdatasync\n")
        for op, v in sorted(sync.items()):
            print(f"- {op}: {cell(v, '{:.1f}')}")
    print()
    for kv in rest:
        print("- " + " ".join(f"{k}={v}" for k, v in kv.items()))


if __name__ == "__main__":
    main(sys.argv[1])
