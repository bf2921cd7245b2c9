//! Requests on several objects at once, and `X-NITRO-ONERROR`: without it (or with
//! `rollback`) the objects are applied all or nothing, as one generation; with `exit` one by
//! one until the first failure, with `continue` every one, each as its own generation, and a
//! failure among them is answered `207 Multi Status` with one entry per object, as
//! appliances do.

use ctl::command::Command;
use ctl::error::CliError;
use serde_json::{Value, json};

use crate::reply::Reply;

/// What happens after an object of a bulk request fails.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnError {
    /// Nothing is applied (NetScaler undoes what was done; here nothing is done).
    #[default]
    Rollback,
    /// Stop there; what was applied stays.
    Exit,
    /// Go on with the others.
    Continue,
}

impl OnError {
    /// The header's value, case-insensitive; `None` for a value NITRO does not have.
    pub fn parse(header: Option<&str>) -> Option<Self> {
        match header.map(|h| h.trim().to_ascii_lowercase()).as_deref() {
            None | Some("rollback") => Some(Self::Rollback),
            Some("exit") => Some(Self::Exit),
            Some("continue") => Some(Self::Continue),
            Some(_) => None,
        }
    }
}

/// One object's commands, or why it could not be turned into any.
pub type Group = Result<Vec<Command>, Reply>;

/// The appliance's all-or-nothing apply ([`crate::Appliance::apply`]).
pub type ApplyAll<'a> = &'a dyn Fn(&[Vec<Command>]) -> Result<(), (usize, CliError)>;

/// Applies the groups as `mode` says through `apply` (all or nothing over the groups it is
/// given); `status` on success.
pub fn run(groups: Vec<Group>, mode: OnError, status: u16, apply: ApplyAll<'_>) -> Reply {
    let n = groups.len();
    if n <= 1 || mode == OnError::Rollback {
        return all_or_nothing(groups, status, apply);
    }
    let mut entries = Vec::with_capacity(n);
    let mut failed = false;
    for group in groups {
        let outcome = group.and_then(|cmds| {
            apply(std::slice::from_ref(&cmds)).map_err(|(_, e)| Reply::refused(&e))
        });
        match outcome {
            Ok(()) => entries.push(json!({"errorcode": 0, "message": "Done", "severity": "NONE"})),
            Err(r) => {
                failed = true;
                entries.push(r.body);
                if mode == OnError::Exit {
                    break;
                }
            }
        }
    }
    if !failed {
        return Reply::done(status, None);
    }
    let mut reply = Reply::error(207, 1243, "Bulk operation failed");
    if let Value::Object(body) = &mut reply.body {
        body.insert("response".into(), Value::from(entries));
    }
    reply
}

fn all_or_nothing(groups: Vec<Group>, status: u16, apply: ApplyAll<'_>) -> Reply {
    let n = groups.len();
    let groups = match groups.into_iter().collect::<Result<Vec<_>, _>>() {
        Ok(g) => g,
        Err(r) => return r,
    };
    match apply(&groups) {
        Ok(()) => Reply::done(status, None),
        Err((i, e)) => {
            let mut r = Reply::refused(&e);
            if n > 1
                && let Some(Value::String(m)) = r.body.get_mut("message")
            {
                m.push_str(&format!(" (object {} of {n}; nothing was applied)", i + 1));
            }
            r
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctl::error::ErrorKind;
    use std::cell::RefCell;

    fn cmd(line: &str) -> Vec<Command> {
        ctl::grammar::parse_line(line)
            .unwrap()
            .into_iter()
            .collect()
    }

    /// An appliance that refuses any group holding `rm server nosuch`, and keeps what it
    /// applied.
    fn appliance(
        log: &RefCell<Vec<usize>>,
    ) -> impl Fn(&[Vec<Command>]) -> Result<(), (usize, CliError)> + '_ {
        move |groups| {
            let bad = groups
                .iter()
                .position(|g| format!("{g:?}").contains("nosuch"));
            if let Some(i) = bad {
                return Err((
                    i,
                    CliError::new(ErrorKind::NoSuchResource).with_detail("name, nosuch"),
                ));
            }
            log.borrow_mut().push(groups.len());
            Ok(())
        }
    }

    fn three() -> Vec<Group> {
        vec![
            Ok(cmd("add server a 198.18.0.21")),
            Ok(cmd("rm server nosuch")),
            Ok(cmd("add server b 198.18.0.22")),
        ]
    }

    #[test]
    fn the_header_picks_the_mode() {
        assert_eq!(OnError::parse(None), Some(OnError::Rollback));
        assert_eq!(OnError::parse(Some("CONTINUE")), Some(OnError::Continue));
        assert_eq!(OnError::parse(Some(" exit ")), Some(OnError::Exit));
        assert_eq!(OnError::parse(Some("maybe")), None);
    }

    #[test]
    fn rollback_applies_nothing_and_names_the_object() {
        let log = RefCell::new(Vec::new());
        let r = run(three(), OnError::Rollback, 201, &appliance(&log));
        assert_eq!(r.status, 404);
        assert!(
            r.body["message"]
                .as_str()
                .unwrap()
                .contains("object 2 of 3; nothing was applied")
        );
        assert!(log.borrow().is_empty());
    }

    #[test]
    fn exit_stops_at_the_failure_and_keeps_what_was_done() {
        let log = RefCell::new(Vec::new());
        let r = run(three(), OnError::Exit, 201, &appliance(&log));
        assert_eq!((r.status, r.errorcode()), (207, 1243));
        let entries = r.body["response"].as_array().unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(
            (
                entries[0]["errorcode"].as_u64(),
                entries[1]["errorcode"].as_u64()
            ),
            (Some(0), Some(258))
        );
        assert_eq!(*log.borrow(), [1]);
    }

    #[test]
    fn continue_goes_on_and_lists_every_object() {
        let log = RefCell::new(Vec::new());
        let r = run(three(), OnError::Continue, 201, &appliance(&log));
        assert_eq!(r.status, 207);
        let codes: Vec<_> = r.body["response"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["errorcode"].as_u64())
            .collect();
        assert_eq!(codes, [Some(0), Some(258), Some(0)]);
        assert_eq!(*log.borrow(), [1, 1]);
        // Nothing failed: a plain Done with the success status.
        let ok = run(
            vec![
                Ok(cmd("add server c 198.18.0.23")),
                Ok(cmd("add server d 198.18.0.24")),
            ],
            OnError::Continue,
            201,
            &appliance(&log),
        );
        assert_eq!((ok.status, ok.errorcode()), (201, 0));
    }
}
