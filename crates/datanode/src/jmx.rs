//! The DataNode's `/jmx` beans, under HDFS 3.4.1's names, so that monitoring pointed at an
//! HDFS DataNode's HTTP port reads a Ferrite one unchanged:
//! - `FSDatasetState`: capacity, use and the number of failed volumes;
//! - `FSDatasetState-<uuid>`: the same with where the failed volumes are (the alert HDFS
//!   operators set on volume failures reads these);
//! - `DataNodeInfo`: ports, version, cluster id, and each volume's use as JSON;
//! - Ferrite's own `ReadServer`: the read server's counters.
//!
//! Attributes Ferrite cannot fill truthfully are left out. [`Facts`] is gathered in one
//! place; [`beans`] is pure.

use std::path::PathBuf;
use std::sync::Arc;

use ferrite_http::{Bean, Beans};
use serde_json::{json, Map, Value};

use crate::readserver::metrics::Snapshot;
use crate::storage::Dataset;

const DN: &str = "Hadoop:service=DataNode,name=";

/// One volume as monitoring sees it.
#[derive(Debug, Clone, Default)]
pub(crate) struct VolumeFacts {
    pub root: PathBuf,
    pub failed: bool,
    pub capacity: u64,
    /// Free bytes less what replicas being written are promised (what heartbeats report).
    pub remaining: u64,
    pub reserved_for_replicas: u64,
    pub used: u64,
    pub blocks: u64,
}

/// What stays fixed for a DataNode's life.
#[derive(Debug, Clone, Default)]
pub(crate) struct NodeInfo {
    pub uuid: String,
    pub cluster_id: String,
    pub started_ms: u64,
    pub data_port: u16,
    pub ipc_port: u16,
    pub http_port: u16,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Facts {
    pub node: NodeInfo,
    pub volumes: Vec<VolumeFacts>,
    pub reads: Option<Snapshot>,
}

impl Facts {
    pub(crate) fn gather(ds: &Dataset, node: &NodeInfo) -> Facts {
        let usage = ds.usage();
        let volumes = ds
            .volumes
            .iter()
            .zip(usage)
            .map(|(v, (used, blocks))| {
                let failed = v.is_failed();
                let (capacity, remaining) = if failed { (0, 0) } else { v.usable() };
                VolumeFacts {
                    root: v.root.clone(),
                    failed,
                    capacity,
                    remaining,
                    reserved_for_replicas: v.reserved(),
                    used,
                    blocks,
                }
            })
            .collect();
        Facts {
            node: node.clone(),
            volumes,
            reads: Some(ds.reads().snapshot()),
        }
    }
}

/// The DataNode's beans, answered afresh for every request.
pub(crate) struct DataNodeBeans {
    pub ds: Arc<Dataset>,
    pub node: NodeInfo,
}

impl Beans for DataNodeBeans {
    fn beans(&self) -> Vec<Bean> {
        beans(&Facts::gather(&self.ds, &self.node))
    }
}

pub(crate) fn beans(f: &Facts) -> Vec<Bean> {
    let mut out = vec![
        dataset_state(f, format!("{DN}FSDatasetState")),
        dataset_state(f, format!("{DN}FSDatasetState-{}", f.node.uuid)).with(
            "FailedStorageLocations",
            failed(f)
                .map(|v| v.root.display().to_string())
                .collect::<Vec<_>>(),
        ),
        info(f),
    ];
    if let Some(r) = &f.reads {
        out.push(read_server(r));
    }
    out
}

fn failed(f: &Facts) -> impl Iterator<Item = &VolumeFacts> {
    f.volumes.iter().filter(|v| v.failed)
}

fn in_service(f: &Facts) -> impl Iterator<Item = &VolumeFacts> {
    f.volumes.iter().filter(|v| !v.failed)
}

fn dataset_state(f: &Facts, name: String) -> Bean {
    let roots: Vec<String> = f
        .volumes
        .iter()
        .map(|v| v.root.display().to_string())
        .collect();
    Bean::new(name, "FSDatasetState")
        .with("tag.Context", "FSDatasetState")
        .with("StorageInfo", format!("FSDataset{{dirpath='{roots:?}'}}"))
        .with("Capacity", in_service(f).map(|v| v.capacity).sum::<u64>())
        .with("DfsUsed", in_service(f).map(|v| v.used).sum::<u64>())
        .with("Remaining", in_service(f).map(|v| v.remaining).sum::<u64>())
        .with("NumFailedVolumes", failed(f).count())
}

fn info(f: &Facts) -> Bean {
    let n = &f.node;
    // Volumes in service, keyed by directory, as HDFS gives them (as JSON in a string).
    let mut volumes = Map::new();
    for v in in_service(f) {
        volumes.insert(
            v.root.display().to_string(),
            json!({
                "numBlocks": v.blocks,
                "usedSpace": v.used,
                "freeSpace": v.remaining,
                "reservedSpace": 0,
                "storageType": "DISK",
                "reservedSpaceForReplicas": v.reserved_for_replicas,
            }),
        );
    }
    Bean::new(format!("{DN}DataNodeInfo"), "DataNodeInfo")
        .with("Version", format!("ferrite {}", env!("CARGO_PKG_VERSION")))
        .with("SoftwareVersion", env!("CARGO_PKG_VERSION"))
        .with("ClusterId", n.cluster_id.clone())
        .with("DataPort", n.data_port.to_string())
        .with("RpcPort", n.ipc_port.to_string())
        .with("HttpPort", n.http_port.to_string())
        .with("DNStartedTimeInMillis", n.started_ms)
        .with("SecurityEnabled", false)
        .with("VolumeInfo", Value::Object(volumes).to_string())
}

fn read_server(r: &Snapshot) -> Bean {
    Bean::new("Ferrite:service=DataNode,name=ReadServer", "ReadServer")
        .with("tag.Context", "ferrite")
        .with("ActiveReads", r.active_reads)
        .with("Reads", r.reads)
        .with("BytesBySendfile", r.bytes_sendfile)
        .with("BytesByCopy", r.bytes_copy)
        .with("HandlesOpen", r.handles_open)
        .with("HandlesCached", r.handles_cached)
        .with("CacheHits", r.cache_hits)
        .with("CacheMisses", r.cache_misses)
        .with("CacheEvictions", r.cache_evictions)
        .with("IoQueuedPerVolume", r.io_queued.clone())
        .with("IoRunningPerVolume", r.io_running.clone())
        .with("Threads", r.threads)
        .with("OpenDescriptors", r.fds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> Facts {
        let vol = |root: &str, failed: bool| VolumeFacts {
            root: root.into(),
            failed,
            capacity: 1000,
            remaining: 600,
            reserved_for_replicas: 100,
            used: 300,
            blocks: 3,
        };
        Facts {
            node: NodeInfo {
                uuid: "u-1".into(),
                data_port: 9866,
                ..Default::default()
            },
            volumes: vec![vol("/d1", false), vol("/d2", true)],
            reads: None,
        }
    }

    fn bean<'a>(all: &'a [Bean], name: &str) -> &'a Bean {
        all.iter().find(|b| b.name.ends_with(name)).unwrap()
    }

    #[test]
    fn a_failed_volume_is_counted_and_named_and_its_space_left_out() {
        let all = beans(&facts());
        let state = bean(&all, "name=FSDatasetState");
        assert_eq!(state.get("NumFailedVolumes"), Some(&json!(1)));
        assert_eq!(state.get("Capacity"), Some(&json!(1000)));
        assert_eq!(state.get("DfsUsed"), Some(&json!(300)));
        let per_uuid = bean(&all, "name=FSDatasetState-u-1");
        assert_eq!(
            per_uuid.get("FailedStorageLocations"),
            Some(&json!(["/d2"]))
        );
        let info = bean(&all, "name=DataNodeInfo");
        assert_eq!(info.get("DataPort"), Some(&json!("9866")));
        let volumes: Value =
            serde_json::from_str(info.get("VolumeInfo").unwrap().as_str().unwrap()).unwrap();
        assert_eq!(volumes["/d1"]["numBlocks"], 3);
        assert_eq!(volumes["/d1"]["reservedSpaceForReplicas"], 100);
        assert!(
            volumes.get("/d2").is_none(),
            "a failed volume is not in VolumeInfo"
        );
    }
}
