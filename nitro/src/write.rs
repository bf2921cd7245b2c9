//! NITRO changes as commands of the language: every POST, PUT, DELETE and action becomes
//! the tokens of the equivalent command line, parsed by the same grammar and applied by the
//! same code as a typed command (one validation, one error text, one `save`).
//!
//! An attribute maps to the option of the same name, compared without case (`lbmethod` is
//! `-lbMethod`); the positional arguments of each command are named per resource below.

use ctl::command::Command;
use ctl::grammar::{COMMANDS, CommandSpec, Object, Verb, parse_tokens};
use ctl::lex::Token;
use ctl::value::Arity;
use serde_json::Value;

use crate::read::Object as Attrs;
use crate::reply::{Reply, errors};

fn bare(text: impl Into<String>) -> Token {
    Token::bare(text)
}

fn value_token(text: impl Into<String>) -> Token {
    Token {
        text: text.into(),
        quoted: true,
    }
}

/// A JSON scalar as the text of a command-language value.
fn scalar(key: &str, v: &Value) -> Result<String, Reply> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
            _ => n.to_string(),
        }),
        Value::Bool(b) => Ok(if *b { "YES" } else { "NO" }.to_owned()),
        _ => Err(errors::bad_value(key, &v.to_string())),
    }
}

/// The text of attribute `key`, if present and not null.
pub fn text(obj: &Attrs, key: &str) -> Result<Option<String>, Reply> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => scalar(key, v).map(Some),
    }
}

pub fn required(obj: &Attrs, key: &str) -> Result<String, Reply> {
    text(obj, key)?.ok_or_else(|| errors::missing(key))
}

fn spec(verb: Verb, object: Object) -> Option<&'static CommandSpec> {
    COMMANDS
        .iter()
        .find(|c| c.verb == verb && c.object == object)
}

/// Whether a flag (or an option `unset` names) is given: `true`, or any value but `false`
/// and `"NO"`; `false` leaves it out.
fn flag_on(value: &Value) -> bool {
    match value {
        Value::Bool(b) => *b,
        Value::String(s) => !s.eq_ignore_ascii_case("false") && !s.eq_ignore_ascii_case("no"),
        _ => true,
    }
}

/// A command being built: `<verb> <object words> <positionals> <options>`.
#[derive(Debug)]
pub struct Line {
    verb: Verb,
    object: Object,
    tokens: Vec<Token>,
}

impl Line {
    pub fn new(verb: Verb, object: Object) -> Self {
        let mut tokens = vec![bare(verb.keyword())];
        tokens.extend(object.words().iter().map(|w| bare(*w)));
        Self {
            verb,
            object,
            tokens,
        }
    }

    /// A positional argument.
    pub fn arg(mut self, value: impl Into<String>) -> Self {
        self.tokens.push(value_token(value));
        self
    }

    pub fn opt_arg(self, value: Option<String>) -> Self {
        match value {
            Some(v) => self.arg(v),
            None => self,
        }
    }

    /// A keyword the grammar must see unquoted (a unit, a flag's name).
    pub fn word(mut self, word: &str) -> Self {
        self.tokens.push(bare(word));
        self
    }

    /// Every attribute of `obj` but those in `skip`, as the command's options.
    pub fn options(mut self, obj: &Attrs, skip: &[&str]) -> Result<Self, Reply> {
        let spec = spec(self.verb, self.object)
            .ok_or_else(|| errors::unsupported_action(self.verb.keyword()))?;
        for (key, value) in obj {
            if skip.iter().any(|s| s.eq_ignore_ascii_case(key)) || value.is_null() {
                continue;
            }
            let opt = spec
                .all_options()
                .find(|o| o.name.eq_ignore_ascii_case(key))
                .ok_or_else(|| errors::unknown_attribute(key))?;
            // `unset` names options only; a flag takes no value.
            if spec.names_only || opt.arity == Arity::Flag {
                if flag_on(value) {
                    self.tokens.push(bare(format!("-{}", opt.name)));
                }
                continue;
            }
            self.tokens.push(bare(format!("-{}", opt.name)));
            let values = match value {
                Value::Array(items) => items.as_slice(),
                v => std::slice::from_ref(v),
            };
            for v in values {
                self.tokens.push(value_token(scalar(key, v)?));
            }
            // NITRO carries a timer's unit apart (`interval` + `units3`).
            if let Some(unit) = unit_of(obj, key)? {
                self.tokens.push(bare(unit));
            }
        }
        Ok(self)
    }

    /// Parses the line with the language's grammar.
    pub fn build(self) -> Result<Vec<Command>, Reply> {
        parse_tokens(&self.tokens)
            .map(|c| vec![c])
            .map_err(|e| Reply::refused(&e))
    }
}

/// The attributes that carry the unit of another (monitors' timers).
pub const UNIT_ATTRS: &[(&str, &str)] = &[
    ("deviation", "units1"),
    ("downtime", "units2"),
    ("interval", "units3"),
    ("resptimeout", "units4"),
];

fn unit_of(obj: &Attrs, key: &str) -> Result<Option<String>, Reply> {
    match UNIT_ATTRS.iter().find(|(a, _)| a.eq_ignore_ascii_case(key)) {
        Some((_, units)) => text(obj, units),
        None => Ok(None),
    }
}

/// The unit attributes themselves are not options.
pub fn unit_keys() -> Vec<&'static str> {
    UNIT_ATTRS.iter().map(|(_, u)| *u).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The configurations two command lists give (options may come in another order).
    fn same(a: &[Command], b: &[Command]) {
        let (mut x, mut y) = (ctl::Config::default(), ctl::Config::default());
        x.apply_all(a).unwrap();
        y.apply_all(b).unwrap();
        assert_eq!(x, y);
    }

    fn attrs(v: Value) -> Attrs {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn attributes_become_the_options_of_the_same_name() {
        let o = attrs(
            json!({"name": "s1", "ip": "198.18.0.11", "servicetype": "HTTP", "port": 80, "maxclient": "10", "healthmonitor": "NO"}),
        );
        let cmds = Line::new(Verb::Add, Object::Service)
            .arg(required(&o, "name").unwrap())
            .arg(required(&o, "ip").unwrap())
            .arg(required(&o, "servicetype").unwrap())
            .arg(required(&o, "port").unwrap())
            .options(&o, &["name", "ip", "servicetype", "port"])
            .unwrap()
            .build()
            .unwrap();
        let expected = ctl::grammar::parse_line(
            "add service s1 198.18.0.11 HTTP 80 -maxClient 10 -healthMonitor NO",
        )
        .unwrap();
        same(&cmds, &expected);
    }

    #[test]
    fn units_arrays_and_flags() {
        let o = attrs(
            json!({"monitorname": "m", "type": "HTTP-ECV", "interval": 500, "units3": "MSEC", "resptimeout": 200, "units4": "MSEC", "send": "GET / HTTP/1.0", "recv": "200 OK"}),
        );
        let mut skip = vec!["monitorname", "type"];
        skip.extend(unit_keys());
        let cmds = Line::new(Verb::Add, Object::LbMonitor)
            .arg("m")
            .arg("HTTP-ECV")
            .options(&o, &skip)
            .unwrap()
            .build()
            .unwrap();
        let expected = ctl::grammar::parse_line(
            "add lb monitor m HTTP-ECV -interval 500 MSEC -resptimeout 200 MSEC -send \"GET / HTTP/1.0\" -recv \"200 OK\"",
        )
        .unwrap();
        same(&cmds, &expected);
        let o = attrs(json!({"name": "s1", "monitor_name": "m", "passive": true}));
        let cmds = Line::new(Verb::Bind, Object::Service)
            .arg("s1")
            .word("-monitorName")
            .arg("m")
            .options(&o, &["name", "monitor_name"])
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(
            cmds,
            ctl::grammar::parse_line("bind service s1 -monitorName m -passive").unwrap()
        );
    }

    #[test]
    fn an_unknown_attribute_or_bad_value_is_refused_with_its_code() {
        let o = attrs(json!({"name": "v", "lbmethod": "ROUNDROBIN", "colour": "blue"}));
        let e = Line::new(Verb::Set, Object::LbVserver)
            .arg("v")
            .options(&o, &["name"])
            .unwrap_err();
        assert_eq!((e.status, e.errorcode()), (400, 1090));
        let o = attrs(json!({"name": "v", "lbmethod": "FASTEST"}));
        let e = Line::new(Verb::Set, Object::LbVserver)
            .arg("v")
            .options(&o, &["name"])
            .unwrap()
            .build()
            .unwrap_err();
        assert_eq!((e.status, e.errorcode()), (400, 1097));
        // A value that looks like an option stays a value.
        let o = attrs(json!({"name": "v", "comment": "-lbMethod"}));
        let cmds = Line::new(Verb::Set, Object::LbVserver)
            .arg("v")
            .options(&o, &["name"])
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(cmds.len(), 1);
    }
}
