"""Table for bench/tokens-vs-hdfs.sh: medians over runs of each size's mean and median."""
import statistics
import sys

rows = [dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
        for line in open(sys.argv[1]) if line.startswith("system=")]


def med(system, tokens, key, blocks=None, cpu=False):
    v = [float(r[key]) for r in rows
         if r["system"] == system and r["tokens"] == tokens and key in r
         and ("calls" in r) == cpu and (blocks is None or r["blocks"] == blocks)]
    return statistics.median(v) if v else float("nan")


sizes = sorted({r["blocks"] for r in rows if "mean_ms" in r}, key=int)
print("getBlockLocations round trip, ms (median over runs); on/off = cost of tokens")
print(f"{'blocks':>6} | {'HDFS off':>8} {'HDFS on':>8} {'on/off':>6} | {'Fe off':>7} {'Fe on':>7} {'on/off':>6} | "
      f"{'HDFS on/Fe on':>13} | {'tokens/reply H,F':>16}")
for stat in ("median_ms", "mean_ms"):
    print(f"-- {stat}")
    for n in sizes:
        h0, h1 = med("hdfs", "false", stat, n), med("hdfs", "true", stat, n)
        f0, f1 = med("ferrite", "false", stat, n), med("ferrite", "true", stat, n)
        ht = med("hdfs", "true", "distinct_tokens", n)
        ft = med("ferrite", "true", "distinct_tokens", n)
        print(f"{n:>6} | {h0:>8.3f} {h1:>8.3f} {h1 / h0:>6.2f} | {f0:>7.3f} {f1:>7.3f} {f1 / f0:>6.2f} | "
              f"{h1 / f1:>12.1f}x | {ht:>7.0f},{ft:>7.0f}")
print("NameNode CPU per call at the largest size, us")
for tokens in ("false", "true"):
    h = med("hdfs", tokens, "nn_cpu_us_per_call", cpu=True)
    f = med("ferrite", tokens, "nn_cpu_us_per_call", cpu=True)
    print(f"  tokens={tokens:<5}  HDFS {h:8.1f}  Ferrite {f:8.1f}  Ferrite/HDFS {f / h:.3f}")
