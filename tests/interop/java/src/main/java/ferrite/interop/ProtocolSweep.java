package ferrite.interop;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.CacheFlag;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsAction;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.BatchedDirectoryListing;
import org.apache.hadoop.hdfs.protocol.CacheDirectiveInfo;
import org.apache.hadoop.hdfs.protocol.CachePoolInfo;
import org.apache.hadoop.hdfs.protocol.ClientProtocol;
import org.apache.hadoop.hdfs.protocol.CorruptFileBlocks;
import org.apache.hadoop.hdfs.protocol.ErasureCodingPolicyInfo;
import org.apache.hadoop.hdfs.protocol.HdfsConstants;
import org.apache.hadoop.hdfs.protocol.HdfsPartialListing;
import org.apache.hadoop.hdfs.protocol.HdfsFileStatus;
import org.apache.hadoop.hdfs.protocol.OpenFilesIterator;
import org.apache.hadoop.hdfs.server.protocol.DatanodeStorageReport;
import org.apache.hadoop.security.token.Token;

/**
 * Calls every ClientProtocol method Ferrite serves beyond the everyday ones, through
 * Hadoop's own client proxy, and prints one line per call: "NAME ok SUMMARY" or
 * "NAME error CLASS: MESSAGE" (first line). The summaries leave out what differs between
 * two clusters by nature (ids, times, host names), so two runs compare line by line.
 * Expects /sweep (a directory) and /sweep/f (a file) to exist.
 */
public final class ProtocolSweep {
  interface Call {
    Object run() throws Exception;
  }

  private static void call(String name, Call c) {
    try {
      Object r = c.run();
      System.out.println(name + " ok " + (r == null ? "null" : r));
    } catch (Throwable t) {
      Throwable e = t;
      while (e.getCause() != null && e instanceof java.lang.reflect.UndeclaredThrowableException) {
        e = e.getCause();
      }
      String cls = e instanceof org.apache.hadoop.ipc.RemoteException
          ? ((org.apache.hadoop.ipc.RemoteException) e).getClassName() : e.getClass().getName();
      String msg = String.valueOf(e.getMessage()).split("\n")[0];
      System.out.println(name + " error " + cls + ": " + msg);
    }
  }

  /** Each method of the ClientNamenodeProtocol service, called with an empty request. */
  private static void everyMethod(Configuration conf) throws Exception {
    org.apache.hadoop.ipc.RPC.setProtocolEngine(conf,
        org.apache.hadoop.hdfs.protocolPB.ClientNamenodeProtocolPB.class,
        org.apache.hadoop.ipc.ProtobufRpcEngine2.class);
    java.net.URI uri = FileSystem.getDefaultUri(conf);
    java.net.InetSocketAddress addr = new java.net.InetSocketAddress(uri.getHost(), uri.getPort());
    org.apache.hadoop.hdfs.protocolPB.ClientNamenodeProtocolPB pb = org.apache.hadoop.ipc.RPC.getProxy(
        org.apache.hadoop.hdfs.protocolPB.ClientNamenodeProtocolPB.class,
        org.apache.hadoop.ipc.RPC.getProtocolVersion(
            org.apache.hadoop.hdfs.protocolPB.ClientNamenodeProtocolPB.class), addr, conf);
    for (org.apache.hadoop.thirdparty.protobuf.Descriptors.MethodDescriptor md :
        org.apache.hadoop.hdfs.protocol.proto.ClientNamenodeProtocolProtos.getDescriptor()
            .getServices().get(0).getMethods()) {
      String name = md.getName();
      java.lang.reflect.Method m = null;
      for (java.lang.reflect.Method x : pb.getClass().getMethods()) {
        if (x.getName().equals(name) && x.getParameterCount() == 2) {
          m = x;
        }
      }
      if (m == null) {
        System.out.println("method " + name + " error no client method");
        continue;
      }
      Object req = m.getParameterTypes()[1].getMethod("getDefaultInstance").invoke(null);
      try {
        m.invoke(pb, null, req);
        System.out.println("method " + name + " ok");
      } catch (java.lang.reflect.InvocationTargetException e) {
        Throwable t = e.getCause();
        while (t.getCause() != null) {
          t = t.getCause();
        }
        System.out.println("method " + name + " error " + String.valueOf(t.getMessage()).split("\n")[0]);
      }
    }
  }

  /**
   * inotify: changes made after the stream opens, read back through Hadoop's
   * DFSInotifyEventInputStream, one line per event with what HDFS's events say.
   */
  private static void inotify(Configuration conf) throws Exception {
    org.apache.hadoop.hdfs.client.HdfsAdmin admin =
        new org.apache.hadoop.hdfs.client.HdfsAdmin(FileSystem.getDefaultUri(conf), conf);
    org.apache.hadoop.hdfs.DFSInotifyEventInputStream in = admin.getInotifyEventStream();
    DistributedFileSystem fs = (DistributedFileSystem) FileSystem.get(conf);
    fs.mkdirs(new Path("/ino/d"), new FsPermission((short) 0750));
    fs.create(new Path("/ino/d/f"), (short) 1).close();
    fs.setReplication(new Path("/ino/d/f"), (short) 2);
    fs.setPermission(new Path("/ino/d/f"), new FsPermission((short) 0600));
    fs.setOwner(new Path("/ino/d/f"), "alice", "eng");
    fs.setTimes(new Path("/ino/d/f"), 1000L, 2000L);
    fs.setXAttr(new Path("/ino/d/f"), "user.a", new byte[] {1});
    fs.removeXAttr(new Path("/ino/d/f"), "user.a");
    fs.rename(new Path("/ino/d/f"), new Path("/ino/g"));
    fs.delete(new Path("/ino/d"), true);
    int seen = 0;
    long deadline = System.currentTimeMillis() + 30000;
    while (seen < 12 && System.currentTimeMillis() < deadline) {
      org.apache.hadoop.hdfs.inotify.EventBatch b = in.poll(1, java.util.concurrent.TimeUnit.SECONDS);
      if (b == null) {
        continue;
      }
      for (org.apache.hadoop.hdfs.inotify.Event e : b.getEvents()) {
        seen++;
        System.out.println("event " + describe(e));
      }
    }
  }

  private static String describe(org.apache.hadoop.hdfs.inotify.Event e) {
    if (e instanceof org.apache.hadoop.hdfs.inotify.Event.CreateEvent) {
      org.apache.hadoop.hdfs.inotify.Event.CreateEvent c = (org.apache.hadoop.hdfs.inotify.Event.CreateEvent) e;
      return "CREATE " + c.getiNodeType() + " " + c.getPath() + " " + c.getOwnerName() + " " + c.getPerms()
          + " repl=" + c.getReplication();
    }
    if (e instanceof org.apache.hadoop.hdfs.inotify.Event.CloseEvent) {
      org.apache.hadoop.hdfs.inotify.Event.CloseEvent c = (org.apache.hadoop.hdfs.inotify.Event.CloseEvent) e;
      return "CLOSE " + c.getPath() + " " + c.getFileSize();
    }
    if (e instanceof org.apache.hadoop.hdfs.inotify.Event.RenameEvent) {
      org.apache.hadoop.hdfs.inotify.Event.RenameEvent r = (org.apache.hadoop.hdfs.inotify.Event.RenameEvent) e;
      return "RENAME " + r.getSrcPath() + " " + r.getDstPath();
    }
    if (e instanceof org.apache.hadoop.hdfs.inotify.Event.MetadataUpdateEvent) {
      org.apache.hadoop.hdfs.inotify.Event.MetadataUpdateEvent m = (org.apache.hadoop.hdfs.inotify.Event.MetadataUpdateEvent) e;
      return "METADATA " + m.getMetadataType() + " " + m.getPath() + " repl=" + m.getReplication()
          + " perms=" + m.getPerms() + " owner=" + m.getOwnerName() + " group=" + m.getGroupName()
          + " mtime=" + m.getMtime() + " atime=" + m.getAtime() + " xattrs=" + m.getxAttrs()
          + " removed=" + m.isxAttrsRemoved();
    }
    if (e instanceof org.apache.hadoop.hdfs.inotify.Event.UnlinkEvent) {
      return "UNLINK " + ((org.apache.hadoop.hdfs.inotify.Event.UnlinkEvent) e).getPath();
    }
    return e.getEventType().toString();
  }

  public static void main(String[] argv) throws Exception {
    Configuration conf = new Configuration();
    if (argv.length > 0 && argv[0].equals("--methods")) {
      everyMethod(conf);
      return;
    }
    if (argv.length > 0 && argv[0].equals("--inotify")) {
      inotify(conf);
      return;
    }
    DistributedFileSystem fs = (DistributedFileSystem) FileSystem.get(conf);
    ClientProtocol nn = fs.getClient().getNamenode();

    call("getBatchedListing", () -> {
      BatchedDirectoryListing l = nn.getBatchedListing(new String[] {"/sweep", "/sweep/f", "/nope"},
          HdfsFileStatus.EMPTY_NAME, false);
      List<String> out = new ArrayList<>();
      for (HdfsPartialListing p : l.getListings()) {
        if (p.getException() != null) {
          Throwable x = p.getException();
          String cls = x instanceof org.apache.hadoop.ipc.RemoteException
              ? ((org.apache.hadoop.ipc.RemoteException) x).getClassName() : x.getClass().getName();
          out.add(p.getParentIdx() + ":" + cls + ":" + String.valueOf(x.getMessage()).split("\n")[0]);
        } else {
          for (HdfsFileStatus s : p.getPartialListing()) {
            out.add(p.getParentIdx() + ":" + s.getLocalName() + ":" + s.getLen());
          }
        }
      }
      return out + " more=" + l.hasMore();
    });
    call("getDatanodeStorageReport", () -> {
      DatanodeStorageReport[] r = nn.getDatanodeStorageReport(HdfsConstants.DatanodeReportType.LIVE);
      return r.length;
    });
    call("listCorruptFileBlocks", () -> {
      CorruptFileBlocks c = nn.listCorruptFileBlocks("/", null);
      return Arrays.toString(c.getFiles());
    });
    call("getCurrentEditLogTxid", () -> nn.getCurrentEditLogTxid() > 0);
    call("getEnclosingRoot", () -> nn.getEnclosingRoot("/sweep/f"));
    call("getEnclosingRootMissing", () -> nn.getEnclosingRoot("/nope/x"));
    call("checkAccess", () -> {
      nn.checkAccess("/sweep/f", FsAction.READ);
      return "allowed";
    });
    call("checkAccessMissing", () -> {
      nn.checkAccess("/nope", FsAction.READ);
      return "allowed";
    });
    call("refreshNodes", () -> {
      nn.refreshNodes();
      return "done";
    });
    call("finalizeUpgrade", () -> {
      nn.finalizeUpgrade();
      return "done";
    });
    call("upgradeStatus", () -> nn.upgradeStatus());
    call("rollingUpgradeQuery", () -> nn.rollingUpgrade(HdfsConstants.RollingUpgradeAction.QUERY));
    call("setBalancerBandwidth", () -> {
      nn.setBalancerBandwidth(10L << 20);
      return "done";
    });
    call("metaSave", () -> {
      nn.metaSave("ferrite-sweep-metasave.txt");
      return "done";
    });
    call("createSymlink", () -> {
      nn.createSymlink("/sweep/f", "/sweep/link", FsPermission.getDefault(), false);
      return "done";
    });
    call("getLinkTarget", () -> nn.getLinkTarget("/sweep/f"));
    call("getLinkTargetMissing", () -> nn.getLinkTarget("/nope"));
    call("getDelegationToken", () -> {
      Token<?> t = nn.getDelegationToken(new org.apache.hadoop.io.Text("renewer"));
      return t == null ? "none" : t.getKind();
    });
    call("renewDelegationToken", () -> nn.renewDelegationToken(new Token<>()));
    call("cancelDelegationToken", () -> {
      nn.cancelDelegationToken(new Token<>());
      return "done";
    });
    call("createEncryptionZone", () -> {
      nn.createEncryptionZone("/sweep", "key");
      return "done";
    });
    call("getEZForPath", () -> nn.getEZForPath("/sweep/f"));
    call("getEZForPathMissing", () -> nn.getEZForPath("/nope"));
    call("listEncryptionZones", () -> nn.listEncryptionZones(0).size());
    call("listReencryptionStatus", () -> nn.listReencryptionStatus(0).size());
    call("reencryptEncryptionZone", () -> {
      nn.reencryptEncryptionZone("/sweep", HdfsConstants.ReencryptAction.START);
      return "done";
    });
    call("addCachePool", () -> {
      nn.addCachePool(new CachePoolInfo("pool1"));
      return "done";
    });
    call("modifyCachePool", () -> {
      nn.modifyCachePool(new CachePoolInfo("pool1").setMode(new FsPermission((short) 0700)));
      return "done";
    });
    call("listCachePools", () -> nn.listCachePools("").size());
    call("addCacheDirective", () -> nn.addCacheDirective(
        new CacheDirectiveInfo.Builder().setPath(new Path("/sweep/f")).setPool("pool1").build(),
        EnumSet.noneOf(CacheFlag.class)) > 0);
    call("listCacheDirectives", () -> nn.listCacheDirectives(0,
        new CacheDirectiveInfo.Builder().build()).size());
    call("modifyCacheDirective", () -> {
      nn.modifyCacheDirective(new CacheDirectiveInfo.Builder().setId(1L).setReplication((short) 2).build(),
          EnumSet.noneOf(CacheFlag.class));
      return "done";
    });
    call("removeCacheDirective", () -> {
      nn.removeCacheDirective(1L);
      return "done";
    });
    call("removeCachePool", () -> {
      nn.removeCachePool("pool1");
      return "done";
    });
    call("removeCachePoolMissing", () -> {
      nn.removeCachePool("pool1");
      return "done";
    });
    call("getErasureCodingPolicies", () -> {
      List<String> out = new ArrayList<>();
      for (ErasureCodingPolicyInfo p : nn.getErasureCodingPolicies()) {
        out.add(p.getPolicy().getName() + "=" + p.getState());
      }
      return out;
    });
    call("getErasureCodingCodecs", () -> new java.util.TreeMap<>(nn.getErasureCodingCodecs()));
    call("getErasureCodingPolicy", () -> nn.getErasureCodingPolicy("/sweep/f"));
    call("getErasureCodingPolicyMissing", () -> nn.getErasureCodingPolicy("/nope"));
    call("setErasureCodingPolicy", () -> {
      nn.setErasureCodingPolicy("/sweep", "RS-6-3-1024k");
      return "done";
    });
    call("setErasureCodingPolicyUnknown", () -> {
      nn.setErasureCodingPolicy("/sweep", "NO-SUCH");
      return "done";
    });
    call("unsetErasureCodingPolicy", () -> {
      nn.unsetErasureCodingPolicy("/sweep");
      return "done";
    });
    call("enableErasureCodingPolicy", () -> {
      nn.enableErasureCodingPolicy("XOR-2-1-1024k");
      return "done";
    });
    call("disableErasureCodingPolicy", () -> {
      nn.disableErasureCodingPolicy("XOR-2-1-1024k");
      return "done";
    });
    call("removeErasureCodingPolicy", () -> {
      nn.removeErasureCodingPolicy("RS-6-3-1024k");
      return "done";
    });
    call("addErasureCodingPolicies", () -> nn.addErasureCodingPolicies(
        new org.apache.hadoop.hdfs.protocol.ErasureCodingPolicy[0]).length);
    call("getECTopologyResultForPolicies", () ->
        nn.getECTopologyResultForPolicies("RS-6-3-1024k").isSupported());
    call("satisfyStoragePolicy", () -> {
      nn.satisfyStoragePolicy("/sweep/f");
      return "done";
    });
    call("getEditsFromTxid", () -> nn.getEditsFromTxid(1).getBatches().size() >= 0);
    call("listOpenFiles", () -> {
      org.apache.hadoop.fs.BatchedRemoteIterator.BatchedEntries<?> e = nn.listOpenFiles(0,
          EnumSet.of(OpenFilesIterator.OpenFilesType.ALL_OPEN_FILES), "/");
      return e.size();
    });
  }
}
