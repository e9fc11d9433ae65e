//! Replies that rest on a durability ticket leave only once the service says the ticket is
//! durable; other replies on the same connection do not queue behind them. Checked over a
//! real socket, with a service whose durable point the test moves by hand.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ferrite_ipc::client::{ClientError, IpcClient};
use ferrite_ipc::durable::{self, Durability};
use ferrite_ipc::{MethodKind, OpenService, Router};
use parking_lot::Mutex;
use prost::Message;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

const PROTOCOL: &str = "org.ferrite.test.DurableProtocol";

/// A call's request and reply: the ticket the call rests on (0: none).
#[derive(Clone, PartialEq, prost::Message)]
struct Ticket {
    #[prost(uint64, tag = "1")]
    ticket: u64,
}

#[derive(Default)]
struct Gate {
    issued: AtomicU64,
    upto: AtomicU64,
    failed: Mutex<Option<String>>,
    /// Whether held replies are dropped with their connection on failure (a replicated
    /// journal's member) rather than answered with an error.
    abandons: std::sync::atomic::AtomicBool,
    moved: Notify,
}

impl Gate {
    fn reach(&self, upto: u64) {
        self.upto.store(upto, Ordering::SeqCst);
        self.moved.notify_waiters();
    }

    fn fail(&self, why: &str) {
        *self.failed.lock() = Some(why.into());
        self.moved.notify_waiters();
    }
}

impl Durability for Gate {
    fn issued(&self) -> u64 {
        self.issued.load(Ordering::SeqCst)
    }

    fn durable(&self) -> (u64, Option<String>) {
        (self.upto.load(Ordering::SeqCst), self.failed.lock().clone())
    }

    fn wait(&self, ticket: u64) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            loop {
                let moved = self.moved.notified();
                if self.upto.load(Ordering::SeqCst) >= ticket || self.failed.lock().is_some() {
                    return;
                }
                moved.await;
            }
        })
    }

    fn abandons_on_failure(&self) -> bool {
        self.abandons.load(Ordering::SeqCst)
    }
}

#[derive(Default)]
struct Svc {
    gate: Gate,
    /// `mutate` calls the server has read and run.
    mutations: AtomicU64,
}

impl OpenService for Svc {
    fn durability(&self) -> Option<&dyn Durability> {
        Some(&self.gate)
    }
}

async fn serve() -> (Arc<Svc>, Arc<IpcClient>) {
    let svc = Arc::new(Svc::default());
    let mut router =
        Router::new(svc.clone()).with_retry_cache(std::time::Duration::from_secs(600), 1 << 20);
    // A mutation: records its ticket as issued and defers its reply to it.
    router.method(
        PROTOCOL,
        "mutate",
        MethodKind::WRITE_ONCE,
        |s: Arc<Svc>, _ctx, req: Ticket| async move {
            s.mutations.fetch_add(1, Ordering::SeqCst);
            s.gate.issued.fetch_max(req.ticket, Ordering::SeqCst);
            durable::settle(&s.gate, req.ticket)
                .await
                .map_err(|e| ferrite_ipc::RpcError::io(e.to_string()))?;
            Ok(req)
        },
    );
    router.method(
        PROTOCOL,
        "read",
        MethodKind::READ,
        |_s: Arc<Svc>, _ctx, req: Ticket| async move { Ok(req) },
    );
    (svc, Arc::new(common::serve(router, PROTOCOL).await))
}

/// Lets every task that has been woken run, so a reply already received has been taken.
async fn settle_tasks() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

/// Sends `mutate` with `ticket` as call `call_id` (attempt `retry`) from a task of its own.
fn mutate(
    client: &Arc<IpcClient>,
    call_id: i32,
    retry: i32,
    ticket: u64,
) -> JoinHandle<Result<Ticket, ClientError>> {
    let c = client.clone();
    tokio::spawn(async move {
        let reply = c
            .call_with_id(call_id, retry, "mutate", &Ticket { ticket })
            .await?;
        Ok(Ticket::decode(reply).expect("a Ticket reply"))
    })
}

/// A read on the same connection, answered at once: every reply queued before it that was
/// free to leave has left by the time this returns.
async fn read(client: &IpcClient) {
    let reply: Ticket = client.call("read", &Ticket { ticket: 0 }).await.unwrap();
    assert_eq!(reply.ticket, 0);
    settle_tasks().await;
}

#[tokio::test]
async fn a_held_reply_waits_for_its_ticket_and_a_read_overtakes_it() {
    let (svc, client) = serve().await;
    let held = mutate(&client, 100, 0, 5);
    // The read is sent after the mutation on the same connection, yet answered first.
    read(&client).await;
    assert!(
        !held.is_finished(),
        "the reply left before its ticket was durable"
    );
    svc.gate.reach(4);
    read(&client).await;
    assert!(!held.is_finished(), "ticket 5 is not durable at 4");
    svc.gate.reach(5);
    assert_eq!(held.await.unwrap().unwrap().ticket, 5);
}

#[tokio::test]
async fn a_retried_call_replays_its_reply_only_once_everything_issued_is_durable() {
    let (svc, client) = serve().await;
    svc.gate.reach(3);
    let first = mutate(&client, 7, 0, 3).await.unwrap().unwrap();
    // Another client's operation is issued but not yet durable; the retry's answer comes
    // from the cache and might rest on it.
    svc.gate.issued.store(9, Ordering::SeqCst);
    let retry = mutate(&client, 7, 1, 3);
    read(&client).await;
    assert!(
        !retry.is_finished(),
        "the replayed reply left before txid 9 was durable"
    );
    svc.gate.reach(9);
    assert_eq!(
        retry.await.unwrap().unwrap(),
        first,
        "the first reply, replayed"
    );
}

#[tokio::test]
async fn when_nothing_more_can_become_durable_held_replies_become_errors() {
    let (svc, client) = serve().await;
    let held = mutate(&client, 100, 0, 2);
    read(&client).await;
    svc.gate.fail("every journal directory has failed");
    match held.await.unwrap() {
        Err(ClientError::Remote {
            class,
            message,
            fatal,
        }) => {
            assert_eq!(class, "java.io.IOException");
            assert!(message.contains("could not be made durable"), "{message}");
            assert!(
                message.contains("every journal directory has failed"),
                "{message}"
            );
            assert!(!fatal, "the connection stays");
        }
        other => panic!("expected an IOException, got {other:?}"),
    }
    // Calls that need no durability are still answered.
    read(&client).await;
}

#[tokio::test]
async fn a_failed_replicated_journal_drops_held_replies_with_the_connection() {
    let (svc, client) = serve().await;
    svc.gate.abandons.store(true, Ordering::SeqCst);
    svc.gate.reach(2);
    assert_eq!(mutate(&client, 1, 0, 2).await.unwrap().unwrap().ticket, 2);
    let held = mutate(&client, 100, 0, 5);
    read(&client).await;
    svc.gate.fail("the replicated journal lost txids 3..=5");
    match held.await.unwrap() {
        Err(ClientError::Closed | ClientError::Io(_)) => {}
        other => panic!("expected the connection to be dropped, got {other:?}"),
    }
    assert!(
        client.is_closed(),
        "a client sees a lost connection, and fails over"
    );
}

/// Waits (within 30 s, else fails) until the server has run `n` mutations.
async fn mutations_reach(svc: &Svc, n: u64) {
    let run = async {
        while svc.mutations.load(Ordering::SeqCst) < n {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(30), run)
        .await
        .unwrap_or_else(|_| panic!("the server never ran {n} mutations"));
}

/// Four or more replies held for a sync, and no lookup among the calls: a small call that
/// arrives now is not read (the socket's low-water mark holds it back, so that calls
/// gather instead of waking the reader one by one) until the sync releases replies, and
/// then it is.
#[tokio::test]
async fn behind_many_held_replies_calls_gather_until_the_sync_releases_them() {
    let (svc, client) = serve().await;
    let held: Vec<_> = (0..4).map(|i| mutate(&client, 100 + i, 0, 5)).collect();
    mutations_reach(&svc, 4).await;
    let late = mutate(&client, 200, 0, 6);
    settle_tasks().await;
    assert_eq!(
        svc.mutations.load(Ordering::SeqCst),
        4,
        "a call below the mark was read while replies waited for their sync"
    );
    svc.gate.reach(5);
    let within = std::time::Duration::from_secs(30);
    for h in held {
        let reply = tokio::time::timeout(within, h).await.expect("released");
        assert_eq!(reply.unwrap().unwrap().ticket, 5);
    }
    // The release lowered the mark: the late call is read and waits for its own ticket.
    mutations_reach(&svc, 5).await;
    svc.gate.reach(6);
    let reply = tokio::time::timeout(within, late)
        .await
        .expect("the late call is answered");
    assert_eq!(reply.unwrap().unwrap().ticket, 6);
}
