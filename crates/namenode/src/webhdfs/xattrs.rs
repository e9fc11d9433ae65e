//! WebHDFS's xattr parameters and answers, as HDFS's `XAttrCodec` and `JsonUtil` write
//! them: values sent as `"text"`, `0x<hex>` or `0s<base64>`, answered in the encoding asked
//! for (quoted text by default); names listed as a JSON array inside a JSON string. Pure.

use base64::Engine;
use ferrite_http::webhdfs::WebError;
use serde_json::{json, Value};

use crate::namespace::xattr::{XAttr, XAttrNs, XATTR_CREATE, XATTR_REPLACE};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Encoding {
    Text,
    Hex,
    Base64,
}

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// `xattr.name`: a prefixed name, split as the NameNode splits it.
pub(super) fn name_param(v: &str) -> Result<XAttr, WebError> {
    let (ns, name) = XAttrNs::split(v).map_err(super::web)?;
    Ok(XAttr {
        ns,
        name: name.to_string(),
        value: None,
    })
}

/// `encoding` (GETXATTRS requires it): TEXT, HEX or BASE64, in any case.
pub(super) fn encoding_param(v: &str) -> Result<Encoding, WebError> {
    match v.to_ascii_uppercase().as_str() {
        "TEXT" => Ok(Encoding::Text),
        "HEX" => Ok(Encoding::Hex),
        "BASE64" => Ok(Encoding::Base64),
        other => Err(WebError::illegal(format!(
            "Invalid value for webhdfs parameter \"encoding\": No enum constant \
             org.apache.hadoop.fs.XAttrCodec.{other}"
        ))),
    }
}

/// `flag`: a comma-separated set of CREATE and REPLACE; none is the empty set.
pub(super) fn flag_param(v: Option<&str>) -> Result<u32, WebError> {
    let mut flags = 0;
    for f in v
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|f| !f.is_empty())
    {
        flags |= match f.to_ascii_uppercase().as_str() {
            "CREATE" => XATTR_CREATE,
            "REPLACE" => XATTR_REPLACE,
            other => {
                return Err(WebError::illegal(format!(
                    "Invalid value for webhdfs parameter \"flag\": No enum constant \
                     org.apache.hadoop.fs.XAttrSetFlag.{other}"
                )))
            }
        };
    }
    Ok(flags)
}

/// An `xattr.value` as `XAttrCodec.decodeValue` reads it.
pub(super) fn decode_value(v: &str) -> Result<Vec<u8>, WebError> {
    if v.len() >= 2 {
        if v.starts_with('"') && v.ends_with('"') {
            return Ok(v.as_bytes()[1..v.len() - 1].to_vec());
        }
        let (prefix, rest) = v.split_at(2);
        if prefix.eq_ignore_ascii_case("0x") {
            return decode_hex(rest)
                .ok_or_else(|| WebError::illegal(format!("Invalid hex value: {rest}")));
        }
        if prefix.eq_ignore_ascii_case("0s") {
            return B64
                .decode(rest)
                .map_err(|e| WebError::illegal(format!("Invalid base64 value: {e}")));
        }
    }
    Ok(v.as_bytes().to_vec())
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

fn encode_value(v: &[u8], e: Encoding) -> String {
    match e {
        Encoding::Hex => {
            let mut s = String::with_capacity(2 + 2 * v.len());
            s.push_str("0x");
            for b in v {
                s.push_str(&format!("{b:02x}"));
            }
            s
        }
        Encoding::Base64 => format!("0s{}", B64.encode(v)),
        Encoding::Text => format!("\"{}\"", String::from_utf8_lossy(v)),
    }
}

/// GETXATTRS's answer.
pub(super) fn xattrs_doc(xs: &[XAttr], e: Encoding) -> Value {
    let list: Vec<Value> = xs
        .iter()
        .map(|x| {
            json!({
                "name": x.prefixed(),
                "value": x.value.as_deref().map(|v| encode_value(v, e)),
            })
        })
        .collect();
    json!({ "XAttrs": list })
}

/// LISTXATTRS's answer: the names as a JSON array, itself written as a string.
pub(super) fn names_doc(xs: &[XAttr]) -> Value {
    let names: Vec<String> = xs.iter().map(XAttr::prefixed).collect();
    json!({ "XAttrNames": Value::from(names).to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_decode_and_encode_as_xattr_codec_does() {
        assert_eq!(decode_value("\"hi\"").unwrap(), b"hi");
        assert_eq!(decode_value("0x00FF").unwrap(), [0, 255]);
        assert_eq!(decode_value("0sAAE=").unwrap(), [0, 1]);
        assert_eq!(decode_value("plain").unwrap(), b"plain");
        assert_eq!(decode_value("x").unwrap(), b"x");
        assert!(decode_value("0xABC").is_err());
        assert_eq!(encode_value(&[0, 255], Encoding::Hex), "0x00ff");
        assert_eq!(encode_value(&[0, 1], Encoding::Base64), "0sAAE=");
        assert_eq!(encode_value(b"hi", Encoding::Text), "\"hi\"");
    }

    #[test]
    fn names_are_a_json_array_in_a_string() {
        let x = |name: &str| XAttr {
            ns: XAttrNs::User,
            name: name.into(),
            value: None,
        };
        assert_eq!(
            names_doc(&[x("a"), x("b")]),
            json!({"XAttrNames": "[\"user.a\",\"user.b\"]"})
        );
        assert_eq!(flag_param(Some("CREATE,replace")).unwrap(), 3);
        assert_eq!(flag_param(None).unwrap(), 0);
    }
}
