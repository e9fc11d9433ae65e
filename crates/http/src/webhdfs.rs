//! What the NameNode's and the DataNodes' WebHDFS share: the query parameters as HDFS
//! parses them (names case-insensitive, each typed value with HDFS's message when it does
//! not parse), and errors as HDFS's `RemoteException` JSON with the HTTP status HDFS maps
//! each exception to.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// The path prefix every WebHDFS URL starts with.
pub const PREFIX: &str = "/webhdfs/v1";

/// The user a request without `user.name` runs as (`hadoop.http.staticuser.user`).
pub const ANONYMOUS: &str = "dr.who";

/// A request's query parameters. HDFS treats parameter names without regard to case
/// (its `ParamFilter` lower-cases them); values are kept as sent.
#[derive(Clone, Debug, Default)]
pub struct Params(Vec<(String, String)>);

impl Params {
    pub fn new(pairs: Vec<(String, String)>) -> Self {
        Params(
            pairs
                .into_iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), v))
                .collect(),
        )
    }

    /// From literal pairs (tests, and callers building a request).
    pub fn of(pairs: &[(&str, &str)]) -> Self {
        Params::new(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    /// The value of `name` (lower case), if sent; the last one wins, as in HDFS.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `name` (a parameter that may repeat, as `xattr.name`), in order.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// `op`, upper-cased: `None` when missing.
    pub fn op(&self) -> Option<String> {
        self.get("op").map(|o| o.to_ascii_uppercase())
    }

    /// The caller: `doas` when given, else `user.name`, else the anonymous user. Returns
    /// (effective user, the real user when it differs).
    pub fn user(&self) -> (String, Option<String>) {
        let real = self
            .get("user.name")
            .filter(|u| !u.is_empty())
            .unwrap_or(ANONYMOUS);
        match self.get("doas").filter(|u| !u.is_empty()) {
            Some(d) if d != real => (d.to_string(), Some(real.to_string())),
            _ => (real.to_string(), None),
        }
    }

    /// A string parameter the op cannot do without ("Required param …").
    pub fn required(&self, name: &str, op: &str) -> Result<&str, WebError> {
        self.get(name).filter(|v| !v.is_empty()).ok_or_else(|| {
            WebError::illegal(format!(
                "Required param {name} for op: {op} is null or empty"
            ))
        })
    }

    pub fn bool(&self, name: &str, default: bool) -> Result<bool, WebError> {
        match self.get(name) {
            None | Some("") => Ok(default),
            Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
            Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
            Some(v) => Err(invalid(
                name,
                format!("Failed to parse \"{v}\" to Boolean."),
            )),
        }
    }

    pub fn long(&self, name: &str) -> Result<Option<i64>, WebError> {
        self.number(name, "long", 10, |s, r| i64::from_str_radix(s, r).ok())
    }

    pub fn short(&self, name: &str) -> Result<Option<i16>, WebError> {
        self.number(name, "short", 10, |s, r| i16::from_str_radix(s, r).ok())
    }

    /// A permission in octal, at most 01777, as HDFS's `PermissionParam`.
    pub fn permission(&self, name: &str) -> Result<Option<u16>, WebError> {
        let p = self.number(name, "short", 8, |s, r| i16::from_str_radix(s, r).ok())?;
        match p {
            Some(p) if !(0..=0o1777).contains(&p) => Err(invalid(
                name,
                format!("Invalid parameter range: {name} = {p:o} > 1777"),
            )),
            p => Ok(p.map(|p| p as u16)),
        }
    }

    fn number<T>(
        &self,
        name: &str,
        kind: &str,
        radix: u32,
        parse: impl Fn(&str, u32) -> Option<T>,
    ) -> Result<Option<T>, WebError> {
        match self.get(name) {
            None | Some("") => Ok(None),
            Some(v) => parse(v, radix).map(Some).ok_or_else(|| {
                invalid(
                    name,
                    format!("Failed to parse \"{v}\" as a radix-{radix} {kind} integer."),
                )
            }),
        }
    }
}

fn invalid(name: &str, why: String) -> WebError {
    WebError::illegal(format!(
        "Invalid value for webhdfs parameter \"{name}\": {why}"
    ))
}

/// An error answered as HDFS answers it: `{"RemoteException": {exception, javaClassName,
/// message}}` with the status HDFS's `ExceptionHandler` gives the class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebError {
    pub class: String,
    pub message: String,
}

pub const ILLEGAL_ARGUMENT: &str = "java.lang.IllegalArgumentException";
pub const UNSUPPORTED: &str = "java.lang.UnsupportedOperationException";
pub const IO: &str = "java.io.IOException";

impl WebError {
    pub fn new(class: &str, message: impl Into<String>) -> Self {
        WebError {
            class: class.to_string(),
            message: message.into(),
        }
    }

    pub fn illegal(message: impl Into<String>) -> Self {
        WebError::new(ILLEGAL_ARGUMENT, message)
    }

    /// `op` missing, or not one this method serves.
    pub fn bad_op(op: Option<&str>, method: &str) -> Self {
        match op {
            None => WebError::new(UNSUPPORTED, "op=NULL is not supported"),
            Some(op) => invalid("op", format!("{op} is not a valid {method} operation.")),
        }
    }

    /// HDFS's mapping: a missing file 404; illegal arguments and unsupported operations
    /// 400; authorization failures and every other `IOException` 403; anything else 500.
    pub fn status(&self) -> StatusCode {
        match self.class.as_str() {
            "java.io.FileNotFoundException" => StatusCode::NOT_FOUND,
            ILLEGAL_ARGUMENT
            | UNSUPPORTED
            | "org.apache.hadoop.HadoopIllegalArgumentException"
            | "org.apache.hadoop.fs.InvalidPathException" => StatusCode::BAD_REQUEST,
            "java.lang.NullPointerException" | "java.lang.RuntimeException" => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
            _ => StatusCode::FORBIDDEN,
        }
    }

    /// The class's simple name (a nested class's own name, as Java's `getSimpleName`).
    pub fn simple_name(&self) -> &str {
        let tail = self.class.rsplit('.').next().unwrap_or(&self.class);
        tail.rsplit('$').next().unwrap_or(tail)
    }

    pub fn body(&self) -> serde_json::Value {
        json!({"RemoteException": {
            "exception": self.simple_name(),
            "javaClassName": self.class,
            "message": self.message,
        }})
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        (
            self.status(),
            [(header::CONTENT_TYPE, "application/json")],
            self.body().to_string(),
        )
            .into_response()
    }
}

/// A JSON answer, 200.
pub fn json_ok(body: impl serde::Serialize) -> Response {
    match serde_json::to_vec(&body) {
        Ok(text) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            text,
        )
            .into_response(),
        Err(e) => WebError::new(IO, format!("cannot write the answer: {e}")).into_response(),
    }
}

/// An empty 200, as HDFS answers the operations that return nothing.
pub fn empty_ok() -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/octet-stream")],
    )
        .into_response()
}

/// `{"boolean": b}`.
pub fn boolean(b: bool) -> Response {
    json_ok(json!({ "boolean": b }))
}

/// The file system path a WebHDFS URL names (`/webhdfs/v1/a%20b` → `/a b`); a path that
/// does not decode to UTF-8 is refused as HDFS refuses an invalid path.
pub fn path_of(uri: &axum::http::Uri) -> Result<String, WebError> {
    let raw = uri.path().strip_prefix(PREFIX).unwrap_or("");
    let decoded = percent_encoding::percent_decode_str(raw)
        .decode_utf8()
        .map_err(|_| {
            WebError::new(
                "org.apache.hadoop.fs.InvalidPathException",
                format!("Invalid path name {raw}: not valid UTF-8"),
            )
        })?;
    Ok(if decoded.is_empty() {
        "/".to_string()
    } else {
        decoded.into_owned()
    })
}

/// The query's name/value pairs, decoded (`+` as a space, as forms send it); bytes that
/// are not UTF-8 become replacement characters rather than a refusal.
pub fn query_of(uri: &axum::http::Uri) -> Params {
    let pairs = form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    Params::new(pairs)
}

/// Percent-encodes a path for a URL, keeping its slashes.
pub fn encode_path(path: &str) -> String {
    use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
    // What a URI path may not hold as is (RFC 3986), beside the controls.
    const PATH: &AsciiSet = &CONTROLS
        .add(b' ')
        .add(b'"')
        .add(b'#')
        .add(b'%')
        .add(b'<')
        .add(b'>')
        .add(b'?')
        .add(b'`')
        .add(b'{')
        .add(b'}')
        .add(b'|')
        .add(b'\\')
        .add(b'^')
        .add(b'[')
        .add(b']');
    utf8_percent_encode(path, PATH).to_string()
}

/// Percent-encodes a query value.
pub fn encode_value(v: &str) -> String {
    use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
    // Keep what needs no escaping in a query value, as a browser would send it.
    const VALUE: &percent_encoding::AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~')
        .remove(b'/')
        .remove(b':')
        .remove(b',');
    utf8_percent_encode(v, VALUE).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    use Params as P;

    fn params(q: &[(&str, &str)]) -> Params {
        P::of(q)
    }

    #[test]
    fn names_ignore_case_and_values_parse_as_hdfs_parses_them() {
        let p = params(&[
            ("OP", "getFileStatus"),
            ("Permission", "750"),
            ("replication", "abc"),
            ("overwrite", "TRUE"),
            ("recursive", "maybe"),
        ]);
        assert_eq!(p.op().as_deref(), Some("GETFILESTATUS"));
        assert_eq!(p.permission("permission"), Ok(Some(0o750)));
        assert_eq!(
            p.short("replication").unwrap_err().message,
            "Invalid value for webhdfs parameter \"replication\": Failed to parse \"abc\" as a radix-10 short integer."
        );
        assert_eq!(p.bool("overwrite", false), Ok(true));
        assert!(p.bool("recursive", false).is_err());
        assert_eq!(p.bool("createparent", true), Ok(true));
        let bad = params(&[("permission", "999")]).permission("permission");
        assert_eq!(
            bad.unwrap_err().message,
            "Invalid value for webhdfs parameter \"permission\": Failed to parse \"999\" as a radix-8 short integer."
        );
        assert!(params(&[("permission", "7777")])
            .permission("permission")
            .is_err());
        assert_eq!(
            params(&[])
                .required("destination", "RENAME")
                .unwrap_err()
                .message,
            "Required param destination for op: RENAME is null or empty"
        );
    }

    #[test]
    fn the_caller_is_doas_else_user_name_else_anonymous() {
        assert_eq!(params(&[]).user(), ("dr.who".into(), None));
        assert_eq!(params(&[("user.name", "bob")]).user(), ("bob".into(), None));
        assert_eq!(
            params(&[("user.name", "root"), ("doas", "alice")]).user(),
            ("alice".into(), Some("root".into()))
        );
    }

    #[test]
    fn errors_take_hdfs_status_and_simple_name() {
        let nf = WebError::new("java.io.FileNotFoundException", "File does not exist: /x");
        assert_eq!(nf.status(), StatusCode::NOT_FOUND);
        assert_eq!(nf.simple_name(), "FileNotFoundException");
        let acl = WebError::new("org.apache.hadoop.security.AccessControlException", "no");
        assert_eq!(acl.status(), StatusCode::FORBIDDEN);
        let nested = WebError::new(
            "org.apache.hadoop.hdfs.protocol.FSLimitException$PathComponentTooLongException",
            "long",
        );
        assert_eq!(nested.simple_name(), "PathComponentTooLongException");
        assert_eq!(nested.status(), StatusCode::FORBIDDEN);
        let op = WebError::bad_op(Some("BOGUS"), "GET");
        assert_eq!(op.status(), StatusCode::BAD_REQUEST);
        assert_eq!(
            op.body().to_string(),
            r#"{"RemoteException":{"exception":"IllegalArgumentException","javaClassName":"java.lang.IllegalArgumentException","message":"Invalid value for webhdfs parameter \"op\": BOGUS is not a valid GET operation."}}"#
        );
        let none = WebError::bad_op(None, "GET");
        assert_eq!(
            (none.status(), none.message.as_str()),
            (StatusCode::BAD_REQUEST, "op=NULL is not supported")
        );
    }

    #[test]
    fn paths_and_queries_decode_and_bad_bytes_are_refused_not_dropped() {
        let uri: axum::http::Uri = "/webhdfs/v1/a%20b/c?op=LISTSTATUS&user.name=bo+b&x=%ff"
            .parse()
            .unwrap();
        assert_eq!(path_of(&uri).unwrap(), "/a b/c");
        let q = query_of(&uri);
        assert_eq!(q.get("user.name"), Some("bo b"));
        assert_eq!(q.get("x"), Some("\u{fffd}"));
        let root: axum::http::Uri = "/webhdfs/v1?op=GETFILESTATUS".parse().unwrap();
        assert_eq!(path_of(&root).unwrap(), "/");
        let bad: axum::http::Uri = "/webhdfs/v1/%ff%fe".parse().unwrap();
        let e = path_of(&bad).unwrap_err();
        assert_eq!(e.status(), StatusCode::BAD_REQUEST);
    }

    #[test]
    fn urls_escape_what_they_must() {
        assert_eq!(encode_path("/a b/c#d"), "/a%20b/c%23d");
        assert_eq!(encode_value("/d1/c1,/d1/c2"), "/d1/c1,/d1/c2");
        assert_eq!(encode_value("a&b=c"), "a%26b%3Dc");
    }
}
