//! A handler that panics is answered with an error, and its connection goes on serving:
//! whether the panic comes on the call's first poll (run on the connection's reader task)
//! or after the call has waited (run on a task of its own). Checked over a real socket.

mod common;

use std::sync::Arc;

use common::{Num, Stateless};
use ferrite_ipc::client::{ClientError, IpcClient};
use ferrite_ipc::MethodKind;

const PROTOCOL: &str = "org.ferrite.test.PanicProtocol";

async fn serve() -> IpcClient {
    let mut router = common::echo_router(PROTOCOL);
    router.method(
        PROTOCOL,
        "boomAtOnce",
        MethodKind::READ,
        |_s: Arc<Stateless>, _ctx, req: Num| async move {
            assert!(req.n > 100, "n is only {}", req.n);
            Ok(req)
        },
    );
    router.method(
        PROTOCOL,
        "boomLater",
        MethodKind::READ,
        |_s: Arc<Stateless>, _ctx, req: Num| async move {
            tokio::task::yield_now().await;
            if req.n < 100 {
                panic!("{}", String::from("waited, then failed"));
            }
            Ok(req)
        },
    );
    common::serve(router, PROTOCOL).await
}

/// The error a call got. Without an answer the call would wait forever, so a bound turns
/// that into a failure.
async fn runtime_error(
    call: impl std::future::Future<Output = Result<Num, ClientError>>,
) -> String {
    let r = tokio::time::timeout(std::time::Duration::from_secs(30), call)
        .await
        .expect("a panicking call is still answered");
    match r {
        Err(ClientError::Remote {
            class,
            message,
            fatal,
        }) => {
            assert_eq!(class, "java.lang.RuntimeException");
            assert!(!fatal, "one call's failure does not end the connection");
            message
        }
        other => panic!("expected a RuntimeException, got {other:?}"),
    }
}

#[tokio::test]
async fn a_panicking_call_is_answered_and_the_connection_serves_on() {
    let c = serve().await;
    let msg = runtime_error(c.call("boomAtOnce", &Num { n: 7 })).await;
    assert!(msg.contains("n is only 7"), "{msg}");
    let msg = runtime_error(c.call("boomLater", &Num { n: 8 })).await;
    assert!(msg.contains("waited, then failed"), "{msg}");

    let r: Num = c.call("echo", &Num { n: 42 }).await.unwrap();
    assert_eq!(r.n, 42);
    let r: Num = c.call("boomAtOnce", &Num { n: 101 }).await.unwrap();
    assert_eq!(r.n, 101);
}
