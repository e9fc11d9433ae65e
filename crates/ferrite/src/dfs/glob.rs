//! Path globs as Hadoop's shell reads them (pure): `*` and `?` within one path component,
//! `[abc]`, `[a-z]` and `[^a]` (or `[!a]`) classes, `{a,b}` alternatives (which may hold
//! patterns of their own), and `\` to take the next character as it is.

/// One element of a compiled component pattern.
#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Lit(char),
    /// Any run of characters (`*`).
    Star,
    /// Any one character (`?`).
    One,
    /// A class: its ranges, and whether it matches what is *not* in them.
    Class(Vec<(char, char)>, bool),
    /// Alternatives, each a pattern.
    Alt(Vec<Vec<Tok>>),
}

/// A compiled pattern for one path component.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Pattern(Vec<Tok>);

/// Whether `s` has characters a glob gives meaning to.
pub(super) fn has_glob(s: &str) -> bool {
    s.chars().any(|c| matches!(c, '*' | '?' | '[' | '{' | '\\'))
}

impl Pattern {
    pub(super) fn compile(s: &str) -> Result<Pattern, String> {
        let chars: Vec<char> = s.chars().collect();
        let mut i = 0;
        let toks = parse(&chars, &mut i, false)?;
        if i != chars.len() {
            return Err(format!("Illegal file pattern: Unexpected '}}' in {s}"));
        }
        Ok(Pattern(toks))
    }

    pub(super) fn matches(&self, name: &str) -> bool {
        let chars: Vec<char> = name.chars().collect();
        matches_at(&self.0, &chars)
    }
}

/// Parses until the end, or (inside braces) until an unmatched `,` or `}`.
fn parse(c: &[char], i: &mut usize, in_braces: bool) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    while *i < c.len() {
        let ch = c[*i];
        match ch {
            ',' | '}' if in_braces => return Ok(out),
            '*' => out.push(Tok::Star),
            '?' => out.push(Tok::One),
            '\\' => {
                *i += 1;
                let lit = *c
                    .get(*i)
                    .ok_or("Illegal file pattern: Expecting a character after \\")?;
                out.push(Tok::Lit(lit));
            }
            '[' => out.push(class(c, i)?),
            '{' => {
                let mut alts = Vec::new();
                loop {
                    *i += 1;
                    alts.push(parse(c, i, true)?);
                    match c.get(*i) {
                        Some(',') => continue,
                        Some('}') => break,
                        _ => return Err("Illegal file pattern: Unclosed group".into()),
                    }
                }
                out.push(Tok::Alt(alts));
            }
            other => out.push(Tok::Lit(other)),
        }
        *i += 1;
    }
    Ok(out)
}

/// A `[...]` class starting at `c[*i]`; leaves `*i` on its `]`.
fn class(c: &[char], i: &mut usize) -> Result<Tok, String> {
    *i += 1;
    let negated = matches!(c.get(*i), Some('^' | '!'));
    if negated {
        *i += 1;
    }
    let mut ranges = Vec::new();
    let mut first = true;
    loop {
        let Some(&ch) = c.get(*i) else {
            return Err("Illegal file pattern: Unclosed character class".into());
        };
        if ch == ']' && !first {
            return Ok(Tok::Class(ranges, negated));
        }
        first = false;
        let lo = if ch == '\\' {
            *i += 1;
            *c.get(*i)
                .ok_or("Illegal file pattern: Unclosed character class")?
        } else {
            ch
        };
        if c.get(*i + 1) == Some(&'-') && c.get(*i + 2).is_some_and(|&h| h != ']') {
            let hi = c[*i + 2];
            if hi < lo {
                return Err(format!("Illegal file pattern: Invalid range {lo}-{hi}"));
            }
            ranges.push((lo, hi));
            *i += 3;
        } else {
            ranges.push((lo, lo));
            *i += 1;
        }
    }
}

fn matches_at(p: &[Tok], s: &[char]) -> bool {
    let Some((first, rest)) = p.split_first() else {
        return s.is_empty();
    };
    match first {
        Tok::Lit(l) => s.first() == Some(l) && matches_at(rest, &s[1..]),
        Tok::One => !s.is_empty() && matches_at(rest, &s[1..]),
        Tok::Class(ranges, negated) => {
            s.first().is_some_and(|&ch| {
                let inside = ranges.iter().any(|&(lo, hi)| lo <= ch && ch <= hi);
                inside != *negated
            }) && matches_at(rest, &s[1..])
        }
        Tok::Star => (0..=s.len()).any(|k| matches_at(rest, &s[k..])),
        Tok::Alt(alts) => alts.iter().any(|alt| {
            let mut joined = alt.clone();
            joined.extend_from_slice(rest);
            matches_at(&joined, s)
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, s: &str) -> bool {
        Pattern::compile(p).unwrap().matches(s)
    }

    #[test]
    fn stars_marks_classes_alternatives_and_escapes() {
        assert!(m("part-*", "part-00000") && m("part-*", "part-"));
        assert!(!m("part-*", "_SUCCESS"));
        assert!(m("2026-1?-*", "2026-11-27") && !m("2026-1?-*", "2026-1-27"));
        assert!(m("[a-c]x", "bx") && !m("[a-c]x", "dx"));
        assert!(m("[^a-c]x", "dx") && m("[!a]x", "bx") && !m("[!a]x", "ax"));
        assert!(m("[]a]", "]"), "a leading ] is a member");
        assert!(
            m("{a,b*}.log", "a.log") && m("{a,b*}.log", "bzz.log") && !m("{a,b*}.log", "c.log")
        );
        assert!(m("x{1,{2,3}}", "x3"), "nested alternatives");
        assert!(m("a\\*", "a*") && !m("a\\*", "ab"));
        assert!(m("*", "") && m("**", "abc"));
        assert!(Pattern::compile("[abc").is_err());
        assert!(Pattern::compile("{a,b").is_err());
        assert!(Pattern::compile("[z-a]").is_err());
        assert!(has_glob("/logs/2026-*/part-*") && !has_glob("/plain/path"));
    }
}
