package ferrite.interop;

import java.io.PrintStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * A client load through an HA nameservice, for failover tests: THREADS threads, each with a
 * FileSystem of its own, create and write a file (two replicas), rename every other one
 * and delete every third, under /load/j&lt;thread&gt;, until the file STOP exists. Then it
 * prints what it was told was done: "live PATH LENGTH" per file, "gone PATH" per path
 * removed; and "error ..." with exit code 1 if any call threw to the application.
 *
 * <p>Usage: HaLoad URI THREADS STOP
 */
public final class HaLoad {
  private HaLoad() {}

  public static void main(String[] args) throws Exception {
    URI uri = URI.create(args[0]);
    int threads = Integer.parseInt(args[1]);
    java.nio.file.Path stop = Paths.get(args[2]);
    Configuration conf = new Configuration();
    List<Worker> workers = new ArrayList<>();
    for (int i = 0; i < threads; i++) {
      Worker w = new Worker(FileSystem.newInstance(uri, conf), i, stop);
      workers.add(w);
      w.start();
    }
    Map<String, Long> model = new TreeMap<>();
    String error = null;
    for (Worker w : workers) {
      w.join();
      model.putAll(w.model);
      if (w.error != null && error == null) {
        error = w.error;
      }
    }
    PrintStream out = System.out;
    for (Map.Entry<String, Long> e : model.entrySet()) {
      out.println(e.getValue() < 0 ? "gone " + e.getKey() : "live " + e.getKey() + " " + e.getValue());
    }
    if (error != null) {
      out.println("error " + error);
      out.flush();
      System.exit(1);
    }
    out.flush();
    System.exit(0);
  }

  /** One client's loop; -1 in the model marks a path it was told is gone. */
  private static final class Worker extends Thread {
    final FileSystem fs;
    final int id;
    final java.nio.file.Path stop;
    final Map<String, Long> model = new TreeMap<>();
    String error;

    Worker(FileSystem fs, int id, java.nio.file.Path stop) {
      this.fs = fs;
      this.id = id;
      this.stop = stop;
    }

    @Override
    public void run() {
      String dir = "/load/j" + id;
      try {
        fs.mkdirs(new Path(dir));
        for (long n = 0; !Files.exists(stop); n++) {
          step(dir, n);
        }
      } catch (Exception e) {
        error = "client " + id + ": " + e;
      }
    }

    private void step(String dir, long n) throws Exception {
      Path path = new Path(dir + "/f" + n);
      byte[] bytes = new byte[200 + (int) (n % 5) * 700];
      for (int i = 0; i < bytes.length; i++) {
        bytes[i] = (byte) (n * 31 + i + id);
      }
      try (FSDataOutputStream out = fs.create(path, true, 4096, (short) 2, 1 << 20)) {
        out.write(bytes);
      }
      model.put(path.toString(), (long) bytes.length);
      if (n % 2 == 0) {
        Path to = new Path(dir + "/g" + n);
        if (!fs.rename(path, to)) {
          throw new IllegalStateException("rename " + path + " answered false");
        }
        model.put(path.toString(), -1L);
        model.put(to.toString(), (long) bytes.length);
        path = to;
      }
      if (n % 3 == 0) {
        if (!fs.delete(path, false)) {
          throw new IllegalStateException("delete " + path + " answered false");
        }
        model.put(path.toString(), -1L);
      }
    }
  }
}
