//! Hadoop's `/jmx` servlet as monitoring reads it: a server's metrics beans as JSON,
//! `{"beans": [{"name": …, "modelerType": …, attribute: value, …}]}`.
//!
//! The queries HDFS answers, answered the same way:
//! - none: every bean;
//! - `qry=PATTERN`: the beans whose name matches, where `*` stands for any run of
//!   characters and `?` for one (JMX's `Hadoop:service=NameNode,*` and `*:*` forms);
//! - `get=BEAN::ATTRIBUTE`: that bean with that one attribute, or with `"result":
//!   "ERROR"` and a message when it has no such attribute.
//!
//! Pure: the beans come from a [`Beans`] source, the HTTP edge is in `lib.rs`.

use serde_json::{json, Map, Value};

/// One metrics bean: its JMX object name, the kind HDFS reports as `modelerType`, and its
/// attributes in the order they are shown.
#[derive(Debug, Clone, PartialEq)]
pub struct Bean {
    pub name: String,
    pub modeler_type: String,
    pub attrs: Vec<(String, Value)>,
}

impl Bean {
    pub fn new(name: impl Into<String>, modeler_type: impl Into<String>) -> Self {
        Bean {
            name: name.into(),
            modeler_type: modeler_type.into(),
            attrs: Vec::new(),
        }
    }

    /// Adds an attribute (builder style).
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.attrs.push((key.to_string(), value.into()));
        self
    }

    /// The attribute `key`, if the bean has it.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.attrs.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    fn to_json(&self, only: Option<&str>) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), self.name.clone().into());
        m.insert("modelerType".into(), self.modeler_type.clone().into());
        match only {
            None => {
                for (k, v) in &self.attrs {
                    m.insert(k.clone(), v.clone());
                }
            }
            Some(attr) => match self.get(attr) {
                Some(v) => {
                    m.insert(attr.to_string(), v.clone());
                }
                None => {
                    m.insert("result".into(), "ERROR".into());
                    m.insert(
                        "message".into(),
                        format!("No attribute with name {attr} was found.").into(),
                    );
                }
            },
        }
        Value::Object(m)
    }
}

/// Where a server's beans come from; asked afresh for every request.
pub trait Beans: Send + Sync + 'static {
    fn beans(&self) -> Vec<Bean>;

    /// A NameNode's `/startupProgress` document; `None` (404) for other servers.
    fn startup_progress(&self) -> Option<serde_json::Value> {
        None
    }
}

/// Beans that change hands while the server runs: a NameNode answers from its start-up
/// progress while it loads, then from everything once it serves.
pub struct BeanSlot(std::sync::RwLock<std::sync::Arc<dyn Beans>>);

impl BeanSlot {
    pub fn new(first: std::sync::Arc<dyn Beans>) -> BeanSlot {
        BeanSlot(std::sync::RwLock::new(first))
    }

    pub fn set(&self, next: std::sync::Arc<dyn Beans>) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = next;
    }

    fn current(&self) -> std::sync::Arc<dyn Beans> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Beans for BeanSlot {
    fn beans(&self) -> Vec<Bean> {
        self.current().beans()
    }

    fn startup_progress(&self) -> Option<serde_json::Value> {
        self.current().startup_progress()
    }
}

/// What a `/jmx` request asks for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Query {
    All,
    Matching(String),
    Attribute { bean: String, attr: String },
}

impl Query {
    /// From the request's `qry` and `get` parameters (`get` wins, as in HDFS).
    pub(crate) fn parse(qry: Option<&str>, get: Option<&str>) -> Result<Query, BadQuery> {
        if let Some(get) = get {
            return match get.split_once("::") {
                Some((bean, attr)) if !bean.is_empty() && !attr.is_empty() => {
                    Ok(Query::Attribute {
                        bean: bean.to_string(),
                        attr: attr.to_string(),
                    })
                }
                _ => Err(BadQuery),
            };
        }
        Ok(match qry {
            None | Some("") => Query::All,
            Some(p) => Query::Matching(p.to_string()),
        })
    }
}

/// A `get=` that is not `BEAN::ATTRIBUTE`, refused in the words of HDFS's JMX servlet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BadQuery;

impl std::fmt::Display for BadQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("query format is not as expected.")
    }
}

impl std::error::Error for BadQuery {}

/// The JSON answer to `q` over `beans`.
pub(crate) fn answer(beans: &[Bean], q: &Query) -> Value {
    let chosen: Vec<Value> = beans
        .iter()
        .filter_map(|b| match q {
            Query::All => Some(b.to_json(None)),
            Query::Matching(p) => glob(p, &b.name).then(|| b.to_json(None)),
            Query::Attribute { bean, attr } => (b.name == *bean).then(|| b.to_json(Some(attr))),
        })
        .collect();
    json!({ "beans": chosen })
}

/// The answer to a request that could not be understood.
pub(crate) fn error(message: &str) -> Value {
    json!({ "result": "ERROR", "message": message })
}

/// Whether `text` matches `pattern`, where `*` matches any run of characters and `?` any
/// one. Iterative, with one point to come back to: linear in practice, and never the
/// exponential blow-up of naive recursion on patterns like `*a*a*a*b`.
pub(crate) fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    // Where the last `*` was, and where in the text it was tried from.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            // Let the last `*` take one more character and try again from there.
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn beans() -> Vec<Bean> {
        vec![
            Bean::new("Hadoop:service=NameNode,name=FSNamesystem", "FSNamesystem")
                .with("FilesTotal", 7)
                .with("tag.HAState", "active"),
            Bean::new(
                "Hadoop:service=NameNode,name=NameNodeStatus",
                "NameNodeStatus",
            )
            .with("State", "active"),
            Bean::new("Ferrite:service=NameNode,name=Journal", "Journal").with("Syncs", 3),
        ]
    }

    fn names(v: &Value) -> Vec<&str> {
        v["beans"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["name"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn glob_matches_as_jmx_patterns_do() {
        assert!(glob("*:*", "Hadoop:service=NameNode,name=X"));
        assert!(glob(
            "Hadoop:service=NameNode,*",
            "Hadoop:service=NameNode,name=X"
        ));
        assert!(glob("Hadoop:*,name=X", "Hadoop:service=NameNode,name=X"));
        assert!(glob(
            "Hadoop:service=NameNode,name=?",
            "Hadoop:service=NameNode,name=X"
        ));
        assert!(!glob(
            "Hadoop:service=DataNode,*",
            "Hadoop:service=NameNode,name=X"
        ));
        assert!(!glob(
            "Hadoop:service=NameNode",
            "Hadoop:service=NameNode,name=X"
        ));
        assert!(glob("", ""));
        assert!(!glob("", "x"));
        assert!(glob("***", ""));
        assert!(
            !glob(&"*a".repeat(30), &"a".repeat(29)),
            "no blow-up, no match"
        );
    }

    #[test]
    fn every_bean_without_a_query_and_the_matching_ones_with_one() {
        let all = answer(&beans(), &Query::parse(None, None).unwrap());
        assert_eq!(names(&all).len(), 3);
        assert_eq!(all["beans"][0]["modelerType"], "FSNamesystem");
        assert_eq!(all["beans"][0]["FilesTotal"], 7);
        let nn = answer(
            &beans(),
            &Query::parse(Some("Hadoop:service=NameNode,*"), None).unwrap(),
        );
        assert_eq!(
            names(&nn),
            [
                "Hadoop:service=NameNode,name=FSNamesystem",
                "Hadoop:service=NameNode,name=NameNodeStatus"
            ]
        );
        let none = answer(&beans(), &Query::parse(Some("Nope:*"), None).unwrap());
        assert_eq!(
            none,
            json!({ "beans": [] }),
            "no match is an empty list, as in HDFS"
        );
    }

    #[test]
    fn get_answers_one_attribute_or_says_it_is_missing() {
        let q = Query::parse(
            None,
            Some("Hadoop:service=NameNode,name=FSNamesystem::FilesTotal"),
        );
        let one = answer(&beans(), &q.unwrap());
        let bean = &one["beans"][0];
        assert_eq!(bean["FilesTotal"], 7);
        assert!(
            bean.get("tag.HAState").is_none(),
            "only the attribute asked for"
        );
        let q = Query::parse(
            None,
            Some("Hadoop:service=NameNode,name=FSNamesystem::Nope"),
        );
        let missing = answer(&beans(), &q.unwrap());
        assert_eq!(missing["beans"][0]["result"], "ERROR");
        assert_eq!(
            missing["beans"][0]["message"],
            "No attribute with name Nope was found."
        );
        assert_eq!(BadQuery.to_string(), "query format is not as expected.");
        for bad in ["Hadoop:service=NameNode,name=FSNamesystem", "::X", "B::"] {
            assert_eq!(Query::parse(Some("*:*"), Some(bad)), Err(BadQuery), "{bad}");
        }
    }
}
