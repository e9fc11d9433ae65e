// What Hadoop's client spends decoding one getBlockLocations reply, without sockets or a
// server: GetBlockLocationsResponseProto.parseFrom + PBHelperClient.convert, as
// ClientNamenodeProtocolTranslatorPB does with every reply. Two replies of BLOCKS blocks,
// one replica each (bench/tokens-vs-hdfs.sh's files), tokens on:
//   ferrite  the fields and sizes Ferrite's NameNode sends (located_reply.rs);
//   minimal  only what the protocol requires, with one-byte strings: the cheapest reply any
//            NameNode could send this client.
// It prints microseconds per reply (median of ROUNDS rounds of ITERS decodes), so the
// client's share of a round trip can be set against the round trip itself.
//   java DecodeProbe [BLOCKS=1000] [ITERS=500] [ROUNDS=9]
import java.util.Arrays;
import org.apache.hadoop.hdfs.protocol.LocatedBlocks;
import org.apache.hadoop.hdfs.protocol.proto.ClientNamenodeProtocolProtos.GetBlockLocationsResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.HdfsProtos.DatanodeIDProto;
import org.apache.hadoop.hdfs.protocol.proto.HdfsProtos.DatanodeInfoProto;
import org.apache.hadoop.hdfs.protocol.proto.HdfsProtos.ExtendedBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.HdfsProtos.LocatedBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.HdfsProtos.LocatedBlocksProto;
import org.apache.hadoop.hdfs.protocol.proto.HdfsProtos.StorageTypeProto;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.security.proto.SecurityProtos.TokenProto;
import org.apache.hadoop.thirdparty.protobuf.ByteString;

public class DecodeProbe {
  public static void main(String[] a) throws Exception {
    int blocks = a.length > 0 ? Integer.parseInt(a[0]) : 1000;
    int iters = a.length > 1 ? Integer.parseInt(a[1]) : 500;
    int rounds = a.length > 2 ? Integer.parseInt(a[2]) : 9;
    byte[] ferrite = reply(blocks, false);
    byte[] minimal = reply(blocks, true);
    for (int w = 0; w < 3; w++) { // JIT warm-up on both shapes
      time(ferrite, iters);
      time(minimal, iters);
    }
    double[] f = new double[rounds], m = new double[rounds];
    for (int r = 0; r < rounds; r++) { // alternating, as the benches do
      f[r] = time(ferrite, iters);
      m[r] = time(minimal, iters);
    }
    System.out.printf("blocks=%d ferrite_bytes=%d ferrite_us=%.1f minimal_bytes=%d minimal_us=%.1f%n",
        blocks, ferrite.length, median(f), minimal.length, median(m));
  }

  static double time(byte[] reply, int iters) throws Exception {
    long t0 = System.nanoTime(), sink = 0;
    for (int i = 0; i < iters; i++) {
      GetBlockLocationsResponseProto p = GetBlockLocationsResponseProto.parseFrom(reply);
      LocatedBlocks lbs = PBHelperClient.convert(p.getLocations());
      sink += lbs.locatedBlockCount();
    }
    if (sink == 42) {
      System.out.println();
    }
    return (System.nanoTime() - t0) / 1e3 / iters;
  }

  static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s[s.length / 2];
  }

  static byte[] reply(int blocks, boolean minimal) {
    String pool = minimal ? "B" : "BP-1342719187-127.0.0.1-1795497092385";
    DatanodeIDProto.Builder id = DatanodeIDProto.newBuilder()
        .setIpAddr(minimal ? "1" : "127.0.0.1")
        .setHostName(minimal ? "" : "127.0.0.1")
        .setDatanodeUuid(minimal ? "d" : "5f0e3b52-8f1c-4a57-b1b8-1e0c1f3f8a61")
        .setXferPort(40121).setInfoPort(0).setIpcPort(40123);
    if (!minimal) {
      id.setInfoSecurePort(0); // Ferrite sends it (rpc_blocks.rs datanode_id)
    }
    DatanodeInfoProto.Builder dn = DatanodeInfoProto.newBuilder().setId(id);
    if (!minimal) {
      dn.setCapacity(1L << 40).setDfsUsed(123456789L).setRemaining(1L << 39)
          .setBlockPoolUsed(123456789L).setLastUpdate(1795497092385L).setXceiverCount(1)
          .setLocation("/default-rack").setNonDfsUsed(0)
          .setAdminState(DatanodeInfoProto.AdminState.NORMAL);
    }
    DatanodeInfoProto loc = dn.build();
    TokenProto token = TokenProto.newBuilder()
        .setIdentifier(ByteString.copyFrom(new byte[minimal ? 1 : 31]))
        .setPassword(ByteString.copyFrom(new byte[minimal ? 1 : 20]))
        .setKind(minimal ? "" : "HDFS_BLOCK_TOKEN").setService("").build();
    LocatedBlocksProto.Builder lbs = LocatedBlocksProto.newBuilder()
        .setFileLength(1024L * blocks).setUnderConstruction(false).setIsLastBlockComplete(true);
    for (int i = 0; i < blocks; i++) {
      LocatedBlockProto.Builder b = LocatedBlockProto.newBuilder()
          .setB(ExtendedBlockProto.newBuilder().setPoolId(pool).setBlockId(1073741825L + i)
              .setGenerationStamp(1001L + i).setNumBytes(1024))
          .setOffset(1024L * i).addLocs(loc).setCorrupt(false).setBlockToken(token);
      if (!minimal) {
        b.addIsCached(false).addStorageTypes(StorageTypeProto.DISK)
            .addStorageIDs("DS-8d3c2f6e-5b7a-4c1d-9e2f-0a1b2c3d4e5f");
      }
      lbs.addBlocks(b);
    }
    return GetBlockLocationsResponseProto.newBuilder().setLocations(lbs).build().toByteArray();
  }
}
