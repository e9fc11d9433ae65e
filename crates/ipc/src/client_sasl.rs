//! The client's side of a secure connection: when this process has logged in with
//! Kerberos ([`login`], Hadoop's UGI login user), each connection runs SASL before its
//! connection context — NEGOTIATE, then GSSAPI with the service and host the server
//! announces, until SUCCESS — and names the login principal as its user.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use ferrite_kerberos::gss::Credential;
use ferrite_kerberos::sasl::{GssapiClient, Protection};
use ferrite_proto::common::rpc_response_header_proto::RpcStatusProto;
use ferrite_proto::common::rpc_sasl_proto::SaslState;
use ferrite_proto::common::{RpcResponseHeaderProto, RpcSaslProto};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::client::ClientError;
use crate::frame;

/// This process's Kerberos identity.
pub struct KerberosLogin {
    /// `user@REALM` or `service/host@REALM`: what connections name as their user.
    pub principal: String,
    pub cred: Arc<Credential>,
}

static LOGIN: OnceLock<KerberosLogin> = OnceLock::new();

/// Makes every later connection of this process authenticate as `login`. Once per
/// process, as Hadoop's login user: logging in again as the same principal (several
/// DataNodes of one process) keeps the first login; as another is refused.
pub fn login(login: KerberosLogin) -> Result<(), String> {
    match LOGIN.set(login) {
        Ok(()) => Ok(()),
        Err(l) if LOGIN.get().is_some_and(|c| c.principal == l.principal) => Ok(()),
        Err(l) => Err(format!("already logged in; {} refused", l.principal)),
    }
}

/// The login, when the process has one.
pub(crate) fn current() -> Option<&'static KerberosLogin> {
    LOGIN.get()
}

fn sasl_header(client_id: &[u8; 16]) -> ferrite_proto::common::RpcRequestHeaderProto {
    crate::client::request_header(frame::CALL_ID_SASL, client_id, -1)
}

async fn send<W: AsyncWrite + Unpin>(
    wr: &mut W,
    client_id: &[u8; 16],
    msg: &RpcSaslProto,
) -> Result<(), ClientError> {
    let header = sasl_header(client_id);
    wr.write_all(&frame::encode_frame(&[&header, msg])).await?;
    Ok(())
}

async fn receive<R: AsyncRead + Unpin>(rd: &mut R) -> Result<RpcSaslProto, ClientError> {
    let len = rd.read_u32().await? as usize;
    if len > 1 << 20 {
        return Err(ClientError::BadReply(format!("SASL reply of {len} bytes")));
    }
    let mut buf = vec![0u8; len];
    rd.read_exact(&mut buf).await?;
    let mut buf = Bytes::from(buf);
    let bad = |e: frame::FrameError| ClientError::BadReply(e.to_string());
    let header: RpcResponseHeaderProto =
        frame::decode_delimited(&mut buf, "RpcResponseHeaderProto").map_err(bad)?;
    if header.status != RpcStatusProto::Success as i32 {
        return Err(ClientError::Remote {
            class: header.exception_class_name.unwrap_or_default(),
            message: header.error_msg.unwrap_or_default(),
            fatal: true,
        });
    }
    frame::decode_delimited(&mut buf, "RpcSaslProto").map_err(bad)
}

fn failed(msg: impl std::fmt::Display) -> ClientError {
    ClientError::Remote {
        class: "javax.security.sasl.SaslException".into(),
        message: msg.to_string(),
        fatal: true,
    }
}

/// Runs the SASL exchange on a connection whose preamble asked for SASL. Returns once
/// the server said SUCCESS (a SIMPLE-only server says so at once).
pub(crate) async fn authenticate<R, W>(
    rd: &mut R,
    wr: &mut W,
    client_id: &[u8; 16],
    login: &KerberosLogin,
) -> Result<(), ClientError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let negotiate = RpcSaslProto {
        state: SaslState::Negotiate as i32,
        ..Default::default()
    };
    send(wr, client_id, &negotiate).await?;
    let offer = receive(rd).await?;
    if offer.state == SaslState::Success as i32 {
        return Ok(());
    }
    let auth = offer
        .auths
        .iter()
        .find(|a| a.method == "KERBEROS" && a.mechanism == "GSSAPI")
        .ok_or_else(|| {
            let methods: Vec<&str> = offer.auths.iter().map(|a| a.method.as_str()).collect();
            ClientError::Remote {
                class: "org.apache.hadoop.security.AccessControlException".into(),
                message: format!("Client cannot authenticate via:{methods:?}"),
                fatal: true,
            }
        })?;
    let target = format!(
        "{}@{}",
        auth.protocol.as_deref().unwrap_or_default(),
        auth.server_id.as_deref().unwrap_or_default()
    );
    let mut gss = GssapiClient::new(&login.cred, &target, vec![Protection::Authentication]);
    let token = gss.start().map_err(failed)?;
    let mut chosen = auth.clone();
    chosen.challenge = None;
    let initiate = RpcSaslProto {
        state: SaslState::Initiate as i32,
        token: Some(token),
        auths: vec![chosen],
        ..Default::default()
    };
    send(wr, client_id, &initiate).await?;
    loop {
        let reply = receive(rd).await?;
        match SaslState::try_from(reply.state) {
            Ok(SaslState::Challenge) => {
                let answer = gss
                    .step(reply.token.as_deref().unwrap_or_default())
                    .map_err(failed)?;
                let response = RpcSaslProto {
                    state: SaslState::Response as i32,
                    token: Some(answer),
                    ..Default::default()
                };
                send(wr, client_id, &response).await?;
            }
            Ok(SaslState::Success) => {
                gss.finish().map_err(failed)?;
                return Ok(());
            }
            _ => return Err(failed(format!("unexpected SASL state {}", reply.state))),
        }
    }
}
