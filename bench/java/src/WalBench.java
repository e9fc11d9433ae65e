// The write-ahead-log workload: W writers, each appending RECORD-byte records to its own
// file and calling hflush (or hsync) after each, as HBase's WAL and Kafka Connect's HDFS
// sink do. Used by bench/wal-vs-hdfs.sh against Ferrite and Apache HDFS.
//   java WalBench URI DIR WRITERS RECORDS_PER_WRITER RECORD_BYTES hflush|hsync SECONDS
// Each writer stops after its records or SECONDS, whichever comes first. Prints flushes/s
// over the timed phase (all writers open their files first) and the p50/p99 latency of one
// record's write + flush, in microseconds.
import java.net.URI;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

public class WalBench {
  public static void main(String[] args) throws Exception {
    URI uri = URI.create(args[0]);
    String dir = args[1];
    int writers = Integer.parseInt(args[2]);
    int records = Integer.parseInt(args[3]);
    int size = Integer.parseInt(args[4]);
    boolean sync = args[5].equals("hsync");
    long deadline = Long.parseLong(args[6]) * 1_000_000_000L;
    FileSystem fs = FileSystem.get(uri, new Configuration());
    byte[] rec = new byte[size];
    Arrays.fill(rec, (byte) 'w');
    long[][] lat = new long[writers][];
    int[] done = new int[writers];
    CyclicBarrier start = new CyclicBarrier(writers + 1);
    AtomicLong failures = new AtomicLong();
    List<Thread> threads = new ArrayList<>();
    for (int w = 0; w < writers; w++) {
      final int me = w;
      Thread t = new Thread(() -> {
        long[] mine = new long[records];
        try (FSDataOutputStream out = fs.create(new Path(dir + "/wal-" + me), true)) {
          start.await();
          long t0 = System.nanoTime();
          int i = 0;
          for (; i < records && System.nanoTime() - t0 < deadline; i++) {
            long a = System.nanoTime();
            out.write(rec);
            if (sync) {
              out.hsync();
            } else {
              out.hflush();
            }
            mine[i] = System.nanoTime() - a;
          }
          done[me] = i;
        } catch (Exception e) {
          failures.incrementAndGet();
          e.printStackTrace();
        }
        lat[me] = mine;
      });
      t.start();
      threads.add(t);
    }
    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();
    start.await();
    long t0 = System.nanoTime();
    long cpu0 = os.getProcessCpuTime();
    for (Thread t : threads) {
      t.join();
    }
    // Files are closed inside the timed phase; their close is one call per writer.
    double secs = (System.nanoTime() - t0) / 1e9;
    // The client's own CPU: on two shared cores it bounds what any server can reach.
    double clientCpuUs = (os.getProcessCpuTime() - cpu0) / 1e3;
    int total = Arrays.stream(done).sum();
    long[] all = new long[total];
    int k = 0;
    for (int w = 0; w < writers; w++) {
      if (lat[w] != null) {
        System.arraycopy(lat[w], 0, all, k, done[w]);
        k += done[w];
      }
    }
    Arrays.sort(all);
    System.out.printf("flushes=%d secs=%.2f flushes_per_s=%.0f p50_us=%.0f p99_us=%.0f client_cpu_us=%.1f failures=%d%n",
        total, secs, total / secs, all[total / 2] / 1e3, all[(int) (total * 0.99)] / 1e3,
        clientCpuUs / Math.max(total, 1), failures.get());
    fs.delete(new Path(dir), true);
  }
}
