"""Medians of bench/webhdfs-vs-hdfs.sh's result lines, per system and operation, with
Ferrite's ratio to HDFS: requests/s and MiB/s (higher is better), NameNode CPU per request
and latencies (lower is better; shown as HDFS / Ferrite, so above 1 is Ferrite ahead)."""

import re
import statistics
import sys
from collections import defaultdict

UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def ms(v: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s)", v)
    return float(m.group(1)) * UNITS[m.group(2)]


def main(path):
    runs = defaultdict(lambda: defaultdict(list))
    for line in open(path):
        f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
        key = (f["system"], f["op"])
        for k in ("rps", "nn_cpu_us_per_req", "mib_per_s", "nn_threads", "nn_rss_kb"):
            if k in f:
                runs[key][k].append(float(f[k]))
        for k in ("p50", "p99"):
            if k in f:
                runs[key][k].append(ms(f[k]))
    med = {k: {m: statistics.median(v) for m, v in d.items()} for k, d in runs.items()}
    n = {k: len(next(iter(d.values()))) for k, d in runs.items()}
    for op in ("GETFILESTATUS", "LISTSTATUS"):
        h, r = med.get(("hdfs", op)), med.get(("ferrite", op))
        if not (h and r):
            continue
        print(f"{op} ({n[('ferrite', op)]} rounds, medians)")
        print(f"  requests/s      hdfs {h['rps']:>10.0f}  ferrite {r['rps']:>10.0f}  ferrite/hdfs {r['rps'] / h['rps']:.2f}x")
        print(f"  NN CPU µs/req   hdfs {h['nn_cpu_us_per_req']:>10.0f}  ferrite {r['nn_cpu_us_per_req']:>10.0f}  hdfs/ferrite {h['nn_cpu_us_per_req'] / max(r['nn_cpu_us_per_req'], 1):.2f}x")
        for p in ("p50", "p99"):
            print(f"  {p} ms          hdfs {h[p]:>10.2f}  ferrite {r[p]:>10.2f}  hdfs/ferrite {h[p] / r[p]:.2f}x")
        print(f"  NN threads      hdfs {h['nn_threads']:>10.0f}  ferrite {r['nn_threads']:>10.0f}")
        print(f"  NN RSS MiB      hdfs {h['nn_rss_kb'] / 1024:>10.0f}  ferrite {r['nn_rss_kb'] / 1024:>10.0f}")
    for op in ("CREATE", "OPEN"):
        h, r = med.get(("hdfs", op)), med.get(("ferrite", op))
        if h and r:
            print(f"{op} MiB/s         hdfs {h['mib_per_s']:>10.1f}  ferrite {r['mib_per_s']:>10.1f}  ferrite/hdfs {r['mib_per_s'] / h['mib_per_s']:.2f}x")


if __name__ == "__main__":
    main(sys.argv[1])
