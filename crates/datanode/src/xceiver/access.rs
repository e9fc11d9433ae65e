//! Block-token checks for data-transfer ops. A refused op is answered with
//! `ERROR_ACCESS_TOKEN`, which Java clients take as "fetch fresh tokens and retry", and
//! logged with the reason; the connection and the server carry on.

use ferrite_blocktoken::Modes;
use ferrite_proto::common::TokenProto;
use ferrite_proto::hdfs::{BlockOpResponseProto, ExtendedBlockProto, Status};
use ferrite_transfer::io::write_delimited;
use tracing::warn;

use super::{Writer, Xceiver};

/// Checks `token` for `want` on `blk`. On refusal, answers the peer and returns false.
/// `first_bad_link` is set for WRITE_BLOCK, as HDFS does, so that a writer's pipeline
/// logic names this node.
pub(crate) async fn allowed<W: Writer>(
    x: &Xceiver,
    wr: &mut W,
    op: &str,
    blk: &ExtendedBlockProto,
    token: Option<&TokenProto>,
    want: Modes,
    first_bad_link: Option<String>,
) -> bool {
    let checked =
        x.link
            .keys
            .read()
            .check(token, crate::now_ms(), &x.link.pool, blk.block_id, want);
    let Err(e) = checked else { return true };
    let msg = format!(
        "Block token verification failed: op={op}, block=blk_{}_{}, reason={e}",
        blk.block_id, blk.generation_stamp
    );
    warn!("{msg}");
    let resp = BlockOpResponseProto {
        status: Status::ErrorAccessToken as i32,
        message: Some(msg),
        first_bad_link,
        ..Default::default()
    };
    let _ = write_delimited(wr, &resp).await;
    false
}
