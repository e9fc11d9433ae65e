//! Compiles Ferrite's own `.proto` files without a system `protoc`: protox parses them into a
//! descriptor set in pure Rust, and prost-build generates the types from it.

fn main() {
    let files = [
        "proto/RpcHeader.proto",
        "proto/IpcConnectionContext.proto",
        "proto/ProtobufRpcEngine.proto",
        "proto/Security.proto",
        "proto/HAServiceProtocol.proto",
        "proto/hdfs.proto",
        "proto/ClientNamenodeProtocol.proto",
        "proto/HdfsServer.proto",
        "proto/DatanodeProtocol.proto",
        "proto/datatransfer.proto",
        "proto/ClientDatanodeProtocol.proto",
        "proto/InterDatanodeProtocol.proto",
        "proto/NamenodeProtocol.proto",
        "proto/FerriteBlockToken.proto",
        "proto/FerriteSummary.proto",
        "proto/FerriteDataNode.proto",
        "proto/FerriteNameNode.proto",
        "proto/FerriteRaft.proto",
    ];
    for f in &files {
        println!("cargo:rerun-if-changed={f}");
    }
    let fds = protox::compile(files, ["proto"]).expect("parse .proto files");
    prost_build::Config::new()
        // Token bytes are shared by every block of a reply, and journal batches go out as
        // the syncer wrote them: Bytes clones without copying. A call's clientId is read
        // out of the request frame and echoed in its reply: two copies per call otherwise.
        .bytes([
            ".hadoop.common.TokenProto",
            ".ferrite.ReadEditsResponseProto",
            // A replicated batch is the journal's bytes, passed on without a copy.
            ".ferrite.raft.EntryProto.normal",
            ".hadoop.common.RpcRequestHeaderProto.clientId",
            ".hadoop.common.RpcResponseHeaderProto.clientId",
        ])
        .compile_fds(fds)
        .expect("generate Rust from .proto files");
}
