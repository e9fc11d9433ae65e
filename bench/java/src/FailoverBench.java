// Failover time as an application sees it: through an HA nameservice (hdfs://NS/, the
// client's ConfiguredFailoverProxyProvider from hdfs-site.xml), each round makes sure a
// create works, runs KILL_CMD (which kills the active NameNode with SIGKILL and arranges
// its restart), and times from just before that command to the first create that then
// succeeds. Used by bench/ha-vs-single.sh.
//   java FailoverBench hdfs://NS DIR ROUNDS PAUSE_SECONDS KILL_CMD...
// Prints one line per round ("round N: MS ms") and the median and worst.
import java.net.URI;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

public class FailoverBench {
  public static void main(String[] args) throws Exception {
    URI uri = URI.create(args[0]);
    String dir = args[1];
    int rounds = Integer.parseInt(args[2]);
    long pauseMs = Long.parseLong(args[3]) * 1000L;
    List<String> kill = Arrays.asList(args).subList(4, args.length);
    Configuration conf = new Configuration();
    FileSystem fs = FileSystem.get(uri, conf);
    fs.mkdirs(new Path(dir));
    List<Long> took = new ArrayList<>();
    long n = 0;
    for (int r = 0; r < rounds; r++) {
      Thread.sleep(pauseMs);
      fs.create(new Path(dir + "/before-" + r)).close();
      long t0 = System.nanoTime();
      Process p = new ProcessBuilder(kill).inheritIO().start();
      if (p.waitFor() != 0) {
        throw new RuntimeException("kill command failed in round " + r);
      }
      while (true) {
        try {
          fs.create(new Path(dir + "/after-" + r + "-" + n++)).close();
          break;
        } catch (java.io.IOException e) {
          // The failover proxy gives up after its own retries; the application tries again.
          Thread.sleep(10);
        }
      }
      long ms = (System.nanoTime() - t0) / 1_000_000;
      took.add(ms);
      System.out.println("round " + r + ": " + ms + " ms");
    }
    Collections.sort(took);
    System.out.println("failover median " + took.get(took.size() / 2) + " ms, worst "
        + took.get(took.size() - 1) + " ms over " + rounds + " rounds");
  }
}
