// DataNode read-server workloads with Hadoop's own client, for bench/readserver-vs-hdfs.sh
// (HDFS-918's cases: many concurrent random preads, many slow readers).
//   java ReadBench URI write PATH MB            a file of MB MiB, replication 1
//   java ReadBench URI stream PATH REPS         sequential reads of the whole file, MB/s each
//   java ReadBench URI pread PATH THREADS SECS KB
//                                               THREADS clients, KB-sized preads at random
//                                               offsets for SECS: ops/s, p50, p99 (ms)
//   java ReadBench URI slow PATH THREADS SECS   THREADS readers each reading 4 KiB then
//                                               sleeping 500 ms, for SECS
//   java ReadBench - loopback MB                one TCP stream over loopback: MB/s
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

public class ReadBench {
  public static void main(String[] a) throws Exception {
    if (a[1].equals("loopback")) {
      loopback(Long.parseLong(a[2]));
      return;
    }
    FileSystem fs = FileSystem.get(URI.create(a[0]), new Configuration());
    Path p = new Path(a[2]);
    switch (a[1]) {
      case "write": {
        byte[] buf = new byte[1 << 20];
        ThreadLocalRandom.current().nextBytes(buf);
        try (FSDataOutputStream out = fs.create(p, true, 1 << 16, (short) 1, 128L << 20)) {
          for (long i = 0; i < Long.parseLong(a[3]); i++) {
            out.write(buf);
          }
        }
        break;
      }
      case "stream": {
        byte[] buf = new byte[1 << 20];
        for (int r = 0; r < Integer.parseInt(a[3]); r++) {
          long t0 = System.nanoTime(), n = 0;
          try (FSDataInputStream in = fs.open(p)) {
            int k;
            while ((k = in.read(buf)) > 0) {
              n += k;
            }
          }
          double s = (System.nanoTime() - t0) / 1e9;
          System.out.printf("stream rep=%d bytes=%d mib_per_s=%.1f%n", r, n, n / s / (1 << 20));
        }
        break;
      }
      case "pread":
        pread(fs, p, Integer.parseInt(a[3]), Integer.parseInt(a[4]), Integer.parseInt(a[5]) << 10);
        break;
      case "slow":
        slow(fs, p, Integer.parseInt(a[3]), Integer.parseInt(a[4]));
        break;
      default:
        throw new IllegalArgumentException(a[1]);
    }
  }

  static void pread(FileSystem fs, Path p, int threads, int secs, int size) throws Exception {
    long len = fs.getFileStatus(p).getLen();
    long start = System.nanoTime();
    long deadline = start + secs * 1_000_000_000L;
    List<long[]> lat = new ArrayList<>();
    AtomicLong ops = new AtomicLong();
    Thread[] ts = new Thread[threads];
    for (int t = 0; t < threads; t++) {
      long[] mine = new long[1 << 17];
      lat.add(mine);
      ts[t] = new Thread(() -> {
        byte[] buf = new byte[size];
        int n = 0;
        try (FSDataInputStream in = fs.open(p)) {
          while (System.nanoTime() < deadline && n < mine.length) {
            long off = ThreadLocalRandom.current().nextLong(len - size);
            long t0 = System.nanoTime();
            in.readFully(off, buf, 0, size);
            mine[n++] = System.nanoTime() - t0;
          }
        } catch (IOException e) {
          throw new RuntimeException(e);
        }
        mine[mine.length - 1] = n; // count kept in the last slot
        ops.addAndGet(n);
      });
      ts[t].start();
    }
    for (Thread t : ts) {
      t.join();
    }
    double s = (System.nanoTime() - start) / 1e9;
    long total = ops.get();
    long[] all = new long[(int) total];
    int k = 0;
    for (long[] m : lat) {
      int n = (int) m[m.length - 1];
      System.arraycopy(m, 0, all, k, n);
      k += n;
    }
    Arrays.sort(all);
    System.out.printf("pread threads=%d size=%d ops=%d ops_per_s=%.0f p50_ms=%.3f p99_ms=%.3f%n",
        threads, size, total, total / s, all[all.length / 2] / 1e6, all[(int) (all.length * 0.99)] / 1e6);
  }

  static void slow(FileSystem fs, Path p, int threads, int secs) throws Exception {
    long len = fs.getFileStatus(p).getLen();
    long deadline = System.nanoTime() + secs * 1_000_000_000L;
    AtomicLong reads = new AtomicLong();
    AtomicLong failures = new AtomicLong();
    Thread[] ts = new Thread[threads];
    for (int t = 0; t < threads; t++) {
      ts[t] = new Thread(() -> {
        byte[] buf = new byte[4096];
        try (FSDataInputStream in = fs.open(p)) {
          in.seek(ThreadLocalRandom.current().nextLong(len / 2));
          while (System.nanoTime() < deadline) {
            in.readFully(buf);
            reads.incrementAndGet();
            Thread.sleep(500);
          }
        } catch (Exception e) {
          failures.incrementAndGet();
        }
      });
      ts[t].start();
    }
    for (Thread t : ts) {
      t.join();
    }
    System.out.printf("slow threads=%d secs=%d reads=%d failures=%d%n", threads, secs, reads.get(), failures.get());
  }

  static void loopback(long mb) throws Exception {
    ServerSocketChannel server = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
    int port = ((InetSocketAddress) server.getLocalAddress()).getPort();
    Thread sink = new Thread(() -> {
      try (SocketChannel c = server.accept()) {
        ByteBuffer b = ByteBuffer.allocateDirect(1 << 20);
        while (c.read(b) >= 0) {
          b.clear();
        }
      } catch (IOException e) {
        throw new RuntimeException(e);
      }
    });
    sink.start();
    ByteBuffer b = ByteBuffer.allocateDirect(1 << 20);
    long t0 = System.nanoTime();
    try (SocketChannel c = SocketChannel.open(new InetSocketAddress("127.0.0.1", port))) {
      for (long i = 0; i < mb; i++) {
        b.clear();
        while (b.hasRemaining()) {
          c.write(b);
        }
      }
    }
    sink.join();
    double s = (System.nanoTime() - t0) / 1e9;
    System.out.printf("loopback mib=%d mib_per_s=%.1f%n", mb, mb / s);
  }
}
