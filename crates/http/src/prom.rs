//! Prometheus's text exposition of a server's metrics, as Hadoop's `PrometheusMetricsSink`
//! names them (`/prom`; HDFS serves it only with `hadoop.prometheus.endpoint.enabled`,
//! Ferrite always, and at `/metrics` too).
//!
//! The metrics are the beans `/jmx` shows that come from metrics records (those with a
//! `tag.Context`): each numeric attribute becomes `<record>_<metric>` in snake case, and
//! each `tag.*` attribute a label, as Hadoop's sink turns a record into samples. Pure.

use std::fmt::Write;

use serde_json::Value;

use crate::jmx::Bean;

/// Hadoop's `prometheusName`: the record and metric names, CamelCase split into
/// lower-case words joined by `_` (`FSNamesystem` + `FilesTotal` → `fs_namesystem_files_total`),
/// anything outside `[a-zA-Z0-9_]` turned into `_`.
pub(crate) fn metric_name(record: &str, metric: &str) -> String {
    let joined: String = format!("{}{}", capitalize(record), capitalize(metric))
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let c: Vec<char> = joined.chars().collect();
    let mut out = String::with_capacity(c.len() + 8);
    for (i, &ch) in c.iter().enumerate() {
        if i > 0 && ch.is_ascii_uppercase() {
            let prev = c[i - 1];
            let next_lower = c.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            // A new word: after a lower-case letter or digit, or an upper-case letter that
            // starts a capitalised word after an acronym (`FSName` → `FS`, `Name`).
            let after_word = !(prev.is_ascii_uppercase() || prev == '_');
            if (after_word || next_lower) && prev != '_' {
                out.push('_');
            }
        }
        out.push(ch.to_ascii_lowercase());
    }
    out
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The metrics record a bean comes from: the RPC sources' records are `rpc` and
/// `rpcdetailed` (their bean names carry the port); every other record is named as its bean.
fn record_of(b: &Bean) -> Option<String> {
    let context = b.get("tag.Context")?.as_str()?;
    Some(match context {
        "rpc" | "rpcdetailed" => context.to_string(),
        _ => b.modeler_type.clone(),
    })
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Counters only grow (operation counts); everything else is a gauge.
fn kind(metric: &str) -> &'static str {
    if metric.ends_with("NumOps") || metric.ends_with("Ops") || metric.ends_with("Count") {
        "counter"
    } else {
        "gauge"
    }
}

/// The exposition of `beans`, with `hostname` as every sample's `hostname` label.
pub(crate) fn exposition(beans: &[Bean], hostname: &str) -> String {
    let mut out = String::new();
    let mut typed = std::collections::HashSet::new();
    for b in beans {
        let Some(record) = record_of(b) else {
            continue;
        };
        let mut labels: Vec<(String, String)> = b
            .attrs
            .iter()
            .filter_map(|(k, v)| {
                let tag = k.strip_prefix("tag.")?;
                let v = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                Some((tag.to_ascii_lowercase(), v))
            })
            .collect();
        if !labels.iter().any(|(k, _)| k == "hostname") {
            labels.push(("hostname".into(), hostname.to_string()));
        }
        let labels = labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
            .collect::<Vec<_>>()
            .join(",");
        for (k, v) in &b.attrs {
            if k.starts_with("tag.") {
                continue;
            }
            let n = match v {
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => u8::from(*b).to_string(),
                _ => continue,
            };
            let name = metric_name(&record, k);
            if typed.insert(name.clone()) {
                let _ = writeln!(out, "# TYPE {name} {}", kind(k));
            }
            let _ = writeln!(out, "{name}{{{labels}}} {n}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_hadoops() {
        assert_eq!(
            metric_name("FSNamesystem", "FilesTotal"),
            "fs_namesystem_files_total"
        );
        assert_eq!(
            metric_name("rpc", "RpcQueueTimeNumOps"),
            "rpc_rpc_queue_time_num_ops"
        );
        assert_eq!(
            metric_name("NameNodeActivity", "CreateFileOps"),
            "name_node_activity_create_file_ops"
        );
        assert_eq!(
            metric_name("JvmMetrics", "MemHeapUsedM"),
            "jvm_metrics_mem_heap_used_m"
        );
        assert_eq!(
            metric_name("FSDatasetState", "DfsUsed"),
            "fs_dataset_state_dfs_used"
        );
        assert_eq!(metric_name("a.b", "c-d"), "a_b_c_d");
    }

    #[test]
    fn record_beans_become_labelled_samples_and_others_stay_out() {
        let beans = vec![
            Bean::new("Hadoop:service=NameNode,name=FSNamesystem", "FSNamesystem")
                .with("tag.Context", "dfs")
                .with("tag.HAState", "active")
                .with("FilesTotal", 7)
                .with("Name \"x\"", "not a number"),
            Bean::new(
                "Hadoop:service=NameNode,name=RpcActivityForPort9000",
                "RpcActivityForPort9000",
            )
            .with("tag.port", "9000")
            .with("tag.Context", "rpc")
            .with("RpcQueueTimeNumOps", 3),
            Bean::new("Hadoop:service=NameNode,name=NameNodeInfo", "NameNodeInfo").with("Total", 1),
        ];
        let text = exposition(&beans, "h1");
        assert_eq!(
            text,
            "# TYPE fs_namesystem_files_total gauge\n\
             fs_namesystem_files_total{context=\"dfs\",hastate=\"active\",hostname=\"h1\"} 7\n\
             # TYPE rpc_rpc_queue_time_num_ops counter\n\
             rpc_rpc_queue_time_num_ops{port=\"9000\",context=\"rpc\",hostname=\"h1\"} 3\n"
        );
    }
}
