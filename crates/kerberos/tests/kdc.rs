//! The GSSAPI layer against a real MIT KDC started for the test: a user with a keytab
//! makes a context with a service, the SASL GSSAPI handshake agrees a layer, and wrapped
//! messages pass (a tampered one does not); a service whose keys the KDC did not issue,
//! and a user without a ticket, are refused.

use std::sync::Arc;

use ferrite_kerberos::gss::Credential;
use ferrite_kerberos::local_kdc::LocalKdc;
use ferrite_kerberos::sasl::{Acceptor, Answer, GssapiClient, GssapiServer, Protection};

#[test]
fn a_user_and_a_service_agree_a_layer_through_a_real_kdc() {
    let dir = tempfile::tempdir().unwrap();
    let kdc = LocalKdc::start(&dir.path().join("kdc"), "FERRITE.TEST").unwrap();
    // Before any GSSAPI call, and the only test in this binary: the library reads these
    // once. The default cache stays empty, so "no ticket" is tested too.
    std::env::set_var("KRB5_CONFIG", &kdc.krb5_conf);
    std::env::set_var("KRB5CCNAME", dir.path().join("empty-cache"));
    let nn_keytab = dir.path().join("nn.keytab");
    let alice_keytab = dir.path().join("alice.keytab");
    let nn = kdc.add_principal("nn/localhost", &nn_keytab).unwrap();
    let alice = kdc.add_principal("alice", &alice_keytab).unwrap();

    let service = Arc::new(Credential::acceptor(&nn, nn_keytab.to_str().unwrap()).unwrap());
    let user = Credential::initiator_keytab(&alice, alice_keytab.to_str().unwrap()).unwrap();
    let mut client = GssapiClient::new(
        &user,
        "nn@localhost",
        vec![Protection::Authentication, Protection::Privacy],
    );
    let mut server = GssapiServer::new(
        Acceptor::new(service.clone()),
        vec![Protection::Privacy, Protection::Integrity],
    );
    let mut token = client.start().unwrap();
    let (principal, protection) = loop {
        match server.step(&token).unwrap() {
            Answer::Challenge(c) => token = client.step(&c).unwrap(),
            Answer::Success {
                principal,
                protection,
            } => break (principal, protection),
        }
    };
    assert_eq!(principal, "alice@FERRITE.TEST");
    assert_eq!(protection, Protection::Privacy);
    let (agreed, mut client_ctx) = client.finish().unwrap();
    assert_eq!(agreed, Protection::Privacy);
    let mut server_ctx = server.into_context().ctx;

    let sealed = client_ctx.wrap(true, b"getFileInfo /secret").unwrap();
    assert!(!sealed.windows(b"/secret".len()).any(|w| w == b"/secret"));
    assert_eq!(server_ctx.unwrap(&sealed).unwrap(), b"getFileInfo /secret");
    let mut tampered = client_ctx.wrap(true, b"again").unwrap();
    let last = tampered.len() - 1;
    tampered[last] ^= 1;
    assert!(server_ctx.unwrap(&tampered).is_err());
    // A replayed token is refused too.
    assert!(server_ctx.unwrap(&sealed).is_err());

    // A service principal the KDC never issued keys for cannot accept.
    let other_keytab = dir.path().join("other.keytab");
    let dn = kdc.add_principal("dn/localhost", &other_keytab).unwrap();
    let wrong = Credential::acceptor(&nn, other_keytab.to_str().unwrap());
    assert!(
        wrong.is_err() || {
            let mut s = GssapiServer::new(
                Acceptor::new(Arc::new(wrong.unwrap())),
                vec![Protection::Authentication],
            );
            let mut c = GssapiClient::new(&user, "nn@localhost", vec![Protection::Authentication]);
            s.step(&c.start().unwrap()).is_err()
        },
        "{dn}"
    );

    // A user with no ticket and no keytab has nothing to initiate with.
    let none = Credential::initiator_cache();
    assert!(
        none.is_err() || {
            let cred = none.unwrap();
            GssapiClient::new(&cred, "nn@localhost", vec![Protection::Authentication])
                .start()
                .is_err()
        }
    );
}
