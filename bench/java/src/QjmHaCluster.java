// HDFS's own HA on this machine, for the side-by-side HA benchmark (bench/ha-vs-single.sh):
// Hadoop's MiniQJMHACluster in this JVM — three JournalNodes (each syncing its edits to
// disk, a majority acknowledging every batch) and NNS NameNodes, no DataNodes — with the
// first NameNode made active. Prints "ready hdfs://ADDRESS-OF-THE-ACTIVE" once it serves,
// then runs until its standard input closes.
//   java -Dtest.build.data=DIR QjmHaCluster DIR NNS
import java.io.File;
import java.net.InetSocketAddress;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.qjournal.MiniQJMHACluster;

public class QjmHaCluster {
  public static void main(String[] args) throws Exception {
    File base = new File(args[0]);
    int nns = Integer.parseInt(args[1]);
    Configuration conf = new Configuration();
    // The same limits the Ferrite side runs with.
    conf.setLong(DFSConfigKeys.DFS_NAMENODE_MIN_BLOCK_SIZE_KEY, 16);
    conf.setInt(DFSConfigKeys.DFS_NAMENODE_SAFEMODE_EXTENSION_KEY, 0);
    MiniQJMHACluster.Builder b = new MiniQJMHACluster.Builder(conf, base).setNumNameNodes(nns);
    // A test cluster skips fsync by default; the JournalNodes must sync, as Ferrite does.
    b.getDfsBuilder().numDataNodes(0).skipFsyncForTesting(false);
    try (MiniQJMHACluster qjm = b.build()) {
      MiniDFSCluster dfs = qjm.getDfsCluster();
      dfs.waitActive();
      dfs.transitionToActive(0);
      InetSocketAddress a = dfs.getNameNode(0).getNameNodeAddress();
      System.out.println("ready hdfs://127.0.0.1:" + a.getPort());
      System.out.flush();
      while (System.in.read() >= 0) {
        // Runs until the script closes our input.
      }
    }
  }
}
