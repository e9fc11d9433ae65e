//! Hadoop's own Java classes as a test runs them: the interop jar's classpath (built by
//! scripts/test.sh) with a configuration directory of the test's keys in front.

use std::path::Path;
use std::process::Command;

/// A `java` command for Hadoop 3.4.1's classes with `conf` (`key=value`) as its
/// `hdfs-site.xml` and quiet logging; the directory lives as long as the returned guard.
pub fn hadoop_java(conf: &[String]) -> (Command, tempfile::TempDir) {
    let java = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop/java");
    let cp = std::fs::read_to_string(java.join("target/cp.txt"))
        .unwrap_or_else(|e| panic!("the interop jar's classpath (built by scripts/test.sh): {e}"));
    let dir = tempfile::tempdir().unwrap();
    let body: String = conf
        .iter()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| format!("<property><name>{k}</name><value>{v}</value></property>"))
        .collect();
    // Both files: UserGroupInformation reads core-site.xml only (secure mode's keys).
    for file in ["hdfs-site.xml", "core-site.xml"] {
        std::fs::write(
            dir.path().join(file),
            format!("<?xml version=\"1.0\"?><configuration>{body}</configuration>\n"),
        )
        .unwrap();
    }
    std::fs::write(
        dir.path().join("log4j.properties"),
        "log4j.rootLogger=WARN,stderr\nlog4j.appender.stderr=org.apache.log4j.ConsoleAppender\nlog4j.appender.stderr.Target=System.err\nlog4j.appender.stderr.layout=org.apache.log4j.PatternLayout\nlog4j.appender.stderr.layout.ConversionPattern=%d %p %c: %m%n\n",
    )
    .unwrap();
    let classpath = format!(
        "{}:{}:{}",
        dir.path().display(),
        java.join("target/classes").display(),
        cp.trim()
    );
    let mut cmd = Command::new("java");
    cmd.args(["-Djava.net.preferIPv4Stack=true", "-cp", &classpath]);
    (cmd, dir)
}
