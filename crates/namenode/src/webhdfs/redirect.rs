//! The data operations' first step: OPEN, GETFILECHECKSUM and APPEND go to a DataNode that
//! holds the bytes, CREATE to one near the client, as HDFS's `chooseDatanode` decides; the
//! answer is a `307` to that node's HTTP port (or, with `noredirect=true`, its URL as JSON).

use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use ferrite_http::webhdfs::{encode_path, encode_value, json_ok, Params, WebError, PREFIX};
use serde_json::json;

use super::{web, Answer, Request};
use crate::service::{Admitted, NodeFilter, Operation};

/// Where a redirect sends the client: a DataNode's address and HTTP port.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Target {
    pub host: String,
    pub http_port: u32,
}

impl Request<'_> {
    pub(super) async fn redirect(&self) -> Answer {
        let who = self.admit(match self.op.as_str() {
            "CREATE" => Operation::Create,
            "APPEND" => Operation::Append,
            _ => Operation::GetBlockLocations,
        })?;
        let noredirect = self.params.bool("noredirect", false)?;
        let target = self.choose_datanode(&who).await?;
        let url = location(
            &target,
            &self.op,
            &self.path,
            &self.params,
            &self.w.rpc_addr,
        )?;
        if noredirect {
            return Ok(json_ok(json!({ "Location": url })));
        }
        Ok((
            StatusCode::TEMPORARY_REDIRECT,
            [
                (header::LOCATION, url),
                (header::CONTENT_TYPE, "application/octet-stream".into()),
            ],
        )
            .into_response())
    }

    async fn choose_datanode(&self, who: &Admitted) -> Result<Target, WebError> {
        if self.op != "CREATE" {
            let st = self
                .nn()
                .file_info(who, &self.path)
                .map_err(web)?
                .ok_or_else(|| {
                    WebError::new(
                        "java.io.FileNotFoundException",
                        format!("File {} not found.", self.path),
                    )
                })?;
            let offset = self.params.long("offset")?.unwrap_or(0);
            if self.op == "OPEN" && (offset < 0 || (offset as u64 >= st.len && st.len > 0)) {
                return Err(WebError::new(
                    ferrite_http::webhdfs::IO,
                    format!(
                        "Offset={offset} out of the range [0, {}); OPEN, path={}",
                        st.len, self.path
                    ),
                ));
            }
            if st.len > 0 && !st.is_dir {
                let at = if self.op == "OPEN" {
                    offset as u64
                } else {
                    st.len - 1
                };
                let blocks = self.blocks(who, at, 1).await?;
                if let Some(node) = blocks.first_node() {
                    return Ok(Target {
                        host: node["ipAddr"].as_str().unwrap_or_default().to_string(),
                        http_port: node["infoPort"].as_u64().unwrap_or(0) as u32,
                    });
                }
            }
        }
        self.any_datanode()
    }

    /// A live DataNode, the client's own first (as HDFS places a writer's first replica),
    /// else any, spread by the clock.
    fn any_datanode(&self) -> Result<Target, WebError> {
        let live = self.nn().datanode_report(NodeFilter::Live);
        let local: Vec<_> = live.iter().filter(|d| d.id.ip == self.ip).collect();
        let pool: Vec<_> = if local.is_empty() {
            live.iter().collect()
        } else {
            local
        };
        if pool.is_empty() {
            return Err(WebError::new(
                ferrite_http::webhdfs::IO,
                "Failed to find datanode, suggest to check cluster health. excludeDatanodes=null",
            ));
        }
        let pick = crate::clock::now_ms().unsigned_abs() as usize % pool.len();
        let d = pool[pick];
        Ok(Target {
            host: d.id.ip.clone(),
            http_port: d.id.info_port,
        })
    }
}

/// The DataNode URL for `op` on `path`: the op, the caller's identity parameters, the
/// NameNode's RPC address, then the op's own parameters in name order, as HDFS writes it.
pub(super) fn location(
    t: &Target,
    op: &str,
    path: &str,
    p: &Params,
    rpc_addr: &str,
) -> Result<String, WebError> {
    let mut q = format!("op={op}");
    for name in ["doas", "user.name"] {
        if let Some(v) = p.get(name).filter(|v| !v.is_empty()) {
            q.push_str(&format!("&{name}={}", encode_value(v)));
        }
    }
    q.push_str(&format!("&namenoderpcaddress={rpc_addr}"));
    let mut own: Vec<(&str, String)> = Vec::new();
    let given = |name: &'static str| {
        p.get(name)
            .filter(|v| !v.is_empty())
            .map(|v| (name, v.to_string()))
    };
    match op {
        "OPEN" => {
            own.extend(given("buffersize"));
            own.extend(given("length"));
            own.push(("offset", p.long("offset")?.unwrap_or(0).to_string()));
        }
        "CREATE" => {
            for name in [
                "blocksize",
                "buffersize",
                "permission",
                "replication",
                "unmaskedpermission",
            ] {
                own.extend(given(name));
            }
            own.push(("createflag", p.get("createflag").unwrap_or("").to_string()));
            own.push(("createparent", p.bool("createparent", true)?.to_string()));
            own.push(("overwrite", p.bool("overwrite", false)?.to_string()));
        }
        "APPEND" => own.extend(given("buffersize")),
        _ => {}
    }
    own.sort_by(|a, b| a.0.cmp(b.0));
    for (name, v) in own {
        q.push_str(&format!("&{name}={}", encode_value(&v)));
    }
    Ok(format!(
        "http://{}:{}{PREFIX}{}?{q}",
        t.host,
        t.http_port,
        encode_path(path)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(q: &[(&str, &str)]) -> Params {
        Params::of(q)
    }

    #[test]
    fn urls_carry_what_hdfs_puts_in_them_in_its_order() {
        let t = Target {
            host: "127.0.0.1".into(),
            http_port: 9864,
        };
        let rpc = "127.0.0.1:8020";
        let create = params(&[
            ("op", "CREATE"),
            ("user.name", "root"),
            ("overwrite", "true"),
        ]);
        assert_eq!(
            location(&t, "CREATE", "/d1/f1", &create, rpc).unwrap(),
            "http://127.0.0.1:9864/webhdfs/v1/d1/f1?op=CREATE&user.name=root&namenoderpcaddress=127.0.0.1:8020&createflag=&createparent=true&overwrite=true"
        );
        let open = params(&[("user.name", "root"), ("offset", "3"), ("length", "4")]);
        assert_eq!(
            location(&t, "OPEN", "/d1/f1", &open, rpc).unwrap(),
            "http://127.0.0.1:9864/webhdfs/v1/d1/f1?op=OPEN&user.name=root&namenoderpcaddress=127.0.0.1:8020&length=4&offset=3"
        );
        let append = params(&[("user.name", "root"), ("doas", "alice")]);
        assert_eq!(
            location(&t, "APPEND", "/a b", &append, rpc).unwrap(),
            "http://127.0.0.1:9864/webhdfs/v1/a%20b?op=APPEND&doas=alice&user.name=root&namenoderpcaddress=127.0.0.1:8020"
        );
        let perm = params(&[("permission", "600"), ("replication", "2")]);
        assert!(location(&t, "CREATE", "/f", &perm, rpc).unwrap().ends_with(
            "&createflag=&createparent=true&overwrite=false&permission=600&replication=2"
        ));
    }
}
