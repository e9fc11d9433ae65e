package ferrite.interop;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;

/**
 * The write-ahead-log pattern with Hadoop's own client, one role per JVM:
 *
 *   write PATH N SIZE [hsync]  creates PATH, writes N records of SIZE bytes, each followed by
 *                              hflush (or hsync), prints "flushed i" after each, then prints
 *                              "done" and waits to be killed without closing the file.
 *   append PATH N SIZE FIRST   the same, appending to an existing file, numbering from FIRST.
 *   trickle PATH N SIZE MS     creates PATH and writes N records, each followed by hflush
 *                              and a pause of MS milliseconds, printing "flushed i" after
 *                              each; then closes it and prints "closed".
 *   read PATH                  prints "records n" (whole, valid records from the start) and
 *                              "length L" (bytes a new reader sees), then "torn" if bytes
 *                              after the last whole record are not a record's prefix.
 *   recover PATH               recoverLease until it answers true (at most 60 s); prints
 *                              "recovered" and the file's length.
 *   recoverOnce PATH           one recoverLease; prints its answer.
 *
 * A record is SIZE bytes: "rec <i>\n" padded with the record number's low byte, so a reader
 * can check every byte.
 */
public final class WalCheck {
  static byte[] record(int i, int size) {
    byte[] b = new byte[size];
    Arrays.fill(b, (byte) i);
    byte[] head = ("rec " + i + "\n").getBytes(StandardCharsets.UTF_8);
    System.arraycopy(head, 0, b, 0, Math.min(head.length, size));
    return b;
  }

  public static void main(String[] argv) throws Exception {
    Configuration conf = new Configuration();
    FileSystem fs = FileSystem.get(conf);
    Path p = new Path(argv[1]);
    switch (argv[0]) {
      case "write":
      case "append": {
        int n = Integer.parseInt(argv[2]);
        int size = Integer.parseInt(argv[3]);
        boolean append = argv[0].equals("append");
        int first = append ? Integer.parseInt(argv[4]) : 0;
        boolean sync = !append && argv.length > 4 && argv[4].equals("hsync");
        FSDataOutputStream out = append ? fs.append(p) : fs.create(p, true);
        for (int i = first; i < first + n; i++) {
          out.write(record(i, size));
          if (sync) {
            out.hsync();
          } else {
            out.hflush();
          }
          System.out.println("flushed " + i);
          System.out.flush();
        }
        System.out.println("done");
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
        break;
      }
      case "trickle": {
        int n = Integer.parseInt(argv[2]);
        int size = Integer.parseInt(argv[3]);
        long pause = Long.parseLong(argv[4]);
        try (FSDataOutputStream out = fs.create(p, true)) {
          for (int i = 0; i < n; i++) {
            out.write(record(i, size));
            out.hflush();
            System.out.println("flushed " + i);
            System.out.flush();
            Thread.sleep(pause);
          }
        }
        System.out.println("closed");
        System.out.flush();
        break;
      }
      case "read": {
        int size = Integer.parseInt(argv[2]);
        long len = 0;
        int records = 0;
        boolean torn = false;
        try (FSDataInputStream in = fs.open(p)) {
          byte[] all = in.readAllBytes();
          len = all.length;
          for (int i = 0; (long) (i + 1) * size <= all.length; i++) {
            byte[] want = record(i, size);
            if (!Arrays.equals(Arrays.copyOfRange(all, i * size, (i + 1) * size), want)) {
              break;
            }
            records = i + 1;
          }
          int rest = all.length - records * size;
          if (rest > 0) {
            byte[] want = record(records, size);
            torn = !Arrays.equals(
                Arrays.copyOfRange(all, records * size, all.length), Arrays.copyOf(want, rest));
          }
        }
        System.out.println("records " + records);
        System.out.println("length " + len);
        if (torn) {
          System.out.println("torn");
        }
        break;
      }
      case "recoverOnce":
        System.out.println(((DistributedFileSystem) fs).recoverLease(p));
        break;
      case "recover": {
        DistributedFileSystem dfs = (DistributedFileSystem) fs;
        long deadline = System.currentTimeMillis() + 60_000;
        boolean done = dfs.recoverLease(p);
        while (!done && System.currentTimeMillis() < deadline) {
          Thread.sleep(500);
          done = dfs.recoverLease(p);
        }
        System.out.println(done ? "recovered" : "not recovered");
        System.out.println("length " + fs.getFileStatus(p).getLen());
        break;
      }
      default:
        throw new IllegalArgumentException("unknown role " + argv[0]);
    }
    System.exit(0);
  }
}
