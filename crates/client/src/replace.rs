//! Replacing a pipeline's lost DataNodes, as HDFS clients do by default
//! (`dfs.client.block.write.replace-datanode-on-failure.policy` DEFAULT): the NameNode
//! names a new node (getAdditionalDatanode), a surviving node copies the acknowledged
//! bytes to it (TRANSFER_BLOCK), and the recovered pipeline includes it. Without this a
//! block whose pipeline lost two nodes goes on with one copy, and losing that one loses
//! bytes an hflush had acknowledged.

use std::time::Duration;

use ferrite_proto::hdfs::*;
use ferrite_transfer::io::{read_delimited, write_op};
use ferrite_transfer::op;
use tokio::io::BufReader;

use crate::block_reader::{connect, op_header, xfer_addr};
use crate::error::{Error, Result};
use crate::shared::Inner;

/// How long the source may take to copy the acknowledged bytes and answer.
const TRANSFER_TIMEOUT: Duration = Duration::from_secs(60);

/// HDFS's DEFAULT policy: with a replication of three or more, a lost node is replaced
/// when at most half the nodes are left, or when the block's bytes were hflushed (or
/// appended to): those are acknowledged, and must not rest on fewer copies.
pub(crate) fn wanted(replication: u16, left: usize, flushed: bool) -> bool {
    let r = usize::from(replication);
    r >= 3 && left > 0 && left < r && (left <= r / 2 || flushed)
}

/// Adds one DataNode to `lb`'s pipeline, which lost `lost`, holding the first `acked`
/// bytes of the block as its surviving nodes do. `lb` keeps the block's current stamp;
/// on success its nodes are the NameNode's new list.
pub(crate) async fn add_node(
    fs: &Inner,
    path: &str,
    file_id: u64,
    lb: &mut LocatedBlockProto,
    lost: &[DatanodeInfoProto],
    acked: u64,
) -> Result<()> {
    let mut blk = lb.b.clone();
    blk.num_bytes = Some(acked);
    let req = GetAdditionalDatanodeRequestProto {
        src: path.to_string(),
        blk,
        existings: lb.locs.clone(),
        excludes: lost.to_vec(),
        num_additional_nodes: 1,
        client_name: fs.client_name.clone(),
        existing_storage_uuids: lb.storage_i_ds.clone(),
        file_id: Some(file_id),
    };
    let r: GetAdditionalDatanodeResponseProto = fs.nn.call("getAdditionalDatanode", &req).await?;
    let mut got = r.block;
    let is_new = |d: &DatanodeInfoProto| {
        !lb.locs
            .iter()
            .any(|e| e.id.datanode_uuid == d.id.datanode_uuid)
    };
    let Some(at) = got.locs.iter().position(is_new) else {
        return Err(Error::DataNode(format!(
            "{path}: getAdditionalDatanode named no new DataNode"
        )));
    };
    if acked > 0 {
        transfer(fs, lb, &got, at, acked).await?;
    }
    // The NameNode's list is the pipeline from now on (existing nodes and the new one),
    // with the token and stamp the writer already holds.
    got.b = lb.b.clone();
    got.block_token = lb.block_token.clone();
    *lb = got;
    Ok(())
}

/// TRANSFER_BLOCK to the first surviving node: copy the block's first `acked` bytes to
/// node `at` of `to` (getAdditionalDatanode's answer), and answer once they are there.
async fn transfer(
    fs: &Inner,
    lb: &LocatedBlockProto,
    to: &LocatedBlockProto,
    at: usize,
    acked: u64,
) -> Result<()> {
    let source = lb
        .locs
        .first()
        .ok_or_else(|| Error::DataNode("no surviving DataNode to copy from".into()))?;
    // The block as the surviving nodes hold it, with the COPY token getAdditionalDatanode
    // gave (the pipeline's own allows WRITE only).
    let mut from = lb.clone();
    from.b.num_bytes = Some(acked);
    from.block_token = to.block_token.clone();
    let req = OpTransferBlockProto {
        header: op_header(&from, &fs.client_name),
        targets: vec![to.locs[at].clone()],
        target_storage_types: to.storage_types.get(at).copied().into_iter().collect(),
        target_storage_ids: to.storage_i_ds.get(at).cloned().into_iter().collect(),
    };
    let addr = xfer_addr(source);
    let answer = async {
        let (rd, mut wr) = connect(&*fs.dial, &addr).await?;
        write_op(&mut wr, op::TRANSFER_BLOCK, &req).await?;
        let mut rd = BufReader::new(rd);
        let resp: BlockOpResponseProto = read_delimited(&mut rd).await?;
        Ok::<_, Error>(resp)
    };
    let resp = tokio::time::timeout(TRANSFER_TIMEOUT, answer)
        .await
        .map_err(|_| Error::DataNode(format!("{addr}: no answer to TRANSFER_BLOCK")))??;
    if resp.status != Status::Success as i32 {
        return Err(Error::DataNode(format!(
            "{addr}: TRANSFER_BLOCK refused: {}",
            resp.message.unwrap_or_default()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::wanted;

    #[test]
    fn the_default_policy_replaces_when_half_is_gone_or_the_bytes_were_flushed() {
        assert!(!wanted(3, 2, false), "one of three lost, nothing flushed");
        assert!(wanted(3, 2, true), "one of three lost after an hflush");
        assert!(wanted(3, 1, false), "two of three lost");
        assert!(!wanted(2, 1, true), "replication below three never");
        assert!(!wanted(3, 3, true), "nothing lost");
        assert!(!wanted(3, 0, true), "nothing to copy from");
        assert!(wanted(5, 2, false) && !wanted(5, 3, false));
    }
}
