package ferrite.interop;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FsShell;
import org.apache.hadoop.hdfs.tools.DFSAdmin;
import org.apache.hadoop.hdfs.tools.StoragePolicyAdmin;
import org.apache.hadoop.hdfs.tools.DebugAdmin;
import org.apache.hadoop.util.ToolRunner;

/**
 * Runs many FsShell commands in one JVM, so the interop suite does not pay a JVM start per
 * command. Reads one command per line on stdin (arguments separated by a TAB) and prints, for
 * each one, a block framed by marker lines:
 *
 *   ==BEGIN==
 *   ...stdout of the command...
 *   ==STDERR==
 *   ...stderr of the command...
 *   ==EXIT n==
 *
 * Each command gets a fresh FsShell (as `hdfs dfs` would), sharing one Configuration. A line
 * whose first argument is {@code dfsadmin} runs the rest through DFSAdmin instead (as
 * `hdfs dfsadmin` would), and one whose first argument is {@code debug} through DebugAdmin
 * (`hdfs debug`), and {@code storagepolicies} through StoragePolicyAdmin; {@code datanodes}
 * prints each live DataNode's transfer and IPC addresses.
 */
public final class ShellBatch {
  public static void main(String[] argv) throws Exception {
    Configuration conf = new Configuration();
    PrintStream realOut = System.out;
    PrintStream realErr = System.err;
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      if (line.isEmpty()) {
        continue;
      }
      String[] args = line.split("\t");
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      ByteArrayOutputStream err = new ByteArrayOutputStream();
      int rc;
      System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
      System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
      try {
        if (args[0].equals("dfsadmin")) {
          rc = ToolRunner.run(new DFSAdmin(conf), Arrays.copyOfRange(args, 1, args.length));
        } else if (args[0].equals("haadmin")) {
          rc = ToolRunner.run(conf, new org.apache.hadoop.hdfs.tools.DFSHAAdmin(),
              Arrays.copyOfRange(args, 1, args.length));
        } else if (args[0].equals("debug")) {
          rc = new DebugAdmin(conf).run(Arrays.copyOfRange(args, 1, args.length));
        } else if (args[0].equals("storagepolicies")) {
          rc = ToolRunner.run(new StoragePolicyAdmin(conf), Arrays.copyOfRange(args, 1, args.length));
        } else if (args[0].equals("lsSnapshottableDir")) {
          rc = ToolRunner.run(conf, new org.apache.hadoop.hdfs.tools.snapshot.LsSnapshottableDir(),
              Arrays.copyOfRange(args, 1, args.length));
        } else if (args[0].equals("lsSnapshot")) {
          rc = ToolRunner.run(conf, new org.apache.hadoop.hdfs.tools.snapshot.LsSnapshot(),
              Arrays.copyOfRange(args, 1, args.length));
        } else if (args[0].equals("datanodes")) {
          // Each live DataNode's transfer and IPC addresses, for commands and files that
          // name one.
          org.apache.hadoop.hdfs.DistributedFileSystem dfs =
              (org.apache.hadoop.hdfs.DistributedFileSystem) org.apache.hadoop.fs.FileSystem.get(conf);
          for (org.apache.hadoop.hdfs.protocol.DatanodeInfo d : dfs.getDataNodeStats()) {
            System.out.println(d.getXferAddr() + " " + d.getIpcAddr(false));
          }
          rc = 0;
        } else if (args[0].equals("snapshotDiff")) {
          rc = ToolRunner.run(conf, new org.apache.hadoop.hdfs.tools.snapshot.SnapshotDiff(),
              Arrays.copyOfRange(args, 1, args.length));
        } else {
          rc = ToolRunner.run(new FsShell(conf), args);
        }
      } catch (Throwable t) {
        t.printStackTrace(System.err);
        rc = 99;
      } finally {
        System.out.flush();
        System.err.flush();
        System.setOut(realOut);
        System.setErr(realErr);
      }
      realOut.println("==BEGIN==");
      realOut.print(out.toString(StandardCharsets.UTF_8));
      realOut.println("==STDERR==");
      realOut.print(err.toString(StandardCharsets.UTF_8));
      realOut.println("==EXIT " + rc + "==");
      realOut.flush();
    }
  }
}
