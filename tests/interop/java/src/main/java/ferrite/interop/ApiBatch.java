package ferrite.interop;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.MultipartUploader;
import org.apache.hadoop.fs.Options.HandleOpt;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathHandle;
import org.apache.hadoop.fs.PartHandle;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.fs.UploadHandle;

/**
 * Runs FileSystem API calls from Hadoop's own client, many per JVM. One command per line on
 * stdin, arguments separated by a TAB; for each, prints "==BEGIN==", what the call answered
 * (or "error <exception class>: <message>"), and "==END==".
 *
 *   listLocated DIR            each entry of listLocatedStatus: name, dir?, length, blocks
 *   listFiles DIR              each file of listFiles(DIR, true): path, length, blocks
 *   append PATH TEXT           appends TEXT (UTF-8)
 *   appendNewBlock PATH TEXT   appends TEXT in a new block (CreateFlag.NEW_BLOCK)
 *   truncate PATH LEN          truncate's answer (true: done at once)
 *   concat TARGET SRC...       FileSystem.concat
 *   read PATH                  "length N md5 H"
 *   handle KEY PATH OPT        a PathHandle of PATH kept as KEY; OPT: exact|content|path|reference
 *   openHandle KEY             read through the handle: "length N md5 H"
 *   rename SRC DST             FileSystem.rename's answer
 *   hsyncLength PATH N         writes N bytes, hsync with UPDATE_LENGTH: the length a status
 *                              shows then, and after close
 *   mpu DIR NAME PART...       the multipart uploader: each PART text uploaded as a part, in
 *                              reverse order, completed as DIR/NAME
 */
public final class ApiBatch {
  private static final Map<String, PathHandle> HANDLES = new HashMap<>();

  public static void main(String[] argv) throws Exception {
    Configuration conf = new Configuration();
    FileSystem fs = FileSystem.get(conf);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      if (line.isEmpty()) {
        continue;
      }
      String[] a = line.split("\t", -1);
      System.out.println("==BEGIN==");
      try {
        run(fs, a);
      } catch (Throwable t) {
        Throwable e = t;
        while (e.getCause() != null && e instanceof RuntimeException) {
          e = e.getCause();
        }
        String msg = String.valueOf(e.getMessage()).split("\n")[0];
        System.out.println("error " + e.getClass().getName() + ": " + msg);
      }
      System.out.println("==END==");
      System.out.flush();
    }
    System.exit(0);
  }

  static String digest(FSDataInputStream s) throws Exception {
    byte[] all = s.readAllBytes();
    s.close();
    MessageDigest md = MessageDigest.getInstance("MD5");
    return "length " + all.length + " md5 " + HexFormat.of().formatHex(md.digest(all));
  }

  static void run(FileSystem fs, String[] a) throws Exception {
    switch (a[0]) {
      case "listLocated": {
        RemoteIterator<LocatedFileStatus> it = fs.listLocatedStatus(new Path(a[1]));
        while (it.hasNext()) {
          LocatedFileStatus s = it.next();
          System.out.println(s.getPath().getName() + "\t" + s.isDirectory() + "\t" + s.getLen()
              + "\t" + s.getBlockLocations().length);
        }
        break;
      }
      case "listFiles": {
        RemoteIterator<LocatedFileStatus> it = fs.listFiles(new Path(a[1]), true);
        while (it.hasNext()) {
          LocatedFileStatus s = it.next();
          System.out.println(s.getPath().toUri().getPath() + "\t" + s.getLen() + "\t"
              + s.getBlockLocations().length);
        }
        break;
      }
      case "append": {
        try (FSDataOutputStream out = fs.append(new Path(a[1]))) {
          out.write(a[2].getBytes(StandardCharsets.UTF_8));
        }
        System.out.println("appended");
        break;
      }
      case "appendNewBlock": {
        org.apache.hadoop.hdfs.DistributedFileSystem dfs = (org.apache.hadoop.hdfs.DistributedFileSystem) fs;
        try (FSDataOutputStream out = dfs.append(new Path(a[1]),
            java.util.EnumSet.of(org.apache.hadoop.fs.CreateFlag.APPEND, org.apache.hadoop.fs.CreateFlag.NEW_BLOCK),
            4096, null)) {
          out.write(a[2].getBytes(StandardCharsets.UTF_8));
        }
        System.out.println("appended");
        break;
      }
      case "truncate":
        System.out.println(fs.truncate(new Path(a[1]), Long.parseLong(a[2])));
        break;
      case "concat": {
        Path[] srcs = new Path[a.length - 2];
        for (int i = 2; i < a.length; i++) {
          srcs[i - 2] = new Path(a[i]);
        }
        fs.concat(new Path(a[1]), srcs);
        System.out.println("concatenated");
        break;
      }
      case "read":
        System.out.println(digest(fs.open(new Path(a[1]))));
        break;
      case "handle": {
        FileStatus st = fs.getFileStatus(new Path(a[2]));
        HandleOpt[] opt;
        switch (a[3]) {
          case "exact": opt = HandleOpt.exact(); break;
          case "content": opt = HandleOpt.content(); break;
          case "path": opt = HandleOpt.path(); break;
          default: opt = HandleOpt.reference(); break;
        }
        HANDLES.put(a[1], fs.getPathHandle(st, opt));
        System.out.println("handle");
        break;
      }
      case "openHandle":
        System.out.println(digest(fs.open(HANDLES.get(a[1]))));
        break;
      case "hsyncLength": {
        Path p = new Path(a[1]);
        try (FSDataOutputStream out = fs.create(p, true)) {
          out.write(new byte[Integer.parseInt(a[2])]);
          ((org.apache.hadoop.hdfs.client.HdfsDataOutputStream) out)
              .hsync(java.util.EnumSet.of(
                  org.apache.hadoop.hdfs.client.HdfsDataOutputStream.SyncFlag.UPDATE_LENGTH));
          System.out.println("open " + fs.getFileStatus(p).getLen());
        }
        System.out.println("closed " + fs.getFileStatus(p).getLen());
        break;
      }
      case "rename":
        System.out.println(fs.rename(new Path(a[1]), new Path(a[2])));
        break;
      case "mpu": {
        Path dir = fs.makeQualified(new Path(a[1]));
        Path file = new Path(dir, a[2]);
        try (MultipartUploader up = fs.createMultipartUploader(dir).build()) {
          UploadHandle id = up.startUpload(file).get();
          Map<Integer, PartHandle> parts = new HashMap<>();
          for (int i = a.length - 1; i >= 3; i--) {
            byte[] b = a[i].getBytes(StandardCharsets.UTF_8);
            parts.put(i - 2, up.putPart(id, i - 2, file, new ByteArrayInputStream(b), b.length).get());
          }
          up.complete(id, file, parts).get();
        }
        System.out.println(digest(fs.open(file)));
        break;
      }
      default:
        throw new IllegalArgumentException("unknown command " + a[0]);
    }
  }
}
