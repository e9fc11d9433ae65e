//! Kerberos principals mapped to user names by `hadoop.security.auth_to_local`, as Hadoop's
//! `KerberosName` maps them: each rule in turn, the first that gives a name wins.
//!
//! A rule is `DEFAULT` (a principal of the default realm is its first component), or
//! `RULE:[n:format](regex)s/pattern/replacement/[g][/L]`: it applies to principals of `n`
//! components, whose fields fill `format` (`$0` the realm, `$1` and `$2` the components);
//! the result must match `regex` whole, then the substitution (all matches with `g`) and
//! lower-casing (`/L`) give the user name, which may contain neither `/` nor `@`.

use regex::Regex;

/// A principal, `first[/second][@realm]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub service: String,
    pub host: Option<String>,
    pub realm: Option<String>,
}

impl Principal {
    /// Parses `service[/host][@realm]`; `None` for anything with more slashes or ats.
    pub fn parse(name: &str) -> Option<Principal> {
        let (rest, realm) = match name.split_once('@') {
            Some((r, realm)) => (r, Some(realm)),
            None => (name, None),
        };
        let (service, host) = match rest.split_once('/') {
            Some((s, h)) => (s, Some(h)),
            None => (rest, None),
        };
        let bad = |s: &str| s.is_empty() || s.contains(['/', '@']);
        if bad(service) || host.is_some_and(bad) || realm.is_some_and(bad) {
            return None;
        }
        Some(Principal {
            service: service.to_string(),
            host: host.map(str::to_string),
            realm: realm.map(str::to_string),
        })
    }
}

impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.service)?;
        if let Some(h) = &self.host {
            write!(f, "/{h}")?;
        }
        if let Some(r) = &self.realm {
            write!(f, "@{r}")?;
        }
        Ok(())
    }
}

/// `service/_HOST@REALM` with `host` (lower-cased) for `_HOST`, as Hadoop's
/// `SecurityUtil.getServerPrincipal`; any other principal as it is.
pub fn fill_host(principal: &str, host: &str) -> String {
    let parts: Vec<&str> = principal.split(['/', '@']).collect();
    match parts.as_slice() {
        [service, "_HOST", realm] => format!("{service}/{}@{realm}", host.to_lowercase()),
        _ => principal.to_string(),
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("Invalid rule: {0}")]
    Invalid(String),
    #[error("Non-simple name {name} after auth_to_local rule {rule}")]
    NotSimple { name: String, rule: String },
    #[error("No rules applied to {0}")]
    NoMatch(String),
    #[error("Illegal principal name {0}")]
    BadName(String),
}

#[derive(Debug, Clone)]
enum Rule {
    Default,
    Map {
        text: String,
        components: usize,
        format: String,
        accept: Option<Regex>,
        substitute: Option<(Regex, String, bool)>,
        lower: bool,
    },
}

/// The rules of `hadoop.security.auth_to_local`, and the realm `DEFAULT` stands for.
#[derive(Debug, Clone)]
pub struct AuthToLocal {
    rules: Vec<Rule>,
    default_realm: String,
}

impl AuthToLocal {
    /// Parses `rules` (whitespace or newlines between rules; empty: `DEFAULT`).
    pub fn new(rules: &str, default_realm: &str) -> Result<AuthToLocal, RuleError> {
        let mut parsed = Vec::new();
        let mut rest = rules.trim();
        while !rest.is_empty() {
            let (rule, tail) = parse_rule(rest)?;
            parsed.push(rule);
            rest = tail.trim_start();
        }
        if parsed.is_empty() {
            parsed.push(Rule::Default);
        }
        Ok(AuthToLocal {
            rules: parsed,
            default_realm: default_realm.to_string(),
        })
    }

    /// The user name `principal` maps to.
    pub fn short_name(&self, principal: &str) -> Result<String, RuleError> {
        let p = Principal::parse(principal).ok_or_else(|| RuleError::BadName(principal.into()))?;
        let Some(realm) = &p.realm else {
            // A bare name is a user name already (Hadoop's `realm == null` case).
            if p.host.is_none() {
                return Ok(p.service);
            }
            return Err(RuleError::NoMatch(principal.into()));
        };
        let mut fields = vec![realm.as_str(), p.service.as_str()];
        fields.extend(p.host.as_deref());
        for rule in &self.rules {
            if let Some(name) = self.apply(rule, &p, &fields)? {
                return Ok(name);
            }
        }
        Err(RuleError::NoMatch(principal.into()))
    }

    fn apply(
        &self,
        rule: &Rule,
        p: &Principal,
        fields: &[&str],
    ) -> Result<Option<String>, RuleError> {
        match rule {
            Rule::Default => Ok((p.realm.as_deref() == Some(self.default_realm.as_str()))
                .then(|| p.service.clone())),
            Rule::Map {
                text,
                components,
                format,
                accept,
                substitute,
                lower,
            } => {
                if fields.len() - 1 != *components {
                    return Ok(None);
                }
                let base = fill(format, fields).map_err(|_| RuleError::Invalid(text.clone()))?;
                if accept.as_ref().is_some_and(|re| !re.is_match(&base)) {
                    return Ok(None);
                }
                let mut name = match substitute {
                    Some((from, to, true)) => from.replace_all(&base, to.as_str()).into_owned(),
                    Some((from, to, false)) => from.replace(&base, to.as_str()).into_owned(),
                    None => base,
                };
                if name.contains(['/', '@']) {
                    return Err(RuleError::NotSimple {
                        name,
                        rule: text.clone(),
                    });
                }
                if *lower {
                    name = name.to_lowercase();
                }
                Ok(Some(name))
            }
        }
    }
}

/// `$0`, `$1`, `$2` in `format` replaced by `fields`; an index past them is an error.
fn fill(format: &str, fields: &[&str]) -> Result<String, ()> {
    let mut out = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        let mut digits = String::new();
        while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            digits.push(*d);
            chars.next();
        }
        let i: usize = digits.parse().map_err(|_| ())?;
        out.push_str(fields.get(i).ok_or(())?);
    }
    Ok(out)
}

/// One rule from the front of `text`, and what follows it.
fn parse_rule(text: &str) -> Result<(Rule, &str), RuleError> {
    let invalid = || RuleError::Invalid(text.lines().next().unwrap_or(text).to_string());
    if let Some(rest) = text.strip_prefix("DEFAULT") {
        return Ok((Rule::Default, rest));
    }
    let body = text.strip_prefix("RULE:[").ok_or_else(invalid)?;
    let (spec, mut rest) = body.split_once(']').ok_or_else(invalid)?;
    let (n, format) = spec.split_once(':').ok_or_else(invalid)?;
    let components: usize = n.parse().map_err(|_| invalid())?;
    let mut accept = None;
    if let Some(r) = rest.strip_prefix('(') {
        let (re, tail) = r.split_once(')').ok_or_else(invalid)?;
        accept = Some(whole(re).map_err(|_| invalid())?);
        rest = tail;
    }
    let mut substitute = None;
    if let Some(r) = rest.strip_prefix("s/") {
        let mut parts = r.splitn(3, '/');
        let (from, to, tail) = (
            parts.next().ok_or_else(invalid)?,
            parts.next().ok_or_else(invalid)?,
            parts.next().ok_or_else(invalid)?,
        );
        let (global, tail) = match tail.strip_prefix('g') {
            Some(t) => (true, t),
            None => (false, tail),
        };
        let from = Regex::new(from).map_err(|_| invalid())?;
        substitute = Some((from, to.to_string(), global));
        rest = tail;
    }
    // Then `/?L?`: "s/x/y/L" and "s/x/y//L" both lower-case.
    rest = rest.strip_prefix('/').unwrap_or(rest);
    let lower = rest.starts_with('L');
    if lower {
        rest = &rest[1..];
    }
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return Err(invalid());
    }
    let consumed = text.len() - rest.len();
    Ok((
        Rule::Map {
            text: text[..consumed].to_string(),
            components,
            format: format.to_string(),
            accept,
            substitute,
            lower,
        },
        rest,
    ))
}

/// A regex that must match a whole string, as Java's `Matcher.matches` does.
fn whole(re: &str) -> Result<Regex, regex::Error> {
    Regex::new(&format!("^(?:{re})$"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principals_parse_into_their_parts() {
        let p = Principal::parse("nn/host1.example@EXAMPLE.COM").unwrap();
        assert_eq!(p.service, "nn");
        assert_eq!(p.host.as_deref(), Some("host1.example"));
        assert_eq!(p.realm.as_deref(), Some("EXAMPLE.COM"));
        assert_eq!(p.to_string(), "nn/host1.example@EXAMPLE.COM");
        assert_eq!(Principal::parse("alice").unwrap().realm, None);
        assert!(Principal::parse("a/b/c@R").is_none());
        assert!(Principal::parse("a@R@S").is_none());
        assert!(Principal::parse("@R").is_none());
    }

    #[test]
    fn host_is_filled_only_where_the_principal_says_host() {
        assert_eq!(
            fill_host("nn/_HOST@EXAMPLE.COM", "NN1.Example.com"),
            "nn/nn1.example.com@EXAMPLE.COM"
        );
        assert_eq!(fill_host("nn/fixed@R", "h"), "nn/fixed@R");
        assert_eq!(fill_host("nn@R", "h"), "nn@R");
    }

    #[test]
    fn default_maps_the_default_realm_only() {
        let m = AuthToLocal::new("", "EXAMPLE.COM").unwrap();
        assert_eq!(m.short_name("alice@EXAMPLE.COM").unwrap(), "alice");
        assert_eq!(m.short_name("nn/h.example@EXAMPLE.COM").unwrap(), "nn");
        assert_eq!(m.short_name("alice").unwrap(), "alice");
        assert_eq!(
            m.short_name("mallory@OTHER.ORG"),
            Err(RuleError::NoMatch("mallory@OTHER.ORG".into()))
        );
    }

    #[test]
    fn rules_as_hadoops_documentation_writes_them() {
        // The examples of Hadoop's "Mapping from Kerberos principals to OS user accounts".
        let rules = "RULE:[2:$1/$2@$0]([ndj]n/.*@REALM\\.TLD)s/.*/hdfs/\n\
                     RULE:[2:$1/$2@$0]([rn]m/.*@REALM\\.TLD)s/.*/yarn/\n\
                     RULE:[2:$1/$2@$0](jhs/.*@REALM\\.TLD)s/.*/mapred/\n\
                     RULE:[1:$1@$0](.*@OTHER\\.TLD)s/@.*//L\n\
                     DEFAULT";
        let m = AuthToLocal::new(rules, "REALM.TLD").unwrap();
        assert_eq!(m.short_name("nn/host1@REALM.TLD").unwrap(), "hdfs");
        assert_eq!(m.short_name("dn/host2@REALM.TLD").unwrap(), "hdfs");
        assert_eq!(m.short_name("rm/host3@REALM.TLD").unwrap(), "yarn");
        assert_eq!(m.short_name("jhs/host4@REALM.TLD").unwrap(), "mapred");
        assert_eq!(m.short_name("Bob@OTHER.TLD").unwrap(), "bob");
        assert_eq!(m.short_name("carol@REALM.TLD").unwrap(), "carol");
        assert!(m.short_name("carol@THIRD.TLD").is_err());
    }

    #[test]
    fn a_rule_giving_a_name_with_a_slash_or_at_is_an_error() {
        let m = AuthToLocal::new("RULE:[2:$1/$2@$0](.*)", "R").unwrap();
        assert!(matches!(
            m.short_name("nn/h@R"),
            Err(RuleError::NotSimple { .. })
        ));
    }

    #[test]
    fn global_substitution_and_field_order() {
        let m = AuthToLocal::new("RULE:[2:$2.$1](.*)s/\\./_/g", "R").unwrap();
        assert_eq!(m.short_name("svc/a.b.c@R").unwrap(), "a_b_c_svc");
        let first_only = AuthToLocal::new("RULE:[2:$2.$1](.*)s/\\./_/", "R").unwrap();
        assert_eq!(first_only.short_name("svc/a.b@R").unwrap(), "a_b.svc");
    }

    #[test]
    fn malformed_rules_are_refused() {
        for bad in [
            "RULE:[x:$1]",
            "RULE:[1:$1",
            "RULE:[1:$1](unclosed",
            "NONSENSE",
            "RULE:[1:$1]junk",
        ] {
            assert!(AuthToLocal::new(bad, "R").is_err(), "{bad}");
        }
        // A format naming a field the principal does not have.
        let m = AuthToLocal::new("RULE:[1:$2]", "R").unwrap();
        assert!(m.short_name("a@R").is_err());
    }
}
