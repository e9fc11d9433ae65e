//! Secure mode against a real MIT KDC started for the test (a realm of its own): a
//! NameNode with `hadoop.security.authentication=kerberos` logs in from its keytab, and
//! Hadoop 3.4.1's own shell reaches it with a user's ticket (kinit from a keytab), acting
//! as the user its principal maps to, or for another user where `hadoop.proxyuser` rules
//! allow it. Without a ticket, and as a SIMPLE client, it is refused and nothing changes.
//! A DataNode logs in from its keytab, registers, and serves a file written and read back.

mod common;

use std::path::Path;
use std::process::Command;

use common::spawn_with_env;
use ferrite_kerberos::local_kdc::LocalKdc;

const REALM: &str = "FERRITE.TEST";

/// Hadoop's FsShell with `args`, as a client of `url` holding the tickets in `cache`.
fn shell(kdc: &LocalKdc, url: &str, cache: &Path, auth: &str, args: &[&str]) -> (bool, String) {
    shell_as(kdc, url, cache, auth, None, args)
}

/// [`shell`], acting for `proxy` (`HADOOP_PROXY_USER`) when given.
fn shell_as(
    kdc: &LocalKdc,
    url: &str,
    cache: &Path,
    auth: &str,
    proxy: Option<&str>,
    args: &[&str],
) -> (bool, String) {
    let (mut java, _conf) = common::java::hadoop_java(&[
        format!("fs.defaultFS={url}"),
        format!("hadoop.security.authentication={auth}"),
        format!("dfs.namenode.kerberos.principal=nn/_HOST@{REALM}"),
    ]);
    let out = java
        .arg(format!(
            "-Djava.security.krb5.conf={}",
            kdc.krb5_conf.display()
        ))
        .arg("org.apache.hadoop.fs.FsShell")
        .args(args)
        .env("KRB5CCNAME", cache)
        .env("KRB5_CONFIG", &kdc.krb5_conf)
        .envs(proxy.map(|p| ("HADOOP_PROXY_USER", p)))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// A ticket cache holding `principal`'s tickets, as `kinit -kt` gets them.
fn kinit(kdc: &LocalKdc, keytab: &Path, principal: &str, cache: &Path) -> std::path::PathBuf {
    let out = Command::new("kinit")
        .args([
            "-kt",
            keytab.to_str().unwrap(),
            &format!("{principal}@{REALM}"),
        ])
        .env("KRB5_CONFIG", &kdc.krb5_conf)
        .env("KRB5CCNAME", cache)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    cache.to_path_buf()
}

#[test]
fn hadoops_shell_reaches_a_kerberos_namenode_with_a_users_ticket_and_nothing_else() {
    let root = tempfile::tempdir().unwrap();
    let kdc = LocalKdc::start(&root.path().join("kdc"), REALM).unwrap();
    let nn_keytab = root.path().join("nn.keytab");
    let alice_keytab = root.path().join("alice.keytab");
    kdc.add_principal("nn/localhost", &nn_keytab).unwrap();
    kdc.add_principal("alice", &alice_keytab).unwrap();

    let conf = |kv: String| ["--conf".to_string(), kv];
    let mut args: Vec<String> = vec![
        "namenode".into(),
        "--port".into(),
        "0".into(),
        "--data".into(),
        root.path().join("nn").display().to_string(),
    ];
    for kv in [
        "hadoop.security.authentication=kerberos".to_string(),
        format!("dfs.namenode.kerberos.principal=nn/_HOST@{REALM}"),
        format!("dfs.namenode.keytab.file={}", nn_keytab.display()),
        "dfs.namenode.safemode.extension=0".into(),
        "hadoop.proxyuser.alice.users=bob".into(),
        "hadoop.proxyuser.alice.hosts=*".into(),
    ] {
        args.extend(conf(kv));
    }
    let nn = spawn_with_env(&args, &[("KRB5_CONFIG", kdc.krb5_conf.as_os_str())]);
    let url = nn.ready.clone();

    // The NameNode's own principal is its superuser ("nn", as HDFS's login user): it
    // makes alice a directory.
    let admin = kinit(&kdc, &nn_keytab, "nn/localhost", &root.path().join("nn.cc"));
    for step in [&["-mkdir", "/k"][..], &["-chown", "alice", "/k"]] {
        let (ok, text) = shell(&kdc, &url, &admin, "kerberos", step);
        assert!(ok, "{step:?}: {text}");
    }
    let cache = kinit(&kdc, &alice_keytab, "alice", &root.path().join("alice.cc"));
    let (ok, text) = shell(&kdc, &url, &cache, "kerberos", &["-mkdir", "-p", "/k/d"]);
    assert!(ok, "{text}");
    let (ok, text) = shell(&kdc, &url, &cache, "kerberos", &["-ls", "/k"]);
    assert!(ok, "{text}");
    let line = text
        .lines()
        .find(|l| l.ends_with("/k/d"))
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(line.split_whitespace().nth(2), Some("alice"), "{line}");

    // alice may act for bob (hadoop.proxyuser.alice.users), not for carol.
    let (ok, text) = shell_as(&kdc, &url, &cache, "kerberos", Some("bob"), &["-ls", "/k"]);
    assert!(ok, "{text}");
    let (ok, text) = shell_as(
        &kdc,
        &url,
        &cache,
        "kerberos",
        Some("carol"),
        &["-ls", "/k"],
    );
    assert!(!ok, "{text}");
    assert!(
        text.contains("User: alice@FERRITE.TEST is not allowed to impersonate carol"),
        "{text}"
    );

    // No ticket: refused before any call, and nothing is made.
    let empty = root.path().join("nobody.cc");
    let (ok, text) = shell(&kdc, &url, &empty, "kerberos", &["-mkdir", "/k/nope"]);
    assert!(!ok, "{text}");
    // (HDFS also lists TOKEN, for delegation tokens, which Ferrite does not offer yet.)
    assert!(
        text.contains("AccessControlException: Client cannot authenticate via:[KERBEROS]"),
        "{text}"
    );
    // A SIMPLE client is told which methods the server takes.
    let (ok, text) = shell(&kdc, &url, &empty, "simple", &["-mkdir", "/k/nope"]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("SIMPLE authentication is not enabled.  Available:[KERBEROS]"),
        "{text}"
    );
    let (ok, text) = shell(&kdc, &url, &cache, "kerberos", &["-test", "-e", "/k/nope"]);
    assert!(!ok, "/k/nope was made: {text}");

    // A DataNode logs in from its keytab and registers; alice writes and reads a file.
    let dn_keytab = root.path().join("dn.keytab");
    kdc.add_principal("dn/localhost", &dn_keytab).unwrap();
    let nn_addr = url.trim_start_matches("hdfs://").to_string();
    let principal = format!("dfs.datanode.kerberos.principal=dn/localhost@{REALM}");
    let keytab = format!("dfs.datanode.keytab.file={}", dn_keytab.display());
    let secure = [
        "hadoop.security.authentication=kerberos",
        &principal,
        &keytab,
    ];
    let krb5 = [("KRB5_CONFIG", kdc.krb5_conf.as_os_str())];
    let _dn = common::datanode_with_env(root.path(), &nn_addr, "127.0.0.1", 0, &secure, &krb5);
    let http = nn.http.expect("the NameNode's HTTP address");
    for _ in 0..100 {
        let live = common::jmx_bean(http, "Hadoop:service=NameNode,name=FSNamesystemState")
            ["NumLiveDataNodes"]
            .as_u64();
        if live == Some(1) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let local = root.path().join("hello.txt");
    std::fs::write(&local, "secure bytes\n".repeat(1000)).unwrap();
    let put = [
        "-D",
        "dfs.replication=1",
        "-put",
        local.to_str().unwrap(),
        "/k/d/hello.txt",
    ];
    let (ok, text) = shell(&kdc, &url, &cache, "kerberos", &put);
    assert!(ok, "{text}");
    let (ok, text) = shell(&kdc, &url, &cache, "kerberos", &["-cat", "/k/d/hello.txt"]);
    assert!(ok, "{text}");
    assert!(text.contains(&"secure bytes\n".repeat(1000)), "{text}");
}
