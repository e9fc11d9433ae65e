// getContentSummary latency with Hadoop's own client: HDFS walks the subtree under the
// namespace lock on every call; Ferrite answers from its summary. Used by
// bench/summary-vs-hdfs.sh against both.
//   java SummaryBench URI CALLS PATH...   per path: a warm-up call, then CALLS timed calls
import java.net.URI;
import java.util.Arrays;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ContentSummary;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

public class SummaryBench {
  public static void main(String[] args) throws Exception {
    FileSystem fs = FileSystem.get(URI.create(args[0]), new Configuration());
    int calls = Integer.parseInt(args[1]);
    for (int a = 2; a < args.length; a++) {
      Path p = new Path(args[a]);
      ContentSummary first = fs.getContentSummary(p);
      double[] ms = new double[calls];
      for (int i = 0; i < calls; i++) {
        long t0 = System.nanoTime();
        fs.getContentSummary(p);
        ms[i] = (System.nanoTime() - t0) / 1e6;
      }
      Arrays.sort(ms);
      double mean = Arrays.stream(ms).average().orElse(0);
      double median = (ms[(calls - 1) / 2] + ms[calls / 2]) / 2;
      System.out.printf("path=%s files=%d dirs=%d bytes=%d mean_ms=%.3f median_ms=%.3f max_ms=%.3f%n",
          args[a], first.getFileCount(), first.getDirectoryCount(), first.getLength(),
          mean, median, ms[calls - 1]);
    }
  }
}
