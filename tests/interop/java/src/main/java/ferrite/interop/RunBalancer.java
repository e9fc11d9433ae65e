package ferrite.interop;

import org.apache.hadoop.hdfs.server.balancer.Balancer;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;

/**
 * Hadoop 3.4.1's own Balancer, as `hdfs balancer` runs it, with one difference: its metrics
 * system may take the same source name twice. Each round of the Balancer registers a
 * metrics source named after the block pool, and from the second round on the metrics
 * system refuses the name ("Metrics source Balancer-BP-… already exists!", HDFS-16867),
 * which ends any run that needs more than one round, against HDFS as against Ferrite.
 * Hadoop's own Balancer tests run in the metrics system's mini-cluster mode, as this does.
 */
public final class RunBalancer {
  public static void main(String[] args) {
    DefaultMetricsSystem.setMiniClusterMode(true);
    Balancer.main(args);
  }
}
