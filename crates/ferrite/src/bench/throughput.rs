//! NNThroughputBenchmark-style operations: an untimed generation phase where the op needs
//! existing files, then `count` timed operations spread over the connections.

use std::sync::Arc;
use std::time::Instant;

use anyhow::bail;

use super::conn::Conn;

pub(super) const BASE: &str = "/nnbench";
pub(super) const OPS: [&str; 6] = ["create", "mkdirs", "open", "fileStatus", "rename", "delete"];

/// Four files per leaf directory, 64 leaves per middle directory, a subtree per client.
pub(super) fn file_path(op: &str, client: usize, i: usize) -> String {
    format!("{BASE}/{op}/t{client}/d{}/e{}/f{i}", i / 256, i / 4)
}

fn dir_path(client: usize, i: usize) -> String {
    format!("{BASE}/mkdirs/t{client}/d{}/e{i}", i / 256)
}

fn client_name(client: usize) -> String {
    format!("nnbench-client-{client}")
}

/// What one timed run measured.
pub(super) struct Outcome {
    pub ops: usize,
    pub secs: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

impl Outcome {
    pub(super) fn ops_per_s(&self) -> f64 {
        self.ops as f64 / self.secs
    }
}

async fn run_clients<F, Fut>(conns: &[Arc<Conn>], per: usize, f: F) -> anyhow::Result<Vec<u32>>
where
    F: Fn(Arc<Conn>, usize, usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = anyhow::Result<()>> + Send,
{
    let mut tasks = Vec::new();
    for (k, c) in conns.iter().enumerate() {
        let (c, f) = (c.clone(), f.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(per);
            for i in 0..per {
                let t0 = Instant::now();
                f(c.clone(), k, i).await?;
                lat.push(t0.elapsed().as_micros() as u32);
            }
            anyhow::Ok(lat)
        }));
    }
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await??);
    }
    Ok(lat)
}

/// Creates and closes the files an `open`/`fileStatus`/`rename`/`delete` run works on.
pub(super) async fn generate(conns: &[Arc<Conn>], op: &str, per: usize) -> anyhow::Result<()> {
    let op = op.to_string();
    run_clients(conns, per, move |c, k, i| {
        let p = file_path(&op, k, i);
        async move {
            c.create(&p, &client_name(k)).await?;
            c.complete(&p, &client_name(k)).await
        }
    })
    .await?;
    Ok(())
}

/// Each client's inputs for a timed run, made before the clock starts, as
/// NNThroughputBenchmark's `generateInputs` does: the timed phase then measures the
/// NameNode, not the formatting of paths (a few percent of an in-process open).
struct Inputs {
    /// The path each operation works on, per client.
    paths: Vec<Vec<String>>,
    /// Where a rename moves it (empty for other ops).
    renamed: Vec<Vec<String>>,
    clients: Vec<String>,
}

impl Inputs {
    fn new(op: &str, clients: usize, per: usize) -> Inputs {
        let path = |k, i| match op {
            "mkdirs" => dir_path(k, i),
            _ => file_path(op, k, i),
        };
        let paths: Vec<Vec<String>> = (0..clients)
            .map(|k| (0..per).map(|i| path(k, i)).collect())
            .collect();
        let renamed = match op {
            "rename" => paths
                .iter()
                .map(|ps| ps.iter().map(|p| format!("{p}.r")).collect())
                .collect(),
            _ => Vec::new(),
        };
        Inputs {
            paths,
            renamed,
            clients: (0..clients).map(client_name).collect(),
        }
    }
}

/// The timed phase of `op`: `per` operations on each connection.
pub(super) async fn timed(conns: &[Arc<Conn>], op: &str, per: usize) -> anyhow::Result<Outcome> {
    let Some(&op) = OPS.iter().find(|&&o| o == op) else {
        bail!("unknown op {op}");
    };
    let inputs = Arc::new(Inputs::new(op, conns.len(), per));
    let started = Instant::now();
    let mut lat = run_clients(conns, per, move |c, k, i| {
        let inputs = inputs.clone();
        async move {
            let p = &inputs.paths[k][i];
            match op {
                "create" => c.create(p, &inputs.clients[k]).await,
                "mkdirs" => c.mkdirs(p).await,
                "open" => c.open(p).await,
                "fileStatus" => c.stat(p).await,
                "rename" => c.rename(p, &inputs.renamed[k][i]).await,
                _ => match c.delete(p, false).await? {
                    true => Ok(()),
                    false => bail!("delete({p}) returned false"),
                },
            }
        }
    })
    .await?;
    let secs = started.elapsed().as_secs_f64();
    lat.sort_unstable();
    let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)] as f64 / 1000.0;
    Ok(Outcome {
        ops: lat.len(),
        secs,
        p50_ms: pct(0.5),
        p99_ms: pct(0.99),
    })
}

/// Whether `op` needs files made beforehand.
pub(super) fn needs_files(op: &str) -> bool {
    matches!(op, "open" | "fileStatus" | "rename" | "delete")
}
