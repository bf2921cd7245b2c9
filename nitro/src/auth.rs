//! Who is asking: NITRO sessions (`login` → `NITRO_AUTH_TOKEN`), per-request credentials
//! (`X-NITRO-USER`/`X-NITRO-PASS`), and the rate limit on failed logins.
//!
//! Users and their command policies come from the running configuration (`add system
//! user`, `bind system user`), looked up on every request: unbinding a policy or removing a
//! user takes effect at once, sessions included. There is no built-in user: with none
//! configured every request is refused.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use ctl::Config;

use crate::reply::{Reply, errors};
use crate::request::{Request, percent_decode};

/// What a caller may do, from the command policies bound to its user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rights {
    pub read: bool,
    /// Enable and disable (NetScaler's `operator`).
    pub operate: bool,
    pub write: bool,
    /// Manage users (`superuser` only, as NetScaler's other policies may not).
    pub superuser: bool,
}

/// An authenticated caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    pub user: String,
    pub rights: Rights,
}

/// Failed logins an address may make within [`FAILURE_WINDOW`] before it must wait.
pub const MAX_FAILURES: u32 = 5;
pub const FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// How long an address that failed [`MAX_FAILURES`] times is refused without a check.
pub const LOCKOUT: Duration = Duration::from_secs(30);
/// A session's idle timeout when neither the login nor the user sets one (NetScaler's).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// Sessions kept at most, over all users (each user also has its `-maxsession`).
const MAX_SESSIONS: usize = 4096;

#[derive(Debug)]
struct Session {
    user: String,
    idle: Duration,
    last_used: Instant,
}

#[derive(Debug, Default)]
struct Failures {
    count: u32,
    first: Option<Instant>,
    locked_until: Option<Instant>,
}

#[derive(Debug, Default)]
struct State {
    sessions: HashMap<String, Session>,
    failures: HashMap<IpAddr, Failures>,
}

/// The sessions and failed-login records of one API listener (or several sharing it).
#[derive(Debug, Default)]
pub struct Auth {
    state: Mutex<State>,
}

fn rights_of(config: &Config, user: &str) -> Option<Rights> {
    let u = config.system_users.get(user)?;
    u.reads().then(|| Rights {
        read: true,
        operate: u.operates(),
        write: u.writes(),
        superuser: u
            .policies
            .iter()
            .any(|b| b.policy == ctl::conf::users::CommandPolicy::Superuser),
    })
}

/// 16 random bytes as NetScaler-looking session id: `##` and 32 hex digits.
fn new_token() -> Option<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .ok()?;
    let hex: String = bytes.iter().map(|b| format!("{b:02X}")).collect();
    Some(format!("##{hex}"))
}

/// The session token a request carries: `Cookie: NITRO_AUTH_TOKEN=` or `sessionid=`, or a
/// `Set-Cookie` request header (the Go SDK's way), URL-decoded.
fn token_of(req: &Request) -> Option<String> {
    let cookies = req
        .headers_named("cookie")
        .chain(req.headers_named("set-cookie"));
    for header in cookies {
        for part in header.split(';') {
            if let Some((k, v)) = part.trim().split_once('=')
                && (k.eq_ignore_ascii_case("NITRO_AUTH_TOKEN")
                    || k.eq_ignore_ascii_case("sessionid"))
                && !v.is_empty()
            {
                return Some(percent_decode(v, false));
            }
        }
    }
    None
}

impl Auth {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `peer` must wait before its next login attempt.
    fn locked_out(state: &mut State, peer: Option<IpAddr>, now: Instant) -> bool {
        let Some(f) = peer.and_then(|p| state.failures.get_mut(&p)) else {
            return false;
        };
        f.locked_until.is_some_and(|t| t > now)
    }

    fn record_failure(state: &mut State, peer: Option<IpAddr>, now: Instant) {
        let Some(peer) = peer else { return };
        // Bounded: an address flood cannot grow the map past this.
        if state.failures.len() > 10_000 {
            state
                .failures
                .retain(|_, f| f.locked_until.is_some_and(|t| t > now));
        }
        let f = state.failures.entry(peer).or_default();
        if f.first
            .is_none_or(|t| now.duration_since(t) > FAILURE_WINDOW)
        {
            *f = Failures {
                count: 0,
                first: Some(now),
                locked_until: None,
            };
        }
        f.count += 1;
        if f.count >= MAX_FAILURES {
            f.locked_until = Some(now + LOCKOUT);
            log::warn!(target: "nitro", "{peer}: {} failed logins, refused for {} s", f.count, LOCKOUT.as_secs());
        }
    }

    /// Checks a user name and password; failures count toward the peer's limit.
    fn check_password(
        &self,
        config: &Config,
        peer: Option<IpAddr>,
        user: &str,
        password: &str,
    ) -> Result<Rights, Reply> {
        let now = Instant::now();
        if Self::locked_out(&mut self.lock(), peer, now) {
            return Err(errors::too_many_logins());
        }
        if config.system_users.is_empty() {
            log::warn!(target: "nitro", "refused {user:?}: no system user is configured (add system user, bind system user … superuser 1)");
        }
        let ok = config
            .system_users
            .get(user)
            .is_some_and(|u| u.password.verify(password));
        match ok.then(|| rights_of(config, user)).flatten() {
            Some(r) => {
                if let Some(p) = peer {
                    self.lock().failures.remove(&p);
                }
                Ok(r)
            }
            None => {
                Self::record_failure(&mut self.lock(), peer, now);
                Err(errors::bad_credentials())
            }
        }
    }

    /// `POST /nitro/v1/config/login`: a new session, or 401.
    pub fn login(
        &self,
        config: &Config,
        peer: Option<IpAddr>,
        user: &str,
        password: &str,
        timeout_s: Option<u64>,
    ) -> Result<String, Reply> {
        self.check_password(config, peer, user, password)?;
        let u = &config.system_users[user];
        // The user's -timeout caps what the login asks for.
        let cap = u.settings.timeout.map(|t| Duration::from_secs(t.get()));
        let asked = timeout_s.filter(|&t| t > 0).map(Duration::from_secs);
        let idle = match (asked, cap) {
            (Some(a), Some(c)) => a.min(c),
            (Some(a), None) => a,
            (None, Some(c)) => c,
            (None, None) => DEFAULT_TIMEOUT,
        };
        let mut state = self.lock();
        let now = Instant::now();
        state
            .sessions
            .retain(|_, s| now.duration_since(s.last_used) <= s.idle);
        let held = state.sessions.values().filter(|s| s.user == user).count();
        if held >= usize::try_from(u.settings.max_session.get()).unwrap_or(usize::MAX)
            || state.sessions.len() >= MAX_SESSIONS
        {
            return Err(errors::session_limit());
        }
        let token = new_token().ok_or_else(|| Reply::error(500, 278, "No random source"))?;
        state.sessions.insert(
            token.clone(),
            Session {
                user: user.to_owned(),
                idle,
                last_used: now,
            },
        );
        log::info!(target: "nitro", "{user} logged in (session idle timeout {} s)", idle.as_secs());
        Ok(token)
    }

    /// `POST /nitro/v1/config/logout`: ends the request's session.
    pub fn logout(&self, req: &Request) {
        if let Some(t) = token_of(req)
            && let Some(s) = self.lock().sessions.remove(&t)
        {
            log::info!(target: "nitro", "{} logged out", s.user);
        }
    }

    /// Who sent `req`: its session, else its `X-NITRO-USER`/`X-NITRO-PASS`, else 401.
    pub fn caller(&self, config: &Config, req: &Request) -> Result<Caller, Reply> {
        if let Some(token) = token_of(req) {
            let now = Instant::now();
            let mut state = self.lock();
            let user = match state.sessions.get_mut(&token) {
                Some(s) if now.duration_since(s.last_used) <= s.idle => {
                    s.last_used = now;
                    s.user.clone()
                }
                Some(_) => {
                    state.sessions.remove(&token);
                    return Err(errors::session_expired());
                }
                None => return Err(errors::session_expired()),
            };
            return match rights_of(config, &user) {
                Some(rights) => Ok(Caller { user, rights }),
                None => {
                    // Removed, or left without a policy, since the login.
                    state.sessions.remove(&token);
                    Err(errors::session_expired())
                }
            };
        }
        match (req.header("x-nitro-user"), req.header("x-nitro-pass")) {
            (Some(user), Some(pass)) => {
                let rights = self.check_password(config, req.peer, user, pass)?;
                Ok(Caller {
                    user: user.to_owned(),
                    rights,
                })
            }
            _ => {
                if config.system_users.is_empty() {
                    log::warn!(target: "nitro", "request without credentials refused; no system user is configured");
                }
                Err(errors::login_required())
            }
        }
    }

    /// Sessions open now (for tests and `stat`).
    pub fn sessions(&self) -> usize {
        self.lock().sessions.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctl::grammar::parse_line;

    fn config(lines: &[&str]) -> Config {
        let mut c = Config::default();
        for l in lines {
            c.apply_all(&parse_line(l).unwrap()).unwrap();
        }
        c
    }

    fn req(headers: &[(&str, &str)]) -> Request {
        Request {
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), (*v).to_owned()))
                .collect(),
            peer: Some("198.18.0.50".parse().unwrap()),
            ..Request::default()
        }
    }

    const USERS: &[&str] = &[
        "add system user admin adminpw",
        "bind system user admin superuser 1",
        "add system user viewer viewpw",
        "bind system user viewer read-only 1",
        "add system user nobody nopw",
    ];

    #[test]
    fn a_session_token_is_taken_from_every_form_clients_send() {
        let c = config(USERS);
        let auth = Auth::default();
        let token = auth.login(&c, None, "admin", "adminpw", Some(60)).unwrap();
        assert!(token.starts_with("##") && token.len() == 34);
        let encoded = token.replace('#', "%23");
        for h in [
            ("Cookie", format!("NITRO_AUTH_TOKEN={encoded}")),
            ("Cookie", format!("a=b; sessionid={encoded}")),
            ("Set-Cookie", format!("NITRO_AUTH_TOKEN={token}")),
        ] {
            let who = auth.caller(&c, &req(&[(h.0, &h.1)])).unwrap();
            assert_eq!(who.user, "admin");
            assert!(who.rights.write);
        }
        auth.logout(&req(&[("Cookie", &format!("NITRO_AUTH_TOKEN={encoded}"))]));
        let r = auth
            .caller(
                &c,
                &req(&[("Cookie", &format!("NITRO_AUTH_TOKEN={encoded}"))]),
            )
            .unwrap_err();
        assert_eq!((r.status, r.errorcode()), (401, 444));
    }

    #[test]
    fn credentials_per_request_and_the_rights_they_give() {
        let c = config(USERS);
        let auth = Auth::default();
        let viewer = auth
            .caller(
                &c,
                &req(&[("X-NITRO-USER", "viewer"), ("X-NITRO-PASS", "viewpw")]),
            )
            .unwrap();
        assert!(viewer.rights.read && !viewer.rights.write && !viewer.rights.operate);
        // A user without a policy cannot get in, even with the right password.
        let r = auth
            .caller(
                &c,
                &req(&[("X-NITRO-USER", "nobody"), ("X-NITRO-PASS", "nopw")]),
            )
            .unwrap_err();
        assert_eq!((r.status, r.errorcode()), (401, 354));
        let r = auth.caller(&c, &req(&[])).unwrap_err();
        assert_eq!((r.status, r.errorcode()), (401, 352));
    }

    #[test]
    fn failed_logins_lock_the_address_out() {
        let c = config(USERS);
        let auth = Auth::default();
        let peer = Some("198.18.0.66".parse().unwrap());
        for _ in 0..MAX_FAILURES {
            let r = auth.login(&c, peer, "admin", "wrong", None).unwrap_err();
            assert_eq!(r.status, 401);
        }
        // Even the right password now waits.
        let r = auth.login(&c, peer, "admin", "adminpw", None).unwrap_err();
        assert_eq!(r.status, 429);
        // Another address is not affected.
        assert!(auth.login(&c, None, "admin", "adminpw", None).is_ok());
    }

    #[test]
    fn no_configured_user_means_nobody_gets_in() {
        let c = Config::default();
        let auth = Auth::default();
        assert_eq!(
            auth.login(&c, None, "nsroot", "nsroot", None)
                .unwrap_err()
                .status,
            401
        );
    }

    #[test]
    fn a_removed_user_loses_its_session() {
        let mut c = config(USERS);
        let auth = Auth::default();
        let token = auth.login(&c, None, "viewer", "viewpw", None).unwrap();
        c.apply_all(&parse_line("rm system user viewer").unwrap())
            .unwrap();
        let r = auth
            .caller(
                &c,
                &req(&[("Cookie", &format!("NITRO_AUTH_TOKEN={token}"))]),
            )
            .unwrap_err();
        assert_eq!(r.errorcode(), 444);
        assert_eq!(auth.sessions(), 0);
    }
}
