//! Raft's three calls between NameNodes, as frames on any stream: a call is a length
//! (u32, big-endian), a kind byte and the `FerriteRaft.proto` message; an answer is a
//! length, a status byte (0: the message follows; 1: the callee's error, as text) and the
//! message. One call at a time per connection, as openraft makes them per peer.
//!
//! Two calls are Ferrite's own, for a graceful change of leader (`hdfs haadmin -failover`):
//! [`hand_over`] asks the leader to hand its leadership to a given node, which the
//! NameNode does by its [`HandOver`]; [`campaign`] asks a node to stand for election now,
//! which is how the leader, having stopped taking changes, lets its successor take over
//! at once rather than after an election timeout.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use ferrite_ipc::net::{BoxRead, BoxWrite, Conn, Dial, Listen};
use ferrite_proto::ferrite::raft as pb;
use openraft::error::{InstallSnapshotError, NetworkError, RPCError, RaftError, Unreachable};
use openraft::network::RPCOption;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{BasicNode, RaftNetwork, RaftNetworkFactory};
use prost::Message;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use crate::wire;
use crate::{Acks, LeaderContact, NodeId, Raft, TypeConfig};

const VOTE: u8 = 1;
const APPEND: u8 = 2;
const INSTALL: u8 = 3;
const CAMPAIGN: u8 = 4;
const HAND_OVER: u8 = 5;
const OK: u8 = 0;
const FAILED: u8 = 1;
/// The longest frame either side reads: a batch of entries or a snapshot chunk is far
/// smaller; a length past it is a broken or hostile peer, not an allocation to make.
const MAX_FRAME: usize = 64 << 20;

async fn read_frame(r: &mut (impl AsyncRead + Unpin)) -> io::Result<(u8, Vec<u8>)> {
    let len = r.read_u32().await? as usize;
    if len == 0 || len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a Raft frame of {len} bytes"),
        ));
    }
    let kind = r.read_u8().await?;
    let mut body = vec![0; len - 1];
    r.read_exact(&mut body).await?;
    Ok((kind, body))
}

async fn write_frame(w: &mut (impl AsyncWrite + Unpin), kind: u8, body: &[u8]) -> io::Result<()> {
    let mut out = Vec::with_capacity(5 + body.len());
    out.extend_from_slice(&(body.len() as u32 + 1).to_be_bytes());
    out.push(kind);
    out.extend_from_slice(body);
    w.write_all(&out).await?;
    w.flush().await
}

/// A hand-over's answer: `Err` carries the reason, as text, to the node that asked.
pub type HandOverFuture<'a> = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;

/// What hands this node's leadership to another when asked (the NameNode's HA control).
pub trait HandOver: Send + Sync {
    fn hand_over(&self, to: NodeId) -> HandOverFuture<'_>;
}

/// Answers Raft calls from the other NameNodes on `listener` until `cancel`.
pub async fn serve<L: Listen>(raft: Raft, listener: L, cancel: CancellationToken) {
    let contact = Arc::new(LeaderContact::default());
    serve_with(raft, listener, None, contact, cancel).await
}

/// [`serve`], with hand-over requests answered by `hand_over` (refused without one), and
/// each append or snapshot a leader sends noted in `contact`.
pub async fn serve_with<L: Listen>(
    raft: Raft,
    listener: L,
    hand_over: Option<Arc<dyn HandOver>>,
    contact: Arc<LeaderContact>,
    cancel: CancellationToken,
) {
    loop {
        let accepted = tokio::select! {
            () = cancel.cancelled() => return,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((conn, peer)) => {
                let (raft, cancel, h) = (raft.clone(), cancel.clone(), hand_over.clone());
                let contact = contact.clone();
                tokio::spawn(async move {
                    let (mut r, mut w) = conn.into_split();
                    let calls = answer_calls(&raft, h.as_deref(), &contact, &mut r, &mut w);
                    tokio::select! {
                        () = cancel.cancelled() => {}
                        res = calls => if let Err(e) = res {
                            tracing::debug!(%peer, error = %e, "Raft connection closed");
                        }
                    }
                });
            }
            Err(e) => {
                tracing::warn!(error = %e, "Raft listener: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

async fn answer_calls(
    raft: &Raft,
    hand_over: Option<&dyn HandOver>,
    contact: &LeaderContact,
    r: &mut (impl AsyncRead + Unpin),
    w: &mut (impl AsyncWrite + Unpin),
) -> io::Result<()> {
    // Whether a leader's appends came on this connection: its closing then means that
    // leader's process may be gone (a killed one's sockets close at once).
    let mut from_leader = false;
    let ended = loop {
        let (kind, body) = match read_frame(r).await {
            Ok(frame) => frame,
            Err(e) => break e,
        };
        let answered = if kind == HAND_OVER {
            answer_hand_over(hand_over, &body).await
        } else {
            answer(raft, kind, &body).await.map(|(out, leader)| {
                if leader {
                    contact.heard();
                    from_leader = true;
                }
                out
            })
        };
        let written = match answered {
            Ok(out) => write_frame(w, OK, &out).await,
            Err(msg) => write_frame(w, FAILED, msg.as_bytes()).await,
        };
        if let Err(e) = written {
            break e;
        }
    };
    if from_leader {
        contact.lost();
    }
    Err(ended)
}

async fn answer_hand_over(h: Option<&dyn HandOver>, body: &[u8]) -> Result<Vec<u8>, String> {
    let to = <[u8; 8]>::try_from(body)
        .map(u64::from_be_bytes)
        .map_err(|_| format!("a hand-over request of {} bytes", body.len()))?;
    match h {
        Some(h) => h.hand_over(to).await.map(|()| Vec::new()),
        None => Err("this node does not hand over its leadership".into()),
    }
}

/// One call's answer and whether it came from a leader this node follows (an append or
/// snapshot not refused for its stale term), or the error to send back as text.
async fn answer(raft: &Raft, kind: u8, body: &[u8]) -> Result<(Vec<u8>, bool), String> {
    let text = |e: &dyn std::fmt::Display| e.to_string();
    match kind {
        VOTE => {
            let req = pb::VoteRequestProto::decode(body).map_err(|e| text(&e))?;
            let req = wire::vote_request_from(req).map_err(|e| text(&e))?;
            let resp = raft.vote(req).await.map_err(|e| text(&e))?;
            Ok((wire::vote_response_to(&resp).encode_to_vec(), false))
        }
        APPEND => {
            let req = pb::AppendEntriesRequestProto::decode(body).map_err(|e| text(&e))?;
            let req = wire::append_from(req).map_err(|e| text(&e))?;
            let resp = raft.append_entries(req).await.map_err(|e| text(&e))?;
            // Refused for its stale term, the sender is no leader of ours.
            let leader = !matches!(resp, AppendEntriesResponse::HigherVote(_));
            Ok((wire::append_response_to(&resp).encode_to_vec(), leader))
        }
        INSTALL => {
            let req = pb::InstallSnapshotRequestProto::decode(body).map_err(|e| text(&e))?;
            let req = wire::install_from(req).map_err(|e| text(&e))?;
            let sender = req.vote;
            let resp = raft.install_snapshot(req).await.map_err(|e| text(&e))?;
            let leader = resp.vote <= sender;
            Ok((wire::install_response_to(&resp).encode_to_vec(), leader))
        }
        CAMPAIGN => {
            raft.trigger().elect().await.map_err(|e| text(&e))?;
            Ok((Vec::new(), false))
        }
        other => Err(format!("unknown Raft call kind {other}")),
    }
}

/// Asks the node at `addr` to stand for election at once (a leader ignores it).
pub async fn campaign(dial: &dyn Dial, addr: &str, ttl: Duration) -> io::Result<()> {
    one_call(dial, addr, CAMPAIGN, &[], ttl).await
}

/// Asks the leader at `addr` to hand its leadership to node `to`; answers once it has.
pub async fn hand_over(dial: &dyn Dial, addr: &str, to: NodeId, ttl: Duration) -> io::Result<()> {
    one_call(dial, addr, HAND_OVER, &to.to_be_bytes(), ttl).await
}

/// A call of Ferrite's own on a connection of its own, answered with nothing or an error.
async fn one_call(
    dial: &dyn Dial,
    addr: &str,
    kind: u8,
    body: &[u8],
    ttl: Duration,
) -> io::Result<()> {
    let exchange = async {
        let conn = dial.dial(addr).await?;
        let (mut r, mut w) = conn.into_split();
        write_frame(&mut w, kind, body).await?;
        read_frame(&mut r).await
    };
    match tokio::time::timeout(ttl, exchange).await {
        Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "no answer in time")),
        Ok(Err(e)) => Err(e),
        Ok(Ok((OK, _))) => Ok(()),
        Ok(Ok((_, msg))) => Err(io::Error::other(String::from_utf8_lossy(&msg).into_owned())),
    }
}

/// Makes a [`Peer`] for each NameNode openraft talks to, through `dial`.
#[derive(Clone)]
pub struct Network {
    pub dial: Arc<dyn Dial>,
    /// Where each follower's acceptance of an append is noted (the leader's lease).
    pub acks: Arc<Acks>,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = Peer;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> Peer {
        Peer {
            dial: self.dial.clone(),
            acks: self.acks.clone(),
            target,
            addr: node.addr.clone(),
            conn: None,
        }
    }
}

/// One other NameNode: a connection made on first use and again after it broke.
pub struct Peer {
    dial: Arc<dyn Dial>,
    acks: Arc<Acks>,
    target: NodeId,
    addr: String,
    conn: Option<(BoxRead, BoxWrite)>,
}

/// Why a call got no answer.
enum CallError {
    /// No connection could be made: openraft backs off before trying again.
    Unreachable(io::Error),
    /// The connection broke, timed out, or the answer made no sense.
    Network(io::Error),
}

impl<E: std::error::Error> From<CallError> for RPCError<NodeId, BasicNode, E> {
    fn from(e: CallError) -> Self {
        match e {
            CallError::Unreachable(e) => RPCError::Unreachable(Unreachable::new(&e)),
            CallError::Network(e) => RPCError::Network(NetworkError::new(&e)),
        }
    }
}

impl Peer {
    async fn call(&mut self, kind: u8, body: Vec<u8>, ttl: Duration) -> Result<Vec<u8>, CallError> {
        if self.conn.is_none() {
            let dialed = tokio::time::timeout(ttl, self.dial.dial(&self.addr))
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connect timed out"))
                .and_then(|r| r)
                .map_err(CallError::Unreachable)?;
            let _ = dialed.set_nodelay();
            self.conn = Some(dialed.into_split());
        }
        let (r, w) = self.conn.as_mut().expect("connected");
        let exchange = async {
            write_frame(w, kind, &body).await?;
            read_frame(r).await
        };
        let answer = match tokio::time::timeout(ttl, exchange).await {
            Ok(Ok(a)) => a,
            Ok(Err(e)) => {
                self.conn = None;
                return Err(CallError::Network(e));
            }
            Err(_) => {
                // The answer may still come: the connection cannot be used again.
                self.conn = None;
                let e = io::Error::new(io::ErrorKind::TimedOut, "no answer in time");
                return Err(CallError::Network(e));
            }
        };
        match answer {
            (OK, out) => Ok(out),
            (_, msg) => Err(CallError::Network(io::Error::other(format!(
                "node {} answered: {}",
                self.target,
                String::from_utf8_lossy(&msg)
            )))),
        }
    }
}

fn bad_answer(e: impl std::fmt::Display) -> CallError {
    CallError::Network(io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
}

impl RaftNetwork<TypeConfig> for Peer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        let body = wire::append_to(&rpc).encode_to_vec();
        let sent = tokio::time::Instant::now();
        let out = self.call(APPEND, body, option.hard_ttl()).await?;
        let resp = pb::AppendEntriesResponseProto::decode(&out[..]).map_err(bad_answer)?;
        let resp = wire::append_response_from(resp).map_err(bad_answer)?;
        if !matches!(resp, AppendEntriesResponse::HigherVote(_)) {
            self.acks
                .acked(self.target, rpc.vote.leader_id().term, sent);
        }
        Ok(resp)
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, BasicNode, RaftError<NodeId, InstallSnapshotError>>,
    > {
        let body = wire::install_to(&rpc).encode_to_vec();
        let out = self.call(INSTALL, body, option.hard_ttl()).await?;
        let resp = pb::InstallSnapshotResponseProto::decode(&out[..]).map_err(bad_answer)?;
        Ok(wire::install_response_from(resp).map_err(bad_answer)?)
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        let body = wire::vote_request_to(&rpc).encode_to_vec();
        let out = self.call(VOTE, body, option.hard_ttl()).await?;
        let resp = pb::VoteResponseProto::decode(&out[..]).map_err(bad_answer)?;
        Ok(wire::vote_response_from(resp).map_err(bad_answer)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_round_trip_and_oversized_lengths_are_refused() {
        let mut buf = Vec::new();
        write_frame(&mut buf, APPEND, b"body").await.unwrap();
        let (kind, body) = read_frame(&mut &buf[..]).await.unwrap();
        assert_eq!((kind, &body[..]), (APPEND, &b"body"[..]));
        let huge = ((MAX_FRAME + 1) as u32).to_be_bytes();
        let err = read_frame(&mut &huge[..]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }
}
