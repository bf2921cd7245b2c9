//! Splits a command line into tokens (NetScaler quoting) and expands `[a-b]` ranges.
//!
//! Quoting: a token that starts with `"` or `'` runs to the matching quote; inside it a
//! backslash escapes the quote character and a backslash, and every other backslash is kept
//! as typed (so `"GET / HTTP/1.0\r\n"` keeps its `\r\n` for the monitor to interpret).

use crate::error::{CliError, ErrorKind, Result};

/// Longest range `[a-b]` accepted, in members.
pub const MAX_RANGE: u32 = 1024;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    pub text: String,
    /// Quoted tokens are always values: never options, never ranges.
    pub quoted: bool,
}

impl Token {
    pub fn bare(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            quoted: false,
        }
    }

    /// `-name` outside quotes: an option name. A leading digit (`-1`) is not.
    pub fn is_option(&self) -> bool {
        !self.quoted
            && self.text.len() > 1
            && self.text.starts_with('-')
            && self.text.as_bytes()[1].is_ascii_alphabetic()
    }
}

/// Tokenizes one line. A line whose first non-blank character is `#` is a comment (no tokens).
pub fn tokenize(line: &str) -> Result<Vec<Token>> {
    let mut tokens = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let Some(&first) = chars.peek() else { break };
        if tokens.is_empty() && first == '#' {
            break;
        }
        if first == '"' || first == '\'' {
            chars.next();
            let mut text = String::new();
            let mut closed = false;
            while let Some(c) = chars.next() {
                if c == first {
                    closed = true;
                    break;
                }
                if c == '\\' {
                    match chars.peek() {
                        Some(&n) if n == first || n == '\\' => {
                            text.push(n);
                            chars.next();
                        }
                        _ => text.push('\\'),
                    }
                } else {
                    text.push(c);
                }
            }
            if !closed {
                return Err(CliError::new(ErrorKind::UnterminatedQuote));
            }
            tokens.push(Token { text, quoted: true });
        } else {
            let mut text = String::new();
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                text.push(c);
            }
            tokens.push(Token {
                text,
                quoted: false,
            });
        }
    }
    Ok(tokens)
}

/// Writes `text` as one token that [`tokenize`] reads back unchanged: bare when it can be,
/// double-quoted otherwise.
pub fn quote(text: &str, out: &mut String) {
    let bare = !text.is_empty()
        && !text.starts_with(['"', '\'', '#', '-'])
        && !text.contains(|c: char| c.is_whitespace() || c == '[')
        && !text.contains('\\');
    if bare {
        out.push_str(text);
        return;
    }
    out.push('"');
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => out.push_str("\\\""),
            // A backslash must be doubled only where the reader would otherwise take it as
            // an escape: before a quote, before a backslash, or at the end.
            '\\' if matches!(chars.peek(), None | Some('"') | Some('\\')) => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A `[a-b]` range found in a bare token.
struct Range {
    token: usize,
    prefix: String,
    suffix: String,
    first: u32,
    len: u32,
    width: usize,
}

fn find_range(index: usize, token: &Token) -> Result<Option<Range>> {
    if token.quoted {
        return Ok(None);
    }
    let text = &token.text;
    let Some(open) = text.find('[') else {
        return Ok(None);
    };
    let bad = || CliError::arg(ErrorKind::BadRange, text.clone());
    let close = text[open..].find(']').ok_or_else(bad)? + open;
    let inner = &text[open + 1..close];
    let (a, b) = inner.split_once('-').ok_or_else(bad)?;
    let first: u32 = a.parse().map_err(|_| bad())?;
    let last: u32 = b.parse().map_err(|_| bad())?;
    if last < first || last - first >= MAX_RANGE || text[close + 1..].contains('[') {
        return Err(bad());
    }
    Ok(Some(Range {
        token: index,
        prefix: text[..open].to_owned(),
        suffix: text[close + 1..].to_owned(),
        first,
        len: last - first + 1,
        width: if a.len() > 1 && a.starts_with('0') {
            a.len()
        } else {
            0
        },
    }))
}

/// Expands ranges: `add lb vserver web[1-3] HTTP 198.18.0.[11-13] 80` gives three commands.
/// Every range in a line must have the same length; members are paired in order.
pub fn expand_ranges(tokens: Vec<Token>) -> Result<Vec<Vec<Token>>> {
    let mut ranges = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        if let Some(r) = find_range(i, t)? {
            ranges.push(r);
        }
    }
    let Some(len) = ranges.first().map(|r| r.len) else {
        return Ok(vec![tokens]);
    };
    if let Some(r) = ranges.iter().find(|r| r.len != len) {
        return Err(
            CliError::arg(ErrorKind::BadRange, tokens[r.token].text.clone())
                .with_detail("Ranges in one command must have the same length"),
        );
    }
    Ok((0..len)
        .map(|k| {
            let mut line = tokens.clone();
            for r in &ranges {
                let n = r.first + k;
                line[r.token].text = format!("{}{:0w$}{}", r.prefix, n, r.suffix, w = r.width);
            }
            line
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(t: &[Token]) -> Vec<&str> {
        t.iter().map(|t| t.text.as_str()).collect()
    }

    #[test]
    fn splits_and_quotes() {
        let t = tokenize(r#"add lb monitor m TCP-ECV -send "GET / HTTP/1.0\r\n" -recv 'open"#)
            .unwrap_err();
        assert_eq!(t.kind, ErrorKind::UnterminatedQuote);
        let t = tokenize(r#"add lb monitor m TCP-ECV -send "GET / \"x\"\r\n" -recv 'ok'"#).unwrap();
        assert_eq!(
            texts(&t),
            [
                "add",
                "lb",
                "monitor",
                "m",
                "TCP-ECV",
                "-send",
                r#"GET / "x"\r\n"#,
                "-recv",
                "ok"
            ]
        );
        assert!(t[5].is_option() && !t[6].is_option());
        assert!(tokenize("   # comment").unwrap().is_empty());
    }

    #[test]
    fn quote_round_trips() {
        for s in [
            "plain",
            "two words",
            r"a\b",
            r"end\",
            r#"q"uote"#,
            r"\\",
            "",
            "-x",
            "#h",
            "[1-2]",
        ] {
            let mut out = String::new();
            quote(s, &mut out);
            let back = tokenize(&out).unwrap();
            assert_eq!(back.len(), 1, "{s:?} -> {out}");
            assert_eq!(back[0].text, s, "{s:?} -> {out}");
        }
    }

    #[test]
    fn expands_paired_ranges() {
        let lines =
            expand_ranges(tokenize("add lb vserver web[1-3] HTTP 198.18.0.[11-13] 80").unwrap())
                .unwrap();
        assert_eq!(lines.len(), 3);
        assert_eq!(
            texts(&lines[2]),
            ["add", "lb", "vserver", "web3", "HTTP", "198.18.0.13", "80"]
        );
        let err = expand_ranges(tokenize("add server s[1-2] 198.18.0.[1-3]").unwrap()).unwrap_err();
        assert_eq!(err.kind, ErrorKind::BadRange);
        assert!(expand_ranges(tokenize("add server s[3-1] 1.1.1.1").unwrap()).is_err());
        let quoted = expand_ranges(tokenize(r#"add x "a[1-2]""#).unwrap()).unwrap();
        assert_eq!(quoted.len(), 1);
    }
}
