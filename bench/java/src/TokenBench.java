// getBlockLocations round trips with Hadoop's own client, as in HDFS-1081's tables; used by
// bench/tokens-vs-hdfs.sh against Ferrite and Apache HDFS, tokens on and off.
//   java TokenBench URI prepare SIZES               files /tokbench/N of N 1 KiB blocks
//   java TokenBench URI measure SIZES CALLS NN_PID  per size: CALLS timed calls after a
//                                                   warm-up; then the NameNode's CPU per
//                                                   call at the largest size
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.ClientProtocol;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlocks;

public class TokenBench {
  static final int BLOCK = 1024;

  public static void main(String[] args) throws Exception {
    FileSystem fs = FileSystem.get(URI.create(args[0]), new Configuration());
    int[] sizes = Arrays.stream(args[2].split(",")).mapToInt(Integer::parseInt).toArray();
    if (args[1].equals("prepare")) {
      byte[] buf = new byte[BLOCK];
      for (int n : sizes) {
        try (FSDataOutputStream out = fs.create(new Path("/tokbench/" + n), true, 4096, (short) 1, BLOCK)) {
          for (int i = 0; i < n; i++) {
            out.write(buf);
          }
        }
      }
      return;
    }
    int calls = Integer.parseInt(args[3]);
    String nnPid = args[4];
    ClientProtocol nn = ((DistributedFileSystem) fs).getClient().getNamenode();
    for (int n : sizes) {
      String src = "/tokbench/" + n;
      LocatedBlocks first = nn.getBlockLocations(src, 0, Long.MAX_VALUE);
      if (first.locatedBlockCount() != n) {
        throw new IllegalStateException(src + " has " + first.locatedBlockCount() + " blocks, not " + n);
      }
      for (int i = 0; i < Math.max(50, calls / 2); i++) {
        nn.getBlockLocations(src, 0, Long.MAX_VALUE);
      }
      double[] ms = new double[calls];
      for (int i = 0; i < calls; i++) {
        long t0 = System.nanoTime();
        nn.getBlockLocations(src, 0, Long.MAX_VALUE);
        ms[i] = (System.nanoTime() - t0) / 1e6;
      }
      Arrays.sort(ms);
      double mean = Arrays.stream(ms).average().orElse(0);
      double median = (ms[(calls - 1) / 2] + ms[calls / 2]) / 2;
      List<LocatedBlock> lbs = first.getLocatedBlocks();
      Set<String> distinct = new HashSet<>();
      for (LocatedBlock lb : lbs) {
        distinct.add(Arrays.toString(lb.getBlockToken().getIdentifier()));
      }
      System.out.printf("blocks=%d mean_ms=%.3f median_ms=%.3f token_bytes=%d distinct_tokens=%d%n",
          n, mean, median, lbs.get(0).getBlockToken().getIdentifier().length, distinct.size());
    }
    // NameNode CPU per call at the largest size, from its /proc counters (clock ticks).
    int big = sizes[sizes.length - 1];
    int cpuCalls = 20 * calls;
    long before = cpuTicks(nnPid);
    long t0 = System.nanoTime();
    for (int i = 0; i < cpuCalls; i++) {
      nn.getBlockLocations("/tokbench/" + big, 0, Long.MAX_VALUE);
    }
    double secs = (System.nanoTime() - t0) / 1e9;
    long ticks = cpuTicks(nnPid) - before;
    System.out.printf("cpu blocks=%d calls=%d nn_cpu_us_per_call=%.1f wall_us_per_call=%.1f%n",
        big, cpuCalls, ticks * 1e6 / 100.0 / cpuCalls, secs * 1e6 / cpuCalls);
  }

  static long cpuTicks(String pid) throws Exception {
    String stat = new String(Files.readAllBytes(Paths.get("/proc/" + pid + "/stat")));
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return Long.parseLong(f[11]) + Long.parseLong(f[12]); // utime, stime
  }
}
