//! A NITRO request as the transport hands it over, and what its URL says: which API
//! (`config` or `stat`), resource, object name and query parameters.

use std::net::IpAddr;

/// One HTTP request, transport-independent.
#[derive(Clone, Debug, Default)]
pub struct Request {
    pub method: String,
    /// The path, percent-encoded as received.
    pub path: String,
    /// The query string without `?`.
    pub query: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub peer: Option<IpAddr>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every value of a header (`Cookie` may come more than once).
    pub fn headers_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// `config` or `stat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    Config,
    Stat,
}

/// What the URL names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub api: Api,
    pub resource: String,
    pub name: Option<String>,
    pub query: Query,
}

/// The query parameters NITRO defines (§1.3 of the reference).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query {
    pub args: Vec<(String, String)>,
    pub filter: Vec<(String, String)>,
    pub attrs: Vec<String>,
    pub count: bool,
    pub action: Option<String>,
    /// `?idempotent=yes`: add, or update what exists.
    pub idempotent: bool,
}

impl Query {
    pub fn arg(&self, key: &str) -> Option<&str> {
        self.args
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }
}

/// Decodes `%XX` (and `+` in query values when `plus` says so) until none is left: the
/// SDKs encode names in the path twice, and `%` cannot be part of a legal name.
pub fn percent_decode(text: &str, plus: bool) -> String {
    let mut current = text.to_owned();
    for _ in 0..3 {
        let next = decode_once(&current, plus);
        if next == current {
            break;
        }
        current = next;
    }
    current
}

fn decode_once(text: &str, plus: bool) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' if plus => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).and_then(|d| u8::try_from(d).ok())
}

/// `k1:v1,k2:v2`, each value decoded once more (clients encode `,` and `:` inside values).
fn pairs(text: &str) -> Vec<(String, String)> {
    text.split(',')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once(':') {
            Some((k, v)) => (percent_decode(k, false), percent_decode(v, false)),
            None => (percent_decode(p, false), String::new()),
        })
        .collect()
}

/// Parses the query string (`&` or `;` between parameters, as the documents show both).
pub fn parse_query(query: &str) -> Query {
    let mut q = Query::default();
    for part in query.split(['&', ';']).filter(|p| !p.is_empty()) {
        let (key, value) = part.split_once('=').unwrap_or((part, ""));
        // The pairs inside args/filter are split before their values are decoded.
        let value = value.replace('+', " ");
        match key.to_ascii_lowercase().as_str() {
            "args" => q.args.extend(pairs(&value)),
            "filter" => q.filter.extend(pairs(&value)),
            "attrs" => q.attrs.extend(
                percent_decode(&value, false)
                    .split(',')
                    .filter(|a| !a.is_empty())
                    .map(|a| a.trim().to_ascii_lowercase()),
            ),
            "count" => q.count = percent_decode(&value, false).eq_ignore_ascii_case("yes"),
            "action" => q.action = Some(percent_decode(&value, false).to_ascii_lowercase()),
            "idempotent" => {
                q.idempotent = percent_decode(&value, false).eq_ignore_ascii_case("yes")
            }
            // view, pagesize, pageno, warning, idempotent, statbindings: accepted.
            _ => {}
        }
    }
    q
}

/// `/nitro/v1/config/<resource>[/<name>]`; `None` for any other path.
pub fn parse_target(path: &str, query: &str) -> Option<Target> {
    let rest = path.strip_prefix("/nitro/v1/")?;
    let mut parts = rest.splitn(3, '/');
    let api = match parts.next()? {
        "config" => Api::Config,
        "stat" => Api::Stat,
        _ => return None,
    };
    let resource = parts.next().filter(|r| !r.is_empty())?.to_ascii_lowercase();
    let name = parts
        .next()
        .map(|n| n.trim_end_matches('/'))
        .filter(|n| !n.is_empty())
        .map(|n| percent_decode(n, false));
    Some(Target {
        api,
        resource,
        name,
        query: parse_query(query),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_encoded_twice_come_back_whole() {
        // Go's QueryEscape(QueryEscape("web 1#a")).
        let t = parse_target("/nitro/v1/config/service/web%25201%2523a", "").unwrap();
        assert_eq!(t.name.as_deref(), Some("web 1#a"));
        assert_eq!(t.api, Api::Config);
        assert_eq!(t.resource, "service");
        assert_eq!(percent_decode("100%", false), "100%");
        assert_eq!(percent_decode("%zz", false), "%zz");
        assert_eq!(percent_decode("a%2", false), "a%2");
    }

    #[test]
    fn args_filter_attrs_count_and_action() {
        let q = parse_query(
            "args=servicename:s%3A1,weight:2&filter=curstate:UP;attrs=Name,lbmethod&count=yes&action=Disable",
        );
        assert_eq!(
            q.args,
            vec![
                ("servicename".into(), "s:1".into()),
                ("weight".into(), "2".into())
            ]
        );
        assert_eq!(q.arg("SERVICENAME"), Some("s:1"));
        assert_eq!(q.filter, vec![("curstate".into(), "UP".into())]);
        assert_eq!(q.attrs, vec!["name".to_owned(), "lbmethod".to_owned()]);
        assert!(q.count);
        assert_eq!(q.action.as_deref(), Some("disable"));
    }

    #[test]
    fn other_paths_are_not_nitro() {
        assert!(parse_target("/nitro/v2/config/x", "").is_none());
        assert!(parse_target("/nitro/v1/config/", "").is_none());
        assert!(parse_target("/index.html", "").is_none());
    }
}
