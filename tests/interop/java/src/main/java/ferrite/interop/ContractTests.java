package ferrite.interop;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Options.HandleOpt;
import org.apache.hadoop.fs.contract.AbstractBondedFSContract;
import org.apache.hadoop.fs.contract.AbstractContractAppendTest;
import org.apache.hadoop.fs.contract.AbstractContractConcatTest;
import org.apache.hadoop.fs.contract.AbstractContractContentSummaryTest;
import org.apache.hadoop.fs.contract.AbstractContractCreateTest;
import org.apache.hadoop.fs.contract.AbstractContractDeleteTest;
import org.apache.hadoop.fs.contract.AbstractContractGetFileStatusTest;
import org.apache.hadoop.fs.contract.AbstractContractMkdirTest;
import org.apache.hadoop.fs.contract.AbstractContractOpenTest;
import org.apache.hadoop.fs.contract.AbstractContractRenameTest;
import org.apache.hadoop.fs.contract.AbstractContractSeekTest;
import org.apache.hadoop.fs.contract.AbstractContractSetTimesTest;
import org.apache.hadoop.fs.contract.AbstractContractPathHandleTest;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.junit.runner.JUnitCore;
import org.junit.runner.Request;
import org.junit.runner.Result;
import org.junit.runner.notification.Failure;
import org.junit.runner.notification.RunListener;
import org.junit.runner.Description;

/**
 * Hadoop's own file system contract tests for append, concat and path handles, bound to the
 * cluster named by fs.contract.test.fs.hdfs (core-site.xml on the classpath) with HDFS's
 * contract options (contract/ferrite-hdfs.xml). Prints one line per
 * test: "pass NAME", "fail NAME: message" or "skip NAME"; exits 0.
 *
 * With the argument "webhdfs", the same kind of run through Hadoop's WebHdfsFileSystem,
 * bound to fs.contract.test.fs.webhdfs (contract/ferrite-webhdfs.xml): create, open, seek,
 * rename, delete, mkdir, getFileStatus, setTimes, content summary, append and concat.
 */
public final class ContractTests {
  /** HDFS's contract, on an already running cluster rather than a MiniDFSCluster. */
  public static class Bonded extends AbstractBondedFSContract {
    public Bonded(Configuration conf) {
      super(conf);
      addConfResource("contract/ferrite-hdfs.xml");
    }

    @Override
    public String getScheme() {
      return "hdfs";
    }
  }

  public static class Append extends AbstractContractAppendTest {
    @Override
    protected AbstractFSContract createContract(Configuration conf) {
      return new Bonded(conf);
    }
  }

  public static class Concat extends AbstractContractConcatTest {
    @Override
    protected AbstractFSContract createContract(Configuration conf) {
      return new Bonded(conf);
    }
  }

  public static class PathHandles extends AbstractContractPathHandleTest {
    public PathHandles(String name, HandleOpt[] opts, boolean serialized) {
      super(name, opts, serialized);
    }

    @Override
    protected AbstractFSContract createContract(Configuration conf) {
      return new Bonded(conf);
    }
  }

  /** The same cluster through WebHDFS. */
  public static class Web extends AbstractBondedFSContract {
    public Web(Configuration conf) {
      super(conf);
      addConfResource("contract/ferrite-webhdfs.xml");
    }

    @Override
    public String getScheme() {
      return "webhdfs";
    }
  }

  public static class WebCreate extends AbstractContractCreateTest {
    @Override
    protected AbstractFSContract createContract(Configuration conf) {
      return new Web(conf);
    }
  }

  public static class WebOpen extends AbstractContractOpenTest {
    @Override
    protected AbstractFSContract createContract(Configuration conf) {
      return new Web(conf);
    }
  }

  public static class WebSeek extends AbstractContractSeekTest {
    @Override
    protected AbstractFSContract createContract(Configuration conf) {
      return new Web(conf);
    }
  }

  public static class WebRename extends AbstractContractRenameTest {
    @Override
    protected AbstractFSContract createContract(Configuration conf) {
      return new Web(conf);
    }
  }

  public static class WebDelete extends AbstractContractDeleteTest {
    @Override
    protected AbstractFSContract createContract(Configuration conf) {
      return new Web(conf);
    }
  }

  public static class WebMkdir extends AbstractContractMkdirTest {
    @Override
    protected AbstractFSContract createContract(Configuration conf) {
      return new Web(conf);
    }
  }

  public static class WebGetFileStatus extends AbstractContractGetFileStatusTest {
    @Override
    protected AbstractFSContract createContract(Configuration conf) {
      return new Web(conf);
    }
  }

  public static class WebSetTimes extends AbstractContractSetTimesTest {
    @Override
    protected AbstractFSContract createContract(Configuration conf) {
      return new Web(conf);
    }
  }

  public static class WebContentSummary extends AbstractContractContentSummaryTest {
    @Override
    protected AbstractFSContract createContract(Configuration conf) {
      return new Web(conf);
    }
  }

  public static class WebAppend extends AbstractContractAppendTest {
    @Override
    protected AbstractFSContract createContract(Configuration conf) {
      return new Web(conf);
    }
  }

  public static class WebConcat extends AbstractContractConcatTest {
    @Override
    protected AbstractFSContract createContract(Configuration conf) {
      return new Web(conf);
    }
  }

  public static void main(String[] argv) {
    JUnitCore core = new JUnitCore();
    core.addListener(new RunListener() {
      private boolean failed;

      @Override
      public void testStarted(Description d) {
        failed = false;
      }

      @Override
      public void testFailure(Failure f) {
        failed = true;
        String msg = String.valueOf(f.getMessage()).split("\n")[0];
        System.out.println("fail " + f.getDescription().getDisplayName() + ": " + msg);
      }

      @Override
      public void testAssumptionFailure(Failure f) {
        failed = true;
        System.out.println("skip " + f.getDescription().getDisplayName());
      }

      @Override
      public void testIgnored(Description d) {
        System.out.println("skip " + d.getDisplayName());
      }

      @Override
      public void testFinished(Description d) {
        if (!failed) {
          System.out.println("pass " + d.getDisplayName());
        }
      }
    });
    boolean web = argv.length > 0 && argv[0].equals("webhdfs");
    int ran = 0;
    int failed = 0;
    if (argv.length > 1) {
      // Only the tests named, as CLASS#METHOD (the nested class's simple name).
      for (int i = 1; i < argv.length; i++) {
        String[] cm = argv[i].split("#", 2);
        try {
          Class<?> c = Class.forName(ContractTests.class.getName() + "$" + cm[0]);
          Result r = core.run(Request.method(c, cm[1]));
          ran += r.getRunCount();
          failed += r.getFailureCount();
        } catch (ClassNotFoundException e) {
          System.out.println("fail " + argv[i] + ": no such test class");
          failed++;
        }
      }
    } else {
      Result r = web
          ? core.run(WebCreate.class, WebOpen.class, WebSeek.class, WebRename.class,
              WebDelete.class, WebMkdir.class, WebGetFileStatus.class, WebSetTimes.class,
              WebContentSummary.class, WebAppend.class, WebConcat.class)
          : core.run(Append.class, Concat.class, PathHandles.class);
      ran = r.getRunCount();
      failed = r.getFailureCount();
    }
    System.out.println("ran " + ran + " failed " + failed);
    System.out.flush();
    System.exit(0);
  }
}
