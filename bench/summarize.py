"""Medians [min-max] and Ferrite/HDFS ratios from a bench results.txt (key=value lines)."""

import statistics
import sys
from collections import defaultdict


def parse(path):
    for line in open(path):
        kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
        if kv:
            yield kv


def main(path):
    runs = defaultdict(list)
    for kv in parse(path):
        if "ops_per_s" in kv and kv.get("ops_per_s") not in ("FAILED", ""):
            runs[(kv["driver"], kv["op"], kv["system"])].append(float(kv["ops_per_s"]))
    print("| driver | op | HDFS ops/s | Ferrite ops/s | Ferrite / HDFS |")
    print("|---|---|---|---|---|")
    keys = sorted({(d, o) for d, o, _ in runs})
    for d, o in keys:
        h, f = runs.get((d, o, "hdfs"), []), runs.get((d, o, "ferrite"), [])
        cell = lambda v: f"{statistics.median(v):,.0f} [{min(v):,.0f}–{max(v):,.0f}] n={len(v)}" if v else "–"
        ratio = f"{statistics.median(f) / statistics.median(h):.2f}x" if h and f else "–"
        print(f"| {d} | {o} | {cell(h)} | {cell(f)} | {ratio} |")
    print()
    for kv in parse(path):
        if kv.get("probe", "").startswith("inode-memory") or kv.get("op") in ("listing", "inode-memory") or "rss_kib_after" in kv:
            print("- " + " ".join(f"{k}={v}" for k, v in kv.items()))


if __name__ == "__main__":
    main(sys.argv[1])
