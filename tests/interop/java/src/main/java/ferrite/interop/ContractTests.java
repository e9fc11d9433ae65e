package ferrite.interop;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Options.HandleOpt;
import org.apache.hadoop.fs.contract.AbstractBondedFSContract;
import org.apache.hadoop.fs.contract.AbstractContractAppendTest;
import org.apache.hadoop.fs.contract.AbstractContractConcatTest;
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
    Result r = core.run(Append.class, Concat.class, PathHandles.class);
    System.out.println("ran " + r.getRunCount() + " failed " + r.getFailureCount());
    System.out.flush();
    System.exit(0);
  }
}
