package ferrite.interop;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSClient;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.ClientProtocol;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;

/**
 * What a writer's calls answer once its file is no longer its own: the file closed by lease
 * recovery (and moved away), deleted, renamed over, or deleted and created again under its
 * name by another client. Writer A creates /lease/CASE, writes and hflushes 100 bytes, and
 * stops its stream without closing the file (a frozen writer); client B does CASE; then A
 * makes each call its client makes on a file it writes (addBlock, getAdditionalDatanode,
 * updateBlockForPipeline, updatePipeline, fsync, abandonBlock, complete), straight to the
 * NameNode with its own name, file id and block. Prints, per call, "CASE CALL: ok ANSWER" or
 * "CASE CALL: error CLASS: MESSAGE" with A's and B's names as A and B, then the file's state.
 */
public final class LeaseCheck {
  static final String[] CASES = {"recovered", "recovered-moved", "deleted", "renamed-over", "recreated"};

  public static void main(String[] argv) throws Exception {
    Configuration conf = new Configuration();
    for (String c : argv.length > 0 ? argv : CASES) {
      run(conf, c);
    }
    System.exit(0);
  }

  static void run(Configuration conf, String c) throws Exception {
    DistributedFileSystem a = (DistributedFileSystem) FileSystem.newInstance(conf);
    DistributedFileSystem b = (DistributedFileSystem) FileSystem.newInstance(conf);
    Path p = new Path("/lease/" + c);
    FSDataOutputStream out = a.create(p, true);
    out.write(new byte[100]);
    out.hflush();
    DFSClient ca = a.getClient();
    String holder = ca.getClientName();
    String src = p.toUri().getPath();
    long fileId = ca.getFileInfo(src).getFileId();
    LocatedBlock last = ca.getLocatedBlocks(src, 0).getLastLocatedBlock();
    ExtendedBlock blk = new ExtendedBlock(last.getBlock());
    blk.setNumBytes(100);
    DatanodeInfo[] locs = last.getLocations();
    String[] sids = last.getStorageIDs();
    // A frozen writer: its stream stops without a word to the NameNode.
    ca.closeOutputStreams(true);
    FSDataOutputStream other = null;
    switch (c) {
      case "recovered":
      case "recovered-moved":
        long deadline = System.currentTimeMillis() + 90_000;
        while (!b.recoverLease(p)) {
          if (System.currentTimeMillis() > deadline) {
            throw new IllegalStateException("lease recovery of " + p + " did not finish");
          }
          Thread.sleep(500);
        }
        if (c.equals("recovered-moved")) {
          b.rename(p, new Path(src + ".moved"));
        }
        break;
      case "deleted":
        b.delete(p, false);
        break;
      case "renamed-over":
        Path q = new Path(src + ".new");
        b.create(q, true).close();
        b.rename(q, p, Options.Rename.OVERWRITE);
        break;
      case "recreated":
        b.delete(p, false);
        other = b.create(p, false);
        other.write(new byte[7]);
        other.hflush();
        break;
      default:
        throw new IllegalArgumentException(c);
    }
    String bName = b.getClient().getClientName();
    ClientProtocol nn = ca.getNamenode();
    ExtendedBlock next = new ExtendedBlock(blk);
    next.setGenerationStamp(blk.getGenerationStamp() + 1);
    List<String[]> names = new ArrayList<>();
    List<Callable<Object>> calls = new ArrayList<>();
    for (long id : c.equals("recreated") ? new long[] {fileId, 0} : new long[] {fileId}) {
      String tag = id == 0 ? " (no file id)" : "";
      add(names, calls, "addBlock" + tag, () -> nn.addBlock(src, holder, blk, null, id, null, null).getBlock().getBlockPoolId() != null);
      add(names, calls, "getAdditionalDatanode" + tag, () -> nn.getAdditionalDatanode(src, id, blk, locs, sids, new DatanodeInfo[0], 1, holder).getLocations().length);
      add(names, calls, "fsync" + tag, () -> { nn.fsync(src, id, holder, 100); return "done"; });
      add(names, calls, "abandonBlock" + tag, () -> { nn.abandonBlock(blk, id, src, holder); return "done"; });
      add(names, calls, "complete" + tag, () -> nn.complete(src, holder, blk, id));
    }
    add(names, calls, "updateBlockForPipeline", () -> nn.updateBlockForPipeline(blk, holder).getBlock().getGenerationStamp() > blk.getGenerationStamp());
    add(names, calls, "updatePipeline", () -> { nn.updatePipeline(holder, blk, next, locs, sids); return "done"; });
    for (int i = 0; i < calls.size(); i++) {
      String answer;
      try {
        answer = "ok " + calls.get(i).call();
      } catch (Exception e) {
        Throwable t = e;
        if (t instanceof org.apache.hadoop.ipc.RemoteException) {
          t = ((org.apache.hadoop.ipc.RemoteException) t).unwrapRemoteException();
        }
        answer = "error " + t.getClass().getName() + ": " + String.valueOf(t.getMessage()).split("\n")[0];
      }
      answer = answer.replace(holder, "A").replace(bName, "B");
      System.out.println(c + " " + names.get(i)[0] + ": " + answer);
    }
    if (other != null) {
      other.close();
    }
    Path now = c.equals("recovered-moved") ? new Path(src + ".moved") : p;
    if (b.exists(now)) {
      System.out.println(c + " state: length " + b.getFileStatus(now).getLen() + " closed " + b.isFileClosed(now));
    } else {
      System.out.println(c + " state: gone");
    }
    b.close();
    a.close();
  }

  static void add(List<String[]> names, List<Callable<Object>> calls, String name, Callable<Object> call) {
    names.add(new String[] {name});
    calls.add(call);
  }
}
