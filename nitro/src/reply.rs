//! What NITRO answers: a status with NetScaler's exact reason phrase (the Go SDK compares
//! whole status lines) and the `errorcode`/`message`/`severity` envelope every body carries.

use ctl::error::{CliError, ErrorKind};
use serde_json::{Map, Value, json};

/// One answer, before it is written to HTTP.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
    /// `Set-Cookie` on a successful login.
    pub cookie: Option<String>,
}

/// The reason phrase NetScaler writes for `status`.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        207 => "Multi Status",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        599 => "Netscaler specific error",
        _ => "Unknown",
    }
}

impl Reply {
    /// `{"errorcode":0,"message":"Done","severity":"NONE"}` and, when given, the objects
    /// under their resource's name.
    pub fn done(status: u16, data: Option<(&str, Value)>) -> Self {
        let mut body = Map::new();
        body.insert("errorcode".into(), json!(0));
        body.insert("message".into(), json!("Done"));
        body.insert("severity".into(), json!("NONE"));
        if let Some((key, value)) = data {
            body.insert(key.to_owned(), value);
        }
        Self {
            status,
            body: Value::Object(body),
            cookie: None,
        }
    }

    /// An error in NITRO's form.
    pub fn error(status: u16, code: u32, message: impl Into<String>) -> Self {
        Self {
            status,
            body: json!({"errorcode": code, "message": message.into(), "severity": "ERROR"}),
            cookie: None,
        }
    }

    /// A refusal of the command language, with NetScaler's code and the status it maps to:
    /// 404 for a missing object, 409 for an existing one, 400 for a malformed request,
    /// 599 for what the configuration refused.
    pub fn refused(e: &CliError) -> Self {
        let status = match e.kind {
            ErrorKind::NoSuchResource => 404,
            ErrorKind::ResourceAlreadyExists | ErrorKind::ResourceAlreadyBound => 409,
            k if k.is_bad_request() => 400,
            _ => 599,
        };
        let text = e.to_string();
        let message = text.strip_prefix("ERROR: ").unwrap_or(&text);
        Self::error(status, e.kind.code(), message)
    }

    pub fn errorcode(&self) -> u64 {
        self.body["errorcode"].as_u64().unwrap_or(0)
    }
}

/// The errors of the API itself (not of a command), with NetScaler's codes.
pub mod errors {
    use super::Reply;

    pub fn invalid_json(detail: &str) -> Reply {
        Reply::error(400, 1233, format!("Invalid JSON input [{detail}]"))
    }
    pub fn unknown_resource(name: &str) -> Reply {
        Reply::error(400, 1232, format!("Invalid object name [{name}]"))
    }
    pub fn unknown_attribute(name: &str) -> Reply {
        Reply::error(400, 1090, format!("No such argument [{name}]"))
    }
    pub fn bad_value(name: &str, value: &str) -> Reply {
        Reply::error(
            400,
            1097,
            format!("Invalid argument value [{name}, {value}]"),
        )
    }
    pub fn missing(name: &str) -> Reply {
        Reply::error(400, 1095, format!("Required argument missing [{name}]"))
    }
    pub fn unsupported_action(action: &str) -> Reply {
        Reply::error(
            400,
            1240,
            format!("Invalid nitro action or operation [{action}]"),
        )
    }
    pub fn method(method: &str) -> Reply {
        Reply::error(
            405,
            1237,
            format!(
                "Invalid method name. It should be either post, put, get, stat or delete [{method}]"
            ),
        )
    }
    pub fn no_such(key: &str, name: &str) -> Reply {
        Reply::error(404, 258, format!("No such resource [{key}, {name}]"))
    }
    pub fn bad_credentials() -> Reply {
        Reply::error(401, 354, "Invalid username or password")
    }
    pub fn login_required() -> Reply {
        Reply::error(401, 352, "Login is required")
    }
    pub fn session_expired() -> Reply {
        Reply::error(401, 444, "Session expired or killed. Please login again")
    }
    pub fn not_authorized() -> Reply {
        Reply::error(403, 2138, "Not authorized to execute this command")
    }
    pub fn too_many_logins() -> Reply {
        Reply::error(
            429,
            445,
            "Too many failed logins from this address; try again later",
        )
    }
    pub fn session_limit() -> Reply {
        Reply::error(401, 445, "Session limit exceeded")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_keep_netscalers_codes_and_statuses() {
        let e = CliError::arg_value(ErrorKind::NoSuchResource, "name", "x");
        let r = Reply::refused(&e);
        assert_eq!((r.status, r.errorcode()), (404, 258));
        assert_eq!(r.body["message"], "No such resource [name, x]");
        assert_eq!(r.body["severity"], "ERROR");
        let e = CliError::arg_value(ErrorKind::ResourceAlreadyExists, "name", "x");
        assert_eq!(Reply::refused(&e).status, 409);
        let e = CliError::arg_value(ErrorKind::ValueOutOfRange, "weight", "101");
        assert_eq!(
            (Reply::refused(&e).status, Reply::refused(&e).errorcode()),
            (400, 1097)
        );
        let e = CliError::arg_value(ErrorKind::ResourceInUse, "name", "x");
        assert_eq!(Reply::refused(&e).status, 599);
        assert_eq!(reason(599), "Netscaler specific error");
        assert_eq!(reason(207), "Multi Status");
    }

    #[test]
    fn done_always_carries_the_envelope() {
        let r = Reply::done(200, None);
        assert_eq!(
            r.body,
            json!({"errorcode":0,"message":"Done","severity":"NONE"})
        );
        let r = Reply::done(200, Some(("lbvserver", json!([{"name": "v"}]))));
        assert_eq!(r.body["lbvserver"][0]["name"], "v");
    }
}
