// One client writing then reading a file sequentially through Hadoop's FileSystem API,
// timed separately; used by bench/datapath-vs-hdfs.sh against Ferrite and Apache HDFS.
//   java DataPathBench URI PATH MIB REPLICATION
import java.net.URI;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

public class DataPathBench {
  public static void main(String[] args) throws Exception {
    URI uri = URI.create(args[0]);
    Path path = new Path(args[1]);
    int mib = Integer.parseInt(args[2]);
    short repl = Short.parseShort(args[3]);
    FileSystem fs = FileSystem.get(uri, new Configuration());
    byte[] buf = new byte[1 << 20];
    new Random(1).nextBytes(buf);
    long t0 = System.nanoTime();
    try (FSDataOutputStream out = fs.create(path, true, 1 << 16, repl, 128L << 20)) {
      for (int i = 0; i < mib; i++) {
        out.write(buf);
      }
    }
    long t1 = System.nanoTime();
    long total = 0;
    try (FSDataInputStream in = fs.open(path)) {
      int n;
      while ((n = in.read(buf)) > 0) {
        total += n;
      }
    }
    long t2 = System.nanoTime();
    if (total != (long) mib << 20) {
      throw new IllegalStateException("read " + total + " bytes, wrote " + ((long) mib << 20));
    }
    double mb = (double) total / 1e6;
    System.out.printf("write_MBps=%.1f read_MBps=%.1f%n", mb / ((t1 - t0) / 1e9), mb / ((t2 - t1) / 1e9));
    fs.delete(path, false);
  }
}
