// HDFS's side of the creates-under-quotas-and-ACLs benchmark (issue 44), in process as
// NNThroughputBenchmark runs: a NameNode inside this JVM, called through its
// NamenodeProtocols without RPC, on a name directory the script formatted. The workload is
// `ferrite bench namenode --inproc --op guarded-create`'s: THREADS clients, each creating
// its share of COUNT files /nnbench/create/t<k>/d<i/256>/e<i/4>/f<i> (parents created as
// needed) as the ordinary user zz-bench, under 5 ancestors (/, /nnbench, /nnbench/create,
// t<k>, d<n>) that, when guarded, each carry a namespace and a space quota and an ACL of 10
// named users (zz-bench last, so every check reads them all), and otherwise plain 0777.
//
//   java GuardedCreateBench THREADS COUNT guarded|plain
//   java GuardedCreateBench memory FILES none|acl|xattr
//
// The memory mode creates FILES files (as the superuser, under /m/d<i/1000>) and prints the
// heap in use after a full GC: with `acl` each file inherits a default ACL of 3 named users
// from /m, with `xattr` each gets one 8-byte user xattr; `none` is the baseline.
import java.security.PrivilegedExceptionAction;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.crypto.CryptoProtocolVersion;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.XAttrSetFlag;
import org.apache.hadoop.fs.permission.AclEntry;
import org.apache.hadoop.fs.permission.AclEntryScope;
import org.apache.hadoop.fs.permission.AclEntryType;
import org.apache.hadoop.fs.permission.FsAction;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.server.namenode.NameNode;
import org.apache.hadoop.hdfs.server.protocol.NamenodeProtocols;
import org.apache.hadoop.io.EnumSetWritable;
import org.apache.hadoop.security.UserGroupInformation;

public class GuardedCreateBench {
  static final String BASE = "/nnbench";
  static final String USER = "zz-bench";

  public static void main(String[] args) throws Exception {
    Configuration conf = new HdfsConfiguration();
    NameNode nn = NameNode.createNameNode(new String[0], conf);
    NamenodeProtocols p = nn.getRpcServer();
    try {
      if (args[0].equals("memory")) {
        memory(p, Integer.parseInt(args[1]), args[2]);
      } else {
        creates(p, Integer.parseInt(args[0]), Integer.parseInt(args[1]), args[2].equals("guarded"));
      }
    } finally {
      nn.stop();
    }
  }

  static AclEntry named(String user, FsAction a, AclEntryScope scope) {
    return new AclEntry.Builder().setScope(scope).setType(AclEntryType.USER).setName(user)
        .setPermission(a).build();
  }

  static void creates(NamenodeProtocols p, int threads, int count, boolean guarded) throws Exception {
    int per = (count + threads - 1) / threads;
    List<String> dirs = new ArrayList<>();
    dirs.add("/");
    dirs.add(BASE);
    dirs.add(BASE + "/create");
    for (int k = 0; k < threads; k++) {
      String t = BASE + "/create/t" + k;
      dirs.add(t);
      for (int n = 0; n <= per / 256; n++) dirs.add(t + "/d" + n);
    }
    List<AclEntry> spec = new ArrayList<>();
    for (int i = 0; i < 9; i++) spec.add(named("u" + i, FsAction.READ_EXECUTE, AclEntryScope.ACCESS));
    spec.add(named(USER, FsAction.ALL, AclEntryScope.ACCESS));
    for (String d : dirs) {
      p.mkdirs(d, new FsPermission((short) 0755), true);
      if (guarded) {
        p.setQuota(d, Long.MAX_VALUE / 2, Long.MAX_VALUE / 2, null);
        p.modifyAclEntries(d, spec);
      } else {
        p.setPermission(d, new FsPermission((short) 0777));
      }
    }
    UserGroupInformation ugi = UserGroupInformation.createRemoteUser(USER);
    CountDownLatch start = new CountDownLatch(1);
    AtomicReference<Throwable> failed = new AtomicReference<>();
    List<Thread> ts = new ArrayList<>();
    for (int k = 0; k < threads; k++) {
      final int client = k;
      Thread t = new Thread(() -> {
        try {
          ugi.doAs((PrivilegedExceptionAction<Void>) () -> {
            start.await();
            String name = "nnbench-client-" + client;
            for (int i = 0; i < per; i++) {
              String f = BASE + "/create/t" + client + "/d" + (i / 256) + "/e" + (i / 4) + "/f" + i;
              p.create(f, FsPermission.getFileDefault(), name,
                  new EnumSetWritable<>(EnumSet.of(CreateFlag.CREATE, CreateFlag.OVERWRITE)), true,
                  (short) 3, 128L << 20, CryptoProtocolVersion.supported(), null, null);
            }
            return null;
          });
        } catch (Throwable e) {
          failed.compareAndSet(null, e);
        }
      });
      t.start();
      ts.add(t);
    }
    long t0 = System.nanoTime();
    start.countDown();
    for (Thread t : ts) t.join();
    double secs = (System.nanoTime() - t0) / 1e9;
    if (failed.get() != null) throw new RuntimeException(failed.get());
    long ops = (long) per * threads;
    System.out.printf("mode=%s ops=%d secs=%.3f ops_per_s=%.0f%n", guarded ? "guarded" : "plain",
        ops, secs, ops / secs);
  }

  static long heapAfterGc() throws InterruptedException {
    Runtime rt = Runtime.getRuntime();
    long best = Long.MAX_VALUE;
    for (int i = 0; i < 5; i++) {
      System.gc();
      Thread.sleep(200);
      best = Math.min(best, rt.totalMemory() - rt.freeMemory());
    }
    return best;
  }

  static void memory(NamenodeProtocols p, int files, String mode) throws Exception {
    p.mkdirs("/m", new FsPermission((short) 0755), true);
    if (mode.equals("acl")) {
      List<AclEntry> def = new ArrayList<>();
      for (int i = 0; i < 3; i++) def.add(named("u" + i, FsAction.READ_EXECUTE, AclEntryScope.DEFAULT));
      p.modifyAclEntries("/m", def);
    }
    for (int d = 0; d <= files / 1000; d++) p.mkdirs("/m/d" + d, new FsPermission((short) 0755), true);
    long before = heapAfterGc();
    byte[] value = new byte[8];
    for (int i = 0; i < files; i++) {
      String f = "/m/d" + (i / 1000) + "/f" + i;
      long id = p.create(f, FsPermission.getFileDefault(), "mem-client",
          new EnumSetWritable<>(EnumSet.of(CreateFlag.CREATE)), true, (short) 3, 128L << 20,
          CryptoProtocolVersion.supported(), null, null).getFileId();
      p.complete(f, "mem-client", null, id);
      if (mode.equals("xattr")) {
        p.setXAttr(f, org.apache.hadoop.hdfs.XAttrHelper.buildXAttr("user.a", value),
            EnumSet.of(XAttrSetFlag.CREATE));
      }
    }
    long after = heapAfterGc();
    System.out.printf("mode=%s files=%d heap_bytes_per_file=%.1f%n", mode, files,
        (after - before) / (double) files);
  }
}
