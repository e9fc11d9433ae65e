// getBlockLocations round trips with Hadoop's own client, as in HDFS-1081's tables; used by
// bench/tokens-vs-hdfs.sh against Ferrite and Apache HDFS, tokens on and off.
//   java TokenBench URI prepare SIZES                 files /tokbench/N of N 1 KiB blocks
//   java TokenBench URIS measure SIZES CALLS NN_PIDS  per size: CALLS timed calls to each
//                                                     NameNode after a warm-up; then each
//                                                     NameNode's CPU per call at the
//                                                     largest size
// URIS and NN_PIDS are comma-separated lists of the same length. The NameNodes' calls
// alternate one by one (bench/tokens-vs-hdfs.sh passes four: HDFS and Ferrite, tokens off
// and on), so that the machine's drift and the JVM's state are the same for all of them and
// their ratios measure the servers, not the noise between runs.
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
    int[] sizes = Arrays.stream(args[2].split(",")).mapToInt(Integer::parseInt).toArray();
    if (args[1].equals("prepare")) {
      FileSystem fs = FileSystem.get(URI.create(args[0]), new Configuration());
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
    String[] uris = args[0].split(",");
    String[] pids = args[4].split(",");
    int calls = Integer.parseInt(args[3]);
    ClientProtocol[] nns = new ClientProtocol[uris.length];
    for (int t = 0; t < uris.length; t++) {
      FileSystem f = FileSystem.get(URI.create(uris[t]), new Configuration());
      nns[t] = ((DistributedFileSystem) f).getClient().getNamenode();
    }
    for (int n : sizes) {
      String src = "/tokbench/" + n;
      LocatedBlocks[] first = new LocatedBlocks[nns.length];
      for (int t = 0; t < nns.length; t++) {
        first[t] = nns[t].getBlockLocations(src, 0, Long.MAX_VALUE);
        if (first[t].locatedBlockCount() != n) {
          throw new IllegalStateException(uris[t] + src + " has " + first[t].locatedBlockCount() + " blocks, not " + n);
        }
      }
      for (int i = 0; i < Math.max(50, calls / 2); i++) {
        for (ClientProtocol nn : nns) {
          nn.getBlockLocations(src, 0, Long.MAX_VALUE);
        }
      }
      double[][] ms = new double[nns.length][calls];
      for (int i = 0; i < calls; i++) {
        // Each call's turn alternates too (off, on; on, off; ...): the second call of a
        // pair may pay for the first one's garbage, and neither side should always be it.
        for (int k = 0; k < nns.length; k++) {
          int t = (k + i) % nns.length;
          long t0 = System.nanoTime();
          nns[t].getBlockLocations(src, 0, Long.MAX_VALUE);
          ms[t][i] = (System.nanoTime() - t0) / 1e6;
        }
      }
      for (int t = 0; t < nns.length; t++) {
        Arrays.sort(ms[t]);
        double mean = Arrays.stream(ms[t]).average().orElse(0);
        double median = (ms[t][(calls - 1) / 2] + ms[t][calls / 2]) / 2;
        List<LocatedBlock> lbs = first[t].getLocatedBlocks();
        Set<String> distinct = new HashSet<>();
        for (LocatedBlock lb : lbs) {
          distinct.add(Arrays.toString(lb.getBlockToken().getIdentifier()));
        }
        System.out.printf("target=%d blocks=%d mean_ms=%.3f median_ms=%.3f token_bytes=%d distinct_tokens=%d%n",
            t, n, mean, median, lbs.get(0).getBlockToken().getIdentifier().length, distinct.size());
      }
    }
    // Each NameNode's CPU per call at the largest size, from its /proc counters (clock
    // ticks), one NameNode at a time.
    int big = sizes[sizes.length - 1];
    int cpuCalls = 20 * calls;
    for (int t = 0; t < nns.length; t++) {
      long before = cpuTicks(pids[t]);
      long t0 = System.nanoTime();
      for (int i = 0; i < cpuCalls; i++) {
        nns[t].getBlockLocations("/tokbench/" + big, 0, Long.MAX_VALUE);
      }
      double secs = (System.nanoTime() - t0) / 1e9;
      long ticks = cpuTicks(pids[t]) - before;
      System.out.printf("target=%d cpu blocks=%d calls=%d nn_cpu_us_per_call=%.1f wall_us_per_call=%.1f%n",
          t, big, cpuCalls, ticks * 1e6 / 100.0 / cpuCalls, secs * 1e6 / cpuCalls);
    }
  }

  static long cpuTicks(String pid) throws Exception {
    String stat = new String(Files.readAllBytes(Paths.get("/proc/" + pid + "/stat")));
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return Long.parseLong(f[11]) + Long.parseLong(f[12]); // utime, stime
  }
}
