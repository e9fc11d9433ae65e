//! The client's link to its NameNode, or to whichever NameNode of an HA nameservice is
//! active. With one address it is one connection, and a call fails as that connection
//! does. With several, a call the NameNode refuses as a standby, or one whose connection
//! fails, moves on to the next NameNode and is sent again there under the same clientId and
//! callId, with its retry count raised — what Hadoop's `ConfiguredFailoverProxyProvider`
//! and retry policy do — so that an at-most-once call the old active ran is answered from
//! the new one's retry cache rather than run twice. A `RetriableException` (an active
//! still waiting for block reports) is sent again to the same NameNode after a pause.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ferrite_ipc::client::{ClientError, IpcClient};
use ferrite_ipc::net::Dial;
use ferrite_ipc::CLIENT_PROTOCOL;
use parking_lot::Mutex;
use prost::Message;

/// How long one call keeps moving between NameNodes before its error is returned: an
/// election takes a second or two, and a NameNode restarted a moment ago may need longer
/// to catch up (Hadoop's 15 failovers with a 0.5 s base and 15 s cap reach minutes).
const FAILOVER_DEADLINE: Duration = Duration::from_secs(30);
/// The pause before a call is sent again once every NameNode has refused it, doubling
/// with each round up to [`MAX_SLEEP`].
const BASE_SLEEP: Duration = Duration::from_millis(100);
const MAX_SLEEP: Duration = Duration::from_secs(2);

/// A link to one NameNode or an HA group's, for one IPC protocol (ClientProtocol for
/// [`FileSystem`](crate::FileSystem); NamenodeProtocol for the balancer).
pub struct NameNodes {
    protocol: &'static str,
    addrs: Vec<String>,
    dial: Arc<dyn Dial>,
    user: String,
    client_id: [u8; 16],
    next_call: AtomicI32,
    /// The NameNode calls go to now, and its connection once made.
    current: Mutex<(usize, Option<Arc<IpcClient>>)>,
}

/// What an HA link does after a failed call, as Hadoop's failover retry policy does.
#[derive(Debug, PartialEq, Eq)]
enum Next {
    /// A standby's refusal, or a connection that could not be made or was lost: try the
    /// next NameNode.
    FailOver,
    /// `RetriableException` (an active still in start-up safe mode, waiting for block
    /// reports): the same NameNode again, after a pause.
    Retry,
    /// Anything else is the call's answer.
    GiveUp,
}

fn next_after(e: &ClientError) -> Next {
    match e {
        ClientError::Remote { class, .. } => match class.as_str() {
            "org.apache.hadoop.ipc.StandbyException" => Next::FailOver,
            "org.apache.hadoop.ipc.RetriableException" => Next::Retry,
            _ => Next::GiveUp,
        },
        ClientError::Io(_) | ClientError::Closed => Next::FailOver,
        _ => Next::GiveUp,
    }
}

impl NameNodes {
    /// Connects to the first of `addrs` (a lone NameNode, or an HA nameservice's members).
    pub(crate) async fn connect(
        addrs: Vec<String>,
        dial: Arc<dyn Dial>,
        user: &str,
        client_id: [u8; 16],
    ) -> Result<Self, ClientError> {
        Self::connect_to(CLIENT_PROTOCOL, addrs, dial, user, client_id).await
    }

    /// [`connect`](Self::connect), for calls of `protocol`.
    pub async fn connect_to(
        protocol: &'static str,
        addrs: Vec<String>,
        dial: Arc<dyn Dial>,
        user: &str,
        client_id: [u8; 16],
    ) -> Result<Self, ClientError> {
        let nns = NameNodes {
            protocol,
            addrs,
            dial,
            user: user.to_string(),
            client_id,
            next_call: AtomicI32::new(0),
            current: Mutex::new((0, None)),
        };
        if nns.addrs.len() == 1 {
            // A lone NameNode that cannot be reached is an error at once.
            nns.conn().await?;
        }
        Ok(nns)
    }

    /// The connection to the current NameNode, made if there is none (or it closed).
    async fn conn(&self) -> Result<(usize, Arc<IpcClient>), ClientError> {
        let idx = {
            let cur = self.current.lock();
            match &cur.1 {
                Some(c) if !c.is_closed() || self.addrs.len() == 1 => {
                    return Ok((cur.0, c.clone()))
                }
                _ => cur.0,
            }
        };
        let stream = self.dial.dial(&self.addrs[idx]).await?;
        let c =
            Arc::new(IpcClient::over_as(stream, &self.user, self.protocol, self.client_id).await?);
        let mut cur = self.current.lock();
        if cur.0 == idx {
            cur.1 = Some(c.clone());
        }
        Ok((idx, c))
    }

    /// Moves past NameNode `idx` (unless another call has already).
    fn fail_over_from(&self, idx: usize) {
        let mut cur = self.current.lock();
        if cur.0 == idx {
            *cur = ((idx + 1) % self.addrs.len(), None);
        }
    }

    /// False once a lone NameNode's connection has closed (an HA link reconnects).
    pub(crate) fn is_closed(&self) -> bool {
        self.addrs.len() == 1 && self.current.lock().1.as_ref().is_none_or(|c| c.is_closed())
    }

    /// Calls `method` on the active NameNode and decodes its reply.
    pub async fn call<Req: Message, Resp: Message + Default>(
        &self,
        method: &str,
        req: &Req,
    ) -> Result<Resp, ClientError> {
        let call_id = self.next_call.fetch_add(1, Ordering::Relaxed);
        let mut failovers = 0u32;
        let mut retries = 0u32;
        // tokio's clock, as the pauses are: the simulator's when simulated.
        let started = tokio::time::Instant::now();
        loop {
            let attempt = match self.conn().await {
                Ok((idx, c)) => (
                    idx,
                    c.call_with_id(
                        call_id,
                        (failovers + retries).min(i32::MAX as u32) as i32,
                        method,
                        req,
                    )
                    .await,
                ),
                Err(e) => (self.current.lock().0, Err(e)),
            };
            match attempt {
                (_, Ok(bytes)) => {
                    return Resp::decode(bytes).map_err(|e| ClientError::BadReply(e.to_string()))
                }
                (idx, Err(e)) if self.addrs.len() > 1 && started.elapsed() < FAILOVER_DEADLINE => {
                    match next_after(&e) {
                        Next::GiveUp => return Err(e),
                        Next::Retry => {
                            tracing::debug!(namenode = %self.addrs[idx], error = %e, method, "retrying");
                            retries += 1;
                            tokio::time::sleep(backoff(retries.min(4))).await;
                        }
                        Next::FailOver => {
                            tracing::debug!(namenode = %self.addrs[idx], error = %e, method, "failing over");
                            self.fail_over_from(idx);
                            failovers += 1;
                            // A short pause per full round: every NameNode was tried once.
                            let rounds = failovers / self.addrs.len() as u32;
                            if failovers % self.addrs.len() as u32 == 0 {
                                tokio::time::sleep(backoff(rounds)).await;
                            }
                        }
                    }
                }
                (_, Err(e)) => return Err(e),
            }
        }
    }
}

/// The pause after `rounds` full rounds through the NameNodes.
fn backoff(rounds: u32) -> Duration {
    BASE_SLEEP.saturating_mul(1 << rounds.min(8)).min(MAX_SLEEP)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standby_refusals_and_lost_connections_fail_over_and_retriable_refusals_retry() {
        let remote = |class: &str| ClientError::Remote {
            class: class.into(),
            message: String::new(),
            fatal: false,
        };
        assert_eq!(
            next_after(&remote("org.apache.hadoop.ipc.StandbyException")),
            Next::FailOver
        );
        assert_eq!(next_after(&ClientError::Closed), Next::FailOver);
        assert_eq!(
            next_after(&ClientError::Io(
                std::io::ErrorKind::ConnectionRefused.into()
            )),
            Next::FailOver
        );
        assert_eq!(
            next_after(&remote("org.apache.hadoop.ipc.RetriableException")),
            Next::Retry
        );
        assert_eq!(
            next_after(&remote("java.io.FileNotFoundException")),
            Next::GiveUp
        );
    }

    #[test]
    fn pauses_grow_per_round_and_are_capped() {
        assert_eq!(backoff(0), BASE_SLEEP);
        assert!(backoff(1) > backoff(0));
        assert_eq!(backoff(30), MAX_SLEEP);
    }
}
