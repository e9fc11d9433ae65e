// Snapshot costs with Hadoop's own client, against any NameNode (bench/snapshot-vs-hdfs.sh):
//   java SnapshotBench URI DIR create N      allow snapshots on DIR, then time N createSnapshot
//                                            calls (s0, s1, ...); prints each and the median
//   java SnapshotBench URI DIR diff FROM TO  time getSnapshotDiffReport(DIR, FROM, TO) (a
//                                            warm-up call first, then 3), with the entry count
//   java SnapshotBench URI DIR change N BASE K   N changes under DIR to the files of
//                                            `inode-memory --keep` (see below)
import java.net.URI;
import java.util.Arrays;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.SnapshotDiffReport;

public class SnapshotBench {
  public static void main(String[] args) throws Exception {
    DistributedFileSystem fs =
        (DistributedFileSystem) FileSystem.get(URI.create(args[0]), new Configuration());
    Path dir = new Path(args[1]);
    switch (args[2]) {
      case "create": {
        fs.allowSnapshot(dir);
        int n = Integer.parseInt(args[3]);
        // Three untimed calls first: the client JVM's first calls load classes and run
        // interpreted (the first timed call used to take 10-30 ms on both systems).
        for (int i = 0; i < 3; i++) {
          fs.createSnapshot(dir, "warm" + i);
        }
        double[] ms = new double[n];
        for (int i = 0; i < n; i++) {
          long t0 = System.nanoTime();
          fs.createSnapshot(dir, "s" + i);
          ms[i] = (System.nanoTime() - t0) / 1e6;
        }
        double[] sorted = ms.clone();
        Arrays.sort(sorted);
        System.out.printf("op=createSnapshot calls=%d median_ms=%.3f max_ms=%.3f all_ms=%s%n", n,
            sorted[n / 2], sorted[n - 1], Arrays.toString(ms));
        break;
      }
      case "mkdirs": {
        // A journaled call that is not a snapshot, timed the same way: what any
        // mutation's round trip and sync cost on this machine.
        int n = Integer.parseInt(args[3]);
        for (int i = 0; i < 3; i++) {
          fs.mkdirs(new Path(dir, "warm-mkdir" + i));
        }
        double[] ms = new double[n];
        for (int i = 0; i < n; i++) {
          long t0 = System.nanoTime();
          fs.mkdirs(new Path(dir, "mkdir" + i));
          ms[i] = (System.nanoTime() - t0) / 1e6;
        }
        double[] sorted = ms.clone();
        Arrays.sort(sorted);
        System.out.printf("op=mkdirs calls=%d median_ms=%.3f max_ms=%.3f%n", n, sorted[n / 2],
            sorted[n - 1]);
        break;
      }
      case "diff": {
        SnapshotDiffReport r = fs.getSnapshotDiffReport(dir, args[3], args[4]);
        double[] ms = new double[3];
        for (int i = 0; i < 3; i++) {
          long t0 = System.nanoTime();
          r = fs.getSnapshotDiffReport(dir, args[3], args[4]);
          ms[i] = (System.nanoTime() - t0) / 1e6;
        }
        Arrays.sort(ms);
        System.out.printf("op=snapshotDiff entries=%d median_ms=%.1f runs_ms=%s%n",
            r.getDiffList().size(), ms[1], Arrays.toString(ms));
        break;
      }
      case "change": {
        // N changes spread as a workload spreads them, to files that existed at the
        // snapshot (`inode-memory`'s layout: BASE/c<k>/g<i/10000>/f<i> for K clients): one in
        // four a new file, then a chmod, a rename within its directory, a delete.
        int n = Integer.parseInt(args[3]);
        Path base = new Path(args[4]);
        int clients = Integer.parseInt(args[5]);
        long t0 = System.nanoTime();
        for (int j = 0; j < n; j++) {
          int k = j % clients, i = j / clients;
          Path f = new Path(base, "c" + k + "/g" + (i / 10000) + "/f" + i);
          switch (j % 4) {
            case 0: fs.create(new Path(dir, "new/n" + j)).close(); break;
            case 1: fs.setPermission(f, new FsPermission((short) 0600)); break;
            case 2: fs.rename(f, new Path(f.getParent(), "r" + i)); break;
            default: fs.delete(f, false); break;
          }
        }
        System.out.printf("op=change count=%d secs=%.1f%n", n, (System.nanoTime() - t0) / 1e9);
        break;
      }
      default:
        throw new IllegalArgumentException(args[2]);
    }
  }
}
