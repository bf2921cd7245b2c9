//! Typed argument values: how each kind of value is read from tokens and written back.
//!
//! Every type that can appear as a positional argument or an option implements [`ArgValue`];
//! the grammar, `help`, ns.conf writing and the configuration model all go through it, so a
//! value is parsed and printed by exactly one piece of code.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

use crate::error::{CliError, ErrorKind, Result};
use crate::lex::{Token, quote};

/// How many tokens an option's value takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arity {
    /// A flag such as `-passive`: no value.
    Flag,
    /// Exactly one token.
    One,
    /// One token, then optionally one of these unit keywords (`-interval 500 MSEC`).
    WithUnit(&'static [&'static str]),
    /// One or more tokens, up to the next option (`-IPAddress 198.18.0.1 198.18.0.2`).
    Many,
}

/// A value of the command language.
pub trait ArgValue: Sized + Clone + PartialEq + fmt::Debug {
    const ARITY: Arity = Arity::One;
    /// What to type, for `help`: `<1-100>`, `( YES | NO )`, `<string>`.
    fn help() -> String;
    /// Reads the value of argument `arg` from its tokens (as many as [`Self::ARITY`] says).
    fn parse(arg: &str, tokens: &[Token]) -> Result<Self>;
    /// Writes the value as it would be typed.
    fn render(&self, out: &mut String);
    /// The value as NITRO's JSON carries it: a number where the value is one, a string
    /// otherwise (lists, flags and absent values override this).
    fn to_json(&self) -> JsonValue {
        let mut text = String::new();
        self.render(&mut text);
        plain_json(&text)
    }
}

pub use serde_json::{Map as JsonMap, Value as JsonValue};

/// A rendered value as JSON: digits become a number, a quoted string its text.
pub fn plain_json(text: &str) -> JsonValue {
    if let Ok(n) = text.parse::<u64>() {
        return JsonValue::from(n);
    }
    if text.starts_with('"')
        && let Ok(tokens) = crate::lex::tokenize(text)
        && let [t] = tokens.as_slice()
    {
        return JsonValue::from(t.text.clone());
    }
    JsonValue::from(text)
}

/// A rendered list (`a b c`) as a JSON array of strings.
fn list_json(value: &impl ArgValue) -> JsonValue {
    let mut text = String::new();
    value.render(&mut text);
    JsonValue::from(
        text.split_whitespace()
            .map(JsonValue::from)
            .collect::<Vec<_>>(),
    )
}

fn single<'t>(arg: &str, tokens: &'t [Token]) -> Result<&'t str> {
    match tokens {
        [t] => Ok(&t.text),
        [] => Err(CliError::arg(ErrorKind::RequiredArgumentMissing, arg)),
        [_, extra, ..] => Err(CliError::arg(ErrorKind::NoSuchArgument, extra.text.clone())),
    }
}

fn invalid(arg: &str, value: &str) -> CliError {
    CliError::arg_value(ErrorKind::InvalidArgumentValue, arg, value)
}

/// Case-insensitive keyword match: an exact match wins, otherwise a unique prefix.
/// `None` when nothing matches or the prefix is ambiguous.
pub fn match_keyword<'k, K: Copy>(
    word: &str,
    keywords: impl Iterator<Item = (&'k str, K)> + Clone,
) -> Option<K> {
    if let Some((_, k)) = keywords
        .clone()
        .find(|(kw, _)| kw.eq_ignore_ascii_case(word))
    {
        return Some(k);
    }
    if word.is_empty() {
        return None;
    }
    let mut found = None;
    for (kw, k) in keywords {
        let prefix = kw
            .get(..word.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(word));
        if prefix {
            if found.is_some() {
                return None;
            }
            found = Some(k);
        }
    }
    found
}

/// Declares an enum of keywords (`ENABLED`, `ROUNDROBIN`, …) that parses case-insensitively
/// with unique prefixes and prints its canonical spelling.
#[macro_export]
macro_rules! keywords {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($(#[$vmeta:meta])* $var:ident = $kw:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name { $($(#[$vmeta])* $var),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$var),+];
            pub const fn keyword(self) -> &'static str {
                match self { $($name::$var => $kw),+ }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.keyword())
            }
        }

        impl $crate::value::ArgValue for $name {
            fn help() -> String {
                let words: Vec<&str> = Self::ALL.iter().map(|k| k.keyword()).collect();
                format!("( {} )", words.join(" | "))
            }
            fn parse(arg: &str, tokens: &[$crate::lex::Token]) -> $crate::error::Result<Self> {
                let word = $crate::value::single_token(arg, tokens)?;
                $crate::value::match_keyword(word, Self::ALL.iter().map(|k| (k.keyword(), *k)))
                    .ok_or_else(|| $crate::absent::value(arg, word).unwrap_or_else(|| $crate::error::CliError::arg_value(
                        $crate::error::ErrorKind::InvalidArgumentValue, arg, word)))
            }
            fn render(&self, out: &mut String) {
                out.push_str(self.keyword());
            }
        }
    };
}

/// The text of the only token of a one-token value.
pub fn single_token<'t>(arg: &str, tokens: &'t [Token]) -> Result<&'t str> {
    single(arg, tokens)
}

keywords! {
    pub enum YesNo { Yes = "YES", No = "NO" }
}

keywords! {
    pub enum EnabledDisabled { Enabled = "ENABLED", Disabled = "DISABLED" }
}

keywords! {
    pub enum OnOff { On = "ON", Off = "OFF" }
}

/// `-cip ENABLED [<header>] | DISABLED`: insert the client's address in an HTTP header.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClientIpHeader {
    pub state: EnabledDisabled,
    pub header: Option<String>,
}

impl ClientIpHeader {
    pub const DISABLED: Self = Self {
        state: EnabledDisabled::Disabled,
        header: None,
    };
}

impl ArgValue for ClientIpHeader {
    const ARITY: Arity = Arity::Many;
    fn help() -> String {
        "( ENABLED [<cipHeader>] | DISABLED )".into()
    }
    fn parse(arg: &str, tokens: &[Token]) -> Result<Self> {
        let (state, header) = match tokens {
            [s] => (s, None),
            [s, h] => (s, Some(h.text.clone())),
            [] => return Err(CliError::arg(ErrorKind::RequiredArgumentMissing, arg)),
            [_, _, extra, ..] => {
                return Err(CliError::arg(ErrorKind::NoSuchArgument, extra.text.clone()));
            }
        };
        Ok(Self {
            state: EnabledDisabled::parse(arg, std::slice::from_ref(state))?,
            header,
        })
    }
    fn render(&self, out: &mut String) {
        self.state.render(out);
        if let Some(h) = &self.header {
            out.push(' ');
            quote(h, out);
        }
    }
}

impl YesNo {
    pub const fn is_yes(self) -> bool {
        matches!(self, Self::Yes)
    }
}

impl EnabledDisabled {
    pub const fn is_enabled(self) -> bool {
        matches!(self, Self::Enabled)
    }
}

/// An unsigned integer in `LO..=HI`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Bounded<const LO: u64, const HI: u64>(u64);

impl<const LO: u64, const HI: u64> Bounded<LO, HI> {
    /// Panics at compile time (in const contexts) or at run time when `v` is out of range;
    /// meant for defaults written in the source.
    pub const fn new(v: u64) -> Self {
        assert!(v >= LO && v <= HI, "default out of range");
        Self(v)
    }
    pub fn try_new(v: u64) -> Option<Self> {
        (LO..=HI).contains(&v).then_some(Self(v))
    }
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl<const LO: u64, const HI: u64> ArgValue for Bounded<LO, HI> {
    fn help() -> String {
        format!("<{LO}-{HI}>")
    }
    fn parse(arg: &str, tokens: &[Token]) -> Result<Self> {
        let text = single(arg, tokens)?;
        let v: u64 = text.parse().map_err(|_| invalid(arg, text))?;
        Self::try_new(v).ok_or_else(|| CliError::arg_value(ErrorKind::ValueOutOfRange, arg, text))
    }
    fn render(&self, out: &mut String) {
        out.push_str(&self.0.to_string());
    }
}

/// A signed integer in `LO..=HI` (`-metric` of an advertised route).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SignedBounded<const LO: i64, const HI: i64>(i64);

impl<const LO: i64, const HI: i64> SignedBounded<LO, HI> {
    pub const fn get(self) -> i64 {
        self.0
    }
}

impl<const LO: i64, const HI: i64> ArgValue for SignedBounded<LO, HI> {
    fn help() -> String {
        format!("<{LO}-{HI}>")
    }
    fn parse(arg: &str, tokens: &[Token]) -> Result<Self> {
        let text = single(arg, tokens)?;
        let v: i64 = text.parse().map_err(|_| invalid(arg, text))?;
        (LO..=HI)
            .contains(&v)
            .then_some(Self(v))
            .ok_or_else(|| CliError::arg_value(ErrorKind::ValueOutOfRange, arg, text))
    }
    fn render(&self, out: &mut String) {
        out.push_str(&self.0.to_string());
    }
}

/// A free string (send/receive strings, requests, comments), quoted when written.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Text(pub String);

impl ArgValue for Text {
    fn help() -> String {
        "<string>".into()
    }
    fn parse(arg: &str, tokens: &[Token]) -> Result<Self> {
        Ok(Self(single(arg, tokens)?.to_owned()))
    }
    fn render(&self, out: &mut String) {
        quote(&self.0, out);
    }
}

/// An object name: starts with a letter, digit or `_`; then letters, digits and `_ # . : @ = -`
/// or spaces (NetScaler's rule); at most 127 characters.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name(pub String);

impl Name {
    pub fn as_str(&self) -> &str {
        &self.0
    }
    pub fn is_valid(s: &str) -> bool {
        let mut chars = s.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        first_ok
            && s.len() <= 127
            && chars.all(|c| c.is_ascii_alphanumeric() || "_#.:@=- ".contains(c))
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl ArgValue for Name {
    fn help() -> String {
        "<name>".into()
    }
    fn parse(arg: &str, tokens: &[Token]) -> Result<Self> {
        let text = single(arg, tokens)?;
        if Self::is_valid(text) {
            Ok(Self(text.to_owned()))
        } else {
            Err(invalid(arg, text))
        }
    }
    fn render(&self, out: &mut String) {
        quote(&self.0, out);
    }
}

impl ArgValue for Ipv4Addr {
    fn help() -> String {
        "<ipv4 address>".into()
    }
    fn parse(arg: &str, tokens: &[Token]) -> Result<Self> {
        let text = single(arg, tokens)?;
        text.parse().map_err(|_| invalid(arg, text))
    }
    fn render(&self, out: &mut String) {
        out.push_str(&self.to_string());
    }
}

impl ArgValue for IpAddr {
    fn help() -> String {
        "<ip address>".into()
    }
    fn parse(arg: &str, tokens: &[Token]) -> Result<Self> {
        let text = single(arg, tokens)?;
        text.parse().map_err(|_| invalid(arg, text))
    }
    fn render(&self, out: &mut String) {
        out.push_str(&self.to_string());
    }
}

/// A host name as DNS carries it: dot-separated labels of letters, digits, `-` and `_`, each
/// 1–63 characters, 253 at most, and a last label that is not all digits (so that a mistyped
/// address is not taken for a name). A trailing dot is allowed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DomainName(pub String);

impl DomainName {
    pub fn is_valid(s: &str) -> bool {
        let s = s.strip_suffix('.').unwrap_or(s);
        let label_ok = |l: &str| {
            (1..=63).contains(&l.len())
                && l.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        !s.is_empty()
            && s.len() <= 253
            && s.split('.').all(label_ok)
            && s.rsplit('.')
                .next()
                .is_some_and(|last| !last.chars().all(|c| c.is_ascii_digit()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DomainName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `add server <name> <IPAddress | domain>`: where a server is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ServerAddress {
    Ip(IpAddr),
    /// Resolved at run time (see the monitor core's resolver).
    Domain(DomainName),
}

impl ServerAddress {
    pub fn ip(&self) -> Option<IpAddr> {
        match self {
            Self::Ip(ip) => Some(*ip),
            Self::Domain(_) => None,
        }
    }

    pub fn domain(&self) -> Option<&DomainName> {
        match self {
            Self::Ip(_) => None,
            Self::Domain(d) => Some(d),
        }
    }
}

impl fmt::Display for ServerAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ip(ip) => ip.fmt(f),
            Self::Domain(d) => d.fmt(f),
        }
    }
}

impl ArgValue for ServerAddress {
    fn help() -> String {
        "<ip address | domain name>".into()
    }
    fn parse(arg: &str, tokens: &[Token]) -> Result<Self> {
        let text = single(arg, tokens)?;
        if let Ok(ip) = text.parse() {
            return Ok(Self::Ip(ip));
        }
        if DomainName::is_valid(text) {
            return Ok(Self::Domain(DomainName(text.to_owned())));
        }
        Err(invalid(arg, text))
    }
    fn render(&self, out: &mut String) {
        out.push_str(&self.to_string());
    }
}

/// A contiguous IPv4 netmask (`255.255.255.0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Netmask(Ipv4Addr);

impl Netmask {
    pub fn from_prefix(len: u8) -> Self {
        let bits = if len == 0 {
            0
        } else {
            u32::MAX << (32 - u32::from(len.min(32)))
        };
        Self(Ipv4Addr::from(bits))
    }
    pub fn prefix_len(self) -> u8 {
        // Contiguous by construction, so the count of ones is the prefix length (≤ 32).
        u32::from(self.0).count_ones() as u8
    }
    pub fn bits(self) -> u32 {
        u32::from(self.0)
    }
    pub fn addr(self) -> Ipv4Addr {
        self.0
    }
}

impl ArgValue for Netmask {
    fn help() -> String {
        "<netmask>".into()
    }
    fn parse(arg: &str, tokens: &[Token]) -> Result<Self> {
        let text = single(arg, tokens)?;
        let addr: Ipv4Addr = text.parse().map_err(|_| invalid(arg, text))?;
        let bits = u32::from(addr);
        if bits.leading_ones() + bits.trailing_zeros() != 32 {
            return Err(invalid(arg, text));
        }
        Ok(Self(addr))
    }
    fn render(&self, out: &mut String) {
        out.push_str(&self.0.to_string());
    }
}

/// A port: `*` (any) or 1–65535.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Port {
    Any,
    Number(u16),
}

impl fmt::Display for Port {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Any => f.write_str("*"),
            Self::Number(n) => write!(f, "{n}"),
        }
    }
}

impl ArgValue for Port {
    fn help() -> String {
        "<port | *>".into()
    }
    fn parse(arg: &str, tokens: &[Token]) -> Result<Self> {
        let text = single(arg, tokens)?;
        if text == "*" {
            return Ok(Self::Any);
        }
        let n: u32 = text.parse().map_err(|_| invalid(arg, text))?;
        match u16::try_from(n) {
            Ok(p) if p > 0 => Ok(Self::Number(p)),
            _ => Err(CliError::arg_value(ErrorKind::ValueOutOfRange, arg, text)),
        }
    }
    fn render(&self, out: &mut String) {
        out.push_str(&self.to_string());
    }
}

/// The port of `add lb vserver`: a port, `*`, or the `0` NetScaler saves for a
/// non-addressable vserver (`0.0.0.0 0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VserverPort(pub Option<Port>);

impl ArgValue for VserverPort {
    fn help() -> String {
        Port::help()
    }
    fn parse(arg: &str, tokens: &[Token]) -> Result<Self> {
        if single(arg, tokens)? == "0" {
            return Ok(Self(None));
        }
        Port::parse(arg, tokens).map(|p| Self(Some(p)))
    }
    fn render(&self, out: &mut String) {
        match self.0 {
            Some(p) => p.render(out),
            None => out.push('0'),
        }
    }
}

keywords! {
    /// Time units of monitor timers.
    pub enum TimeUnit { Sec = "SEC", Msec = "MSEC", Min = "MIN" }
}

impl TimeUnit {
    pub const fn millis(self) -> u64 {
        match self {
            Self::Sec => 1000,
            Self::Msec => 1,
            Self::Min => 60_000,
        }
    }
}

/// A duration typed as a count of `LO..=HI` units, optionally followed by `SEC|MSEC|MIN`
/// (default SEC). Kept as typed so that ns.conf shows what the operator wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Duration<const LO: u64, const HI: u64> {
    pub count: u64,
    pub unit: TimeUnit,
}

impl<const LO: u64, const HI: u64> Duration<LO, HI> {
    pub const fn secs(count: u64) -> Self {
        assert!(count >= LO && count <= HI, "default out of range");
        Self {
            count,
            unit: TimeUnit::Sec,
        }
    }
    pub const fn millis(self) -> u64 {
        self.count * self.unit.millis()
    }
}

impl<const LO: u64, const HI: u64> ArgValue for Duration<LO, HI> {
    const ARITY: Arity = Arity::WithUnit(&["SEC", "MSEC", "MIN"]);
    fn help() -> String {
        format!("<{LO}-{HI}> [SEC | MSEC | MIN]")
    }
    fn parse(arg: &str, tokens: &[Token]) -> Result<Self> {
        let (count, unit) = match tokens {
            [c] => (
                Bounded::<LO, HI>::parse(arg, std::slice::from_ref(c))?,
                TimeUnit::Sec,
            ),
            [c, u] => (
                Bounded::<LO, HI>::parse(arg, std::slice::from_ref(c))?,
                TimeUnit::parse(arg, std::slice::from_ref(u))?,
            ),
            _ => return Err(single(arg, tokens).map(|_| ()).unwrap_err()),
        };
        Ok(Self {
            count: count.get(),
            unit,
        })
    }
    fn render(&self, out: &mut String) {
        out.push_str(&self.count.to_string());
        if self.unit != TimeUnit::Sec {
            out.push(' ');
            out.push_str(self.unit.keyword());
        }
    }
}

/// A list of IP addresses (`-IPAddress a b c`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IpList(pub Vec<IpAddr>);

impl ArgValue for IpList {
    const ARITY: Arity = Arity::Many;
    fn help() -> String {
        "<ip address> ...".into()
    }
    fn parse(arg: &str, tokens: &[Token]) -> Result<Self> {
        if tokens.is_empty() {
            return Err(CliError::arg(ErrorKind::RequiredArgumentMissing, arg));
        }
        tokens
            .iter()
            .map(|t| IpAddr::parse(arg, std::slice::from_ref(t)))
            .collect::<Result<Vec<_>>>()
            .map(Self)
    }
    fn render(&self, out: &mut String) {
        for (i, ip) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            out.push_str(&ip.to_string());
        }
    }
    fn to_json(&self) -> JsonValue {
        list_json(self)
    }
}

/// HTTP response codes meaning success: single codes and ranges (`200 301-302`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RespCodes(pub Vec<(u16, u16)>);

impl RespCodes {
    pub fn contains(&self, code: u16) -> bool {
        self.0.iter().any(|&(lo, hi)| (lo..=hi).contains(&code))
    }
}

impl ArgValue for RespCodes {
    const ARITY: Arity = Arity::Many;
    fn help() -> String {
        "<code | code-code> ...".into()
    }
    fn parse(arg: &str, tokens: &[Token]) -> Result<Self> {
        if tokens.is_empty() {
            return Err(CliError::arg(ErrorKind::RequiredArgumentMissing, arg));
        }
        let code = |s: &str| -> Result<u16> {
            match s.parse::<u16>() {
                Ok(c) if (100..=599).contains(&c) => Ok(c),
                _ => Err(invalid(arg, s)),
            }
        };
        let mut ranges = Vec::new();
        for t in tokens {
            let range = match t.text.split_once('-') {
                Some((a, b)) => (code(a)?, code(b)?),
                None => (code(&t.text)?, code(&t.text)?),
            };
            if range.0 > range.1 {
                return Err(invalid(arg, &t.text));
            }
            ranges.push(range);
        }
        Ok(Self(ranges))
    }
    fn render(&self, out: &mut String) {
        for (i, &(lo, hi)) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            if lo == hi {
                out.push_str(&lo.to_string());
            } else {
                out.push_str(&format!("{lo}-{hi}"));
            }
        }
    }
    fn to_json(&self) -> JsonValue {
        list_json(self)
    }
}

/// A numeric SNMP object identifier (`1.3.6.1.4.1.5951.4.1.1.41.1.5`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Oid(pub Vec<u32>);

impl fmt::Display for Oid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, arc) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            write!(f, "{arc}")?;
        }
        Ok(())
    }
}

impl ArgValue for Oid {
    fn help() -> String {
        "<snmp oid>".into()
    }
    fn parse(arg: &str, tokens: &[Token]) -> Result<Self> {
        let text = single(arg, tokens)?;
        let arcs = text
            .strip_prefix('.')
            .unwrap_or(text)
            .split('.')
            .map(str::parse::<u32>)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|_| invalid(arg, text))?;
        // BER needs at least two arcs, the first 0..=2.
        if arcs.len() < 2 || arcs[0] > 2 || arcs.len() > 128 {
            return Err(invalid(arg, text));
        }
        Ok(Self(arcs))
    }
    fn render(&self, out: &mut String) {
        out.push_str(&self.to_string());
    }
}

/// A flag option (`-passive`): present means true.
impl ArgValue for bool {
    const ARITY: Arity = Arity::Flag;
    fn help() -> String {
        String::new()
    }
    fn parse(arg: &str, tokens: &[Token]) -> Result<Self> {
        match tokens.first() {
            None => Ok(true),
            Some(t) => Err(CliError::arg_value(
                ErrorKind::NoSuchArgument,
                arg,
                t.text.clone(),
            )),
        }
    }
    fn render(&self, _out: &mut String) {}
    fn to_json(&self) -> JsonValue {
        JsonValue::from(*self)
    }
}

/// An optional setting: absent by default; typing it sets it.
impl<T: ArgValue> ArgValue for Option<T> {
    const ARITY: Arity = T::ARITY;
    fn help() -> String {
        T::help()
    }
    fn parse(arg: &str, tokens: &[Token]) -> Result<Self> {
        T::parse(arg, tokens).map(Some)
    }
    fn render(&self, out: &mut String) {
        if let Some(v) = self {
            v.render(out);
        }
    }
    fn to_json(&self) -> JsonValue {
        self.as_ref().map_or(JsonValue::Null, ArgValue::to_json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lex::tokenize;

    fn p<T: ArgValue>(s: &str) -> Result<T> {
        T::parse("x", &tokenize(s).unwrap())
    }

    #[test]
    fn keywords_take_unique_prefixes() {
        assert_eq!(p::<YesNo>("yes").unwrap(), YesNo::Yes);
        assert_eq!(
            p::<EnabledDisabled>("dis").unwrap(),
            EnabledDisabled::Disabled
        );
        assert_eq!(
            p::<TimeUnit>("m").unwrap_err().kind,
            ErrorKind::InvalidArgumentValue
        );
        assert_eq!(p::<TimeUnit>("ms").unwrap(), TimeUnit::Msec);
        assert_eq!(p::<TimeUnit>("min").unwrap(), TimeUnit::Min);
    }

    #[test]
    fn bounded_reports_range_and_type_errors() {
        type W = Bounded<1, 100>;
        assert_eq!(p::<W>("100").unwrap().get(), 100);
        assert_eq!(
            p::<W>("101").unwrap_err().to_string(),
            "ERROR: Argument value out of range [x, 101]"
        );
        assert_eq!(
            p::<W>("abc").unwrap_err().to_string(),
            "ERROR: Invalid argument value [x, abc]"
        );
    }

    #[test]
    fn durations_netmasks_ports() {
        let d = p::<Duration<1, 20940>>("500 msec").unwrap();
        assert_eq!(d.millis(), 500);
        let mut s = String::new();
        d.render(&mut s);
        assert_eq!(s, "500 MSEC");
        assert!(p::<Netmask>("255.0.255.0").is_err());
        assert_eq!(p::<Netmask>("255.255.254.0").unwrap().prefix_len(), 23);
        assert_eq!(p::<Port>("*").unwrap(), Port::Any);
        assert!(p::<Port>("0").is_err() && p::<Port>("65536").is_err());
        assert_eq!(
            p::<Oid>(".1.3.6.1.4.1.99999.2.0").unwrap().to_string(),
            "1.3.6.1.4.1.99999.2.0"
        );
        assert!(p::<RespCodes>("200 301-302").unwrap().contains(302));
    }

    #[test]
    fn names_follow_netscaler_rules() {
        assert!(Name::is_valid("Service-HTTP-1"));
        assert!(Name::is_valid("_x.y:z@w=1 #2"));
        assert!(!Name::is_valid("-x") && !Name::is_valid("") && !Name::is_valid("a/b"));
    }
}
