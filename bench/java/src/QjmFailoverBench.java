// HDFS's own automatic failover timed on this machine, for bench/ha-vs-single.sh: a
// ZooKeeper server, Hadoop's MiniQJMHACluster (three JournalNodes syncing to disk, two
// NameNodes, no DataNodes) and a DFSZKFailoverController beside each NameNode, all in this
// JVM with HDFS's default timeouts. Each round makes sure a create works through the
// nameservice (ConfiguredFailoverProxyProvider, the client's default retry settings),
// stops the active NameNode (its RPC server gone at once, as after kill -9 of its process,
// while its ZKFC lives on and sees it fail its health check), and times from there to the
// first create that succeeds; the stopped NameNode is then restarted as a standby.
//   java -Dtest.build.data=DIR QjmFailoverBench DIR ROUNDS PAUSE_SECONDS
// Prints one line per round ("round N: MS ms") and the median and worst, as FailoverBench.
import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.qjournal.MiniQJMHACluster;
import org.apache.hadoop.hdfs.server.namenode.NameNode;
import org.apache.hadoop.hdfs.server.namenode.ha.HATestUtil;
import org.apache.hadoop.hdfs.tools.DFSZKFailoverController;
import org.apache.zookeeper.server.ServerCnxnFactory;
import org.apache.zookeeper.server.ZooKeeperServer;

public class QjmFailoverBench {
  public static void main(String[] args) {
    int code = 0;
    try {
      run(args);
    } catch (Throwable e) {
      e.printStackTrace();
      code = 1;
    }
    // The ZKFC and cluster threads would keep the JVM alive.
    Runtime.getRuntime().halt(code);
  }

  private static void run(String[] args) throws Exception {
    File base = new File(args[0]);
    int rounds = Integer.parseInt(args[1]);
    long pauseMs = Long.parseLong(args[2]) * 1000L;

    File zkDir = new File(base, "zk");
    zkDir.mkdirs();
    ServerCnxnFactory zk = ServerCnxnFactory.createFactory(new InetSocketAddress("127.0.0.1", 0), 100);
    zk.startup(new ZooKeeperServer(zkDir, zkDir, 2000));

    Configuration conf = new Configuration();
    conf.setLong(DFSConfigKeys.DFS_NAMENODE_MIN_BLOCK_SIZE_KEY, 16);
    conf.setInt(DFSConfigKeys.DFS_NAMENODE_SAFEMODE_EXTENSION_KEY, 0);
    conf.set("ha.zookeeper.quorum", "127.0.0.1:" + zk.getLocalPort());
    conf.setBoolean(DFSConfigKeys.DFS_HA_AUTO_FAILOVER_ENABLED_KEY, true);
    conf.set("dfs.ha.fencing.methods", "shell(/bin/true)");
    MiniQJMHACluster.Builder b = new MiniQJMHACluster.Builder(conf, new File(base, "qjm"));
    b.getDfsBuilder().numDataNodes(0).skipFsyncForTesting(false);
    MiniQJMHACluster qjm = b.build();
    MiniDFSCluster dfs = qjm.getDfsCluster();
    dfs.waitActive();

    List<DFSZKFailoverController> zkfcs = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      Configuration c = new Configuration(dfs.getConfiguration(i));
      c.set(DFSConfigKeys.DFS_NAMESERVICE_ID, MiniQJMHACluster.NAMESERVICE);
      c.set(DFSConfigKeys.DFS_HA_NAMENODE_ID_KEY, "nn" + i);
      c.setInt(DFSConfigKeys.DFS_HA_ZKFC_PORT_KEY, freePort());
      if (i == 0 && DFSZKFailoverController.create(c).run(new String[] {"-formatZK", "-force"}) != 0) {
        throw new IllegalStateException("could not format ZooKeeper for the ZKFCs");
      }
      DFSZKFailoverController zkfc = DFSZKFailoverController.create(c);
      zkfcs.add(zkfc);
      Thread t = new Thread(() -> {
        try {
          zkfc.run(new String[0]);
        } catch (Exception e) {
          e.printStackTrace();
        }
      }, "zkfc-" + i);
      t.setDaemon(true);
      t.start();
    }
    activeOf(dfs);

    Configuration client = new Configuration(conf);
    // MiniDFSCluster sets the replication to its DataNode count, none here.
    client.setInt(DFSConfigKeys.DFS_REPLICATION_KEY, 1);
    FileSystem fs = HATestUtil.configureFailoverFs(dfs, client);
    fs.mkdirs(new Path("/failover"));
    List<Long> took = new ArrayList<>();
    long n = 0;
    for (int r = 0; r < rounds; r++) {
      Thread.sleep(pauseMs);
      fs.create(new Path("/failover/before-" + r)).close();
      int active = activeOf(dfs);
      long t0 = System.nanoTime();
      dfs.shutdownNameNode(active);
      while (true) {
        try {
          fs.create(new Path("/failover/after-" + r + "-" + n++)).close();
          break;
        } catch (IOException e) {
          // The failover proxy gives up after its own retries; the application tries again.
          Thread.sleep(10);
        }
      }
      long ms = (System.nanoTime() - t0) / 1_000_000;
      took.add(ms);
      System.out.println("round " + r + ": " + ms + " ms");
      System.out.flush();
      dfs.restartNameNode(active, false);
    }
    Collections.sort(took);
    System.out.println("failover median " + took.get(took.size() / 2) + " ms, worst "
        + took.get(took.size() - 1) + " ms over " + rounds + " rounds");
    System.out.flush();
  }

  /** The index of the active NameNode, once one of the ZKFCs has made one active. */
  private static int activeOf(MiniDFSCluster dfs) throws InterruptedException {
    for (int tries = 0; tries < 6000; tries++) {
      for (int i = 0; i < 2; i++) {
        // Not isNameNodeUp: without DataNodes it always says no.
        NameNode nn = dfs.getNameNode(i);
        if (nn != null && nn.isActiveState()) {
          return i;
        }
      }
      Thread.sleep(10);
    }
    throw new IllegalStateException("no NameNode became active in 60 s");
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }
}
