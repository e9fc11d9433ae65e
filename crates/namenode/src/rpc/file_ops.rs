//! append, truncate and concat: the calls that change an existing file's blocks.

use ferrite_ipc::{Router, CLIENT_PROTOCOL};
use ferrite_proto::hdfs::{
    AppendRequestProto, AppendResponseProto, ConcatRequestProto, ConcatResponseProto,
    TruncateRequestProto, TruncateResponseProto,
};

use super::convert::{located_block, status_proto};
use super::{Nn, Register, Res};
use crate::service::NameNodeService;
use crate::service::{Admitted, Operation};

const FLAG_NEW_BLOCK: u32 = 0x20;

pub fn register(r: &mut Router<NameNodeService>) {
    let p = CLIENT_PROTOCOL;
    r.op(p, Operation::Append, append)
        .op(p, Operation::Truncate, truncate)
        .op(p, Operation::Concat, concat);
}

pub async fn append(nn: Nn, who: Admitted, req: AppendRequestProto) -> Res<AppendResponseProto> {
    let new_block = req.flag.unwrap_or(0) & FLAG_NEW_BLOCK != 0;
    let a = nn
        .append(&who, &req.src, &req.client_name, new_block)
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
    who: Admitted,
    req: TruncateRequestProto,
) -> Res<TruncateResponseProto> {
    let result = nn
        .truncate(&who, &req.src, req.new_length, &req.client_name)
        .await?;
    Ok(TruncateResponseProto { result })
}

pub async fn concat(nn: Nn, who: Admitted, req: ConcatRequestProto) -> Res<ConcatResponseProto> {
    nn.concat(&who, &req.trg, &req.srcs).await?;
    Ok(ConcatResponseProto {})
}
