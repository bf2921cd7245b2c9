//! Errors of the command language, printed in NetScaler's form:
//! `ERROR: <message> [<argument>, <value>]`.

use std::fmt;

/// What went wrong. Each kind prints NetScaler's wording and carries the NITRO error code an
/// automation client would expect for the same situation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    NoSuchCommand,
    AmbiguousKeyword,
    NoSuchArgument,
    DuplicateArgument,
    RequiredArgumentMissing,
    InvalidArgumentValue,
    ValueOutOfRange,
    NoSuchResource,
    ResourceAlreadyExists,
    ResourceAlreadyBound,
    ResourceNotBound,
    ResourceInUse,
    DefaultMonitorUnbind,
    BuiltinMonitor,
    ArgumentNotApplicable,
    Misconfigured,
    TypeMismatch,
    AddressInUse,
    UnterminatedQuote,
    BadRange,
    NotSupported,
    Io,
}

impl ErrorKind {
    pub const fn message(self) -> &'static str {
        match self {
            Self::NoSuchCommand => "No such command",
            Self::AmbiguousKeyword => "Ambiguous keyword",
            Self::NoSuchArgument => "No such argument",
            Self::DuplicateArgument => "Argument specified more than once",
            Self::RequiredArgumentMissing => "Required argument missing",
            Self::InvalidArgumentValue => "Invalid argument value",
            Self::ValueOutOfRange => "Argument value out of range",
            Self::NoSuchResource => "No such resource",
            Self::ResourceAlreadyExists => "Resource already exists",
            Self::ResourceAlreadyBound => "Resource already bound",
            Self::ResourceNotBound => "Resource is not bound",
            Self::ResourceInUse => "Resource is in use",
            Self::DefaultMonitorUnbind => "Default monitor cannot be unbound from a service",
            Self::BuiltinMonitor => "Built-in monitor cannot be modified or removed",
            Self::ArgumentNotApplicable => "Argument not applicable to this type",
            Self::Misconfigured => "Monitor misconfigured",
            Self::TypeMismatch => "Service type mismatch",
            Self::AddressInUse => "IP address and port combination already in use",
            Self::UnterminatedQuote => "Unterminated quoted string",
            Self::BadRange => "Invalid range expression",
            Self::NotSupported => "Not supported",
            Self::Io => "I/O error",
        }
    }

    /// NITRO error code: the number NetScaler's API returns for the same situation
    /// (NetScaler 12.1's code tables, `reference/nitro.md` §3.4).
    pub const fn code(self) -> u32 {
        match self {
            Self::NoSuchResource => 258,
            Self::ResourceAlreadyExists | Self::ResourceAlreadyBound => 273,
            Self::AddressInUse => 304,
            Self::ResourceInUse => 315,
            Self::NoSuchCommand | Self::AmbiguousKeyword => 1088,
            Self::NoSuchArgument => 1090,
            Self::RequiredArgumentMissing => 1095,
            Self::InvalidArgumentValue | Self::ValueOutOfRange => 1097,
            Self::TypeMismatch => 1304,
            Self::DefaultMonitorUnbind => 2164,
            Self::BuiltinMonitor => 2132,
            Self::ResourceNotBound => 2170,
            Self::NotSupported => 1067,
            _ => 278,
        }
    }

    /// Whether the request was wrong in itself (HTTP 400 in NITRO) rather than refused by
    /// the configuration's state (404, 409, 599).
    pub const fn is_bad_request(self) -> bool {
        matches!(
            self,
            Self::NoSuchCommand
                | Self::AmbiguousKeyword
                | Self::NoSuchArgument
                | Self::DuplicateArgument
                | Self::RequiredArgumentMissing
                | Self::InvalidArgumentValue
                | Self::ValueOutOfRange
                | Self::UnterminatedQuote
                | Self::BadRange
        )
    }
}

/// One command-language error: a kind, optionally refined by a detail sentence, and the
/// offending argument with its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CliError {
    pub kind: ErrorKind,
    pub detail: Option<String>,
    pub argument: Option<String>,
    pub value: Option<String>,
}

impl CliError {
    pub fn new(kind: ErrorKind) -> Self {
        Self {
            kind,
            detail: None,
            argument: None,
            value: None,
        }
    }

    /// `[argument]`
    pub fn arg(kind: ErrorKind, argument: impl Into<String>) -> Self {
        Self {
            argument: Some(argument.into()),
            ..Self::new(kind)
        }
    }

    /// `[argument, value]`
    pub fn arg_value(
        kind: ErrorKind,
        argument: impl Into<String>,
        value: impl Into<String>,
    ) -> Self {
        Self {
            argument: Some(argument.into()),
            value: Some(value.into()),
            ..Self::new(kind)
        }
    }

    /// Replaces the generic message with a more precise sentence.
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ERROR: ")?;
        f.write_str(self.detail.as_deref().unwrap_or(self.kind.message()))?;
        match (&self.argument, &self.value) {
            (Some(a), Some(v)) => write!(f, " [{a}, {v}]"),
            (Some(a), None) => write!(f, " [{a}]"),
            _ => Ok(()),
        }
    }
}

impl std::error::Error for CliError {}

pub type Result<T> = std::result::Result<T, CliError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_netscaler_form() {
        let e = CliError::arg_value(ErrorKind::NoSuchResource, "name", "web01");
        assert_eq!(e.to_string(), "ERROR: No such resource [name, web01]");
        let e = CliError::arg(ErrorKind::RequiredArgumentMissing, "serviceType");
        assert_eq!(
            e.to_string(),
            "ERROR: Required argument missing [serviceType]"
        );
        let e = CliError::new(ErrorKind::DefaultMonitorUnbind);
        assert_eq!(
            e.to_string(),
            "ERROR: Default monitor cannot be unbound from a service"
        );
    }
}
