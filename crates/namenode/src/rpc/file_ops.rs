//! append, truncate and concat: the calls that change an existing file's blocks.

use ferrite_ipc::{CallCtx, Router, CLIENT_PROTOCOL};
use ferrite_proto::hdfs::{
    AppendRequestProto, AppendResponseProto, ConcatRequestProto, ConcatResponseProto,
    TruncateRequestProto, TruncateResponseProto,
};

use super::convert::{located_block, status_proto};
use super::{kind, origin, Nn, Res};
use crate::service::NameNodeService;

const FLAG_NEW_BLOCK: u32 = 0x20;

pub fn register(r: &mut Router<NameNodeService>) {
    let p = CLIENT_PROTOCOL;
    r.method(p, "append", kind("append"), append)
        .method(p, "truncate", kind("truncate"), truncate)
        .method(p, "concat", kind("concat"), concat);
}

pub async fn append(nn: Nn, ctx: CallCtx, req: AppendRequestProto) -> Res<AppendResponseProto> {
    let new_block = req.flag.unwrap_or(0) & FLAG_NEW_BLOCK != 0;
    let a = nn
        .append(origin(&ctx), &req.src, &req.client_name, new_block)
        .await?;
    let pool = &nn.identity().block_pool_id;
    Ok(AppendResponseProto {
        block: a.block.as_ref().map(|b| located_block(pool, b)),
        stat: a.status.as_ref().map(status_proto),
    })
}

/// truncate: true when the file is ready at once, false while block recovery cuts the
/// last block (`hdfs dfs -truncate -w` waits for the file to close).
pub async fn truncate(
    nn: Nn,
    ctx: CallCtx,
    req: TruncateRequestProto,
) -> Res<TruncateResponseProto> {
    let result = nn
        .truncate(origin(&ctx), &req.src, req.new_length, &req.client_name)
        .await?;
    Ok(TruncateResponseProto { result })
}

pub async fn concat(nn: Nn, ctx: CallCtx, req: ConcatRequestProto) -> Res<ConcatResponseProto> {
    nn.concat(&ctx.user, &req.trg, &req.srcs).await?;
    Ok(ConcatResponseProto {})
}
