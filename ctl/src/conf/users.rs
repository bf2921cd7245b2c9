//! `system user`: who may use the management API (NITRO), with which command policies.
//!
//! Passwords are kept only as salted SHA-512 crypt hashes (`$6$…`, the form of
//! /etc/shadow, so `openssl passwd -6` makes one an operator can paste after `-encrypted`).
//! `save` writes the hash with `-encrypted`; a plain password never reaches ns.conf.

use crate::error::{CliError, ErrorKind, Result};
use crate::keywords;
use crate::settings;
use crate::value::{Bounded, EnabledDisabled, Name};

keywords! {
    /// NetScaler's built-in command policies.
    pub enum CommandPolicy {
        Superuser = "superuser",
        Sysadmin = "sysadmin",
        Network = "network",
        Operator = "operator",
        ReadOnly = "read-only",
    }
}

impl CommandPolicy {
    /// May change the configuration (every verb).
    pub const fn writes(self) -> bool {
        matches!(self, Self::Superuser | Self::Sysadmin | Self::Network)
    }

    /// May enable and disable servers, services and vservers (NetScaler's `operator`).
    pub const fn operates(self) -> bool {
        self.writes() || matches!(self, Self::Operator)
    }
}

keywords! {
    /// `-hashmethod` of an `-encrypted` password as NetScaler saves it.
    pub enum HashMethod { Sha1 = "SHA1", Sha512 = "SHA512", Sha512Crypt = "SHA512CRYPT" }
}

settings! {
    /// Options of `add/set system user`.
    pub struct SystemUserSettings / SystemUserSetting / SystemUserKey {
        external_auth: EnabledDisabled = EnabledDisabled::Enabled, "externalAuth", ExternalAuth, "Also authenticate through external servers (Fulcrum has none: no effect)";
        timeout: Option<Bounded<0, 86_400>> = None, "timeout", Timeout, "Idle timeout of the user's API sessions, in seconds (default 1800)";
        logging: EnabledDisabled = EnabledDisabled::Disabled, "logging", Logging, "Log the user's commands (no effect)";
        max_session: Bounded<1, 40> = Bounded::new(20), "maxsession", MaxSession, "Sessions the user may hold at once";
        hash_method: Option<HashMethod> = None, "hashmethod", HashMethod, "How an -encrypted password was hashed";
    }
}

/// A password as stored: a crypt(3) hash, or a hash of NetScaler's own that cannot be
/// checked here (replayed from an appliance's ns.conf: such a user cannot log in until
/// given a new password).
#[derive(Clone, PartialEq, Eq)]
pub struct PasswordHash(String);

impl std::fmt::Debug for PasswordHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PasswordHash(…)")
    }
}

/// Rounds of SHA-512 crypt: crypt(3)'s default, about 5 ms a check.
const ROUNDS: usize = 5_000;

impl PasswordHash {
    /// Hashes `plain` with a fresh random salt.
    pub fn of(plain: &str) -> Result<Self> {
        if plain.is_empty() {
            return Err(CliError::arg(
                ErrorKind::RequiredArgumentMissing,
                "password",
            ));
        }
        let params = sha_crypt::Sha512Params::new(ROUNDS).map_err(|_| hash_failed())?;
        sha_crypt::sha512_simple(plain, &params)
            .map(Self)
            .map_err(|_| hash_failed())
    }

    /// A hash given with `-encrypted`, kept as it is.
    pub fn stored(text: &str) -> Result<Self> {
        if text.is_empty() || text.contains(char::is_whitespace) {
            return Err(CliError::arg_value(
                ErrorKind::InvalidArgumentValue,
                "password",
                "(hidden)",
            ));
        }
        Ok(Self(text.to_owned()))
    }

    /// The text `save` writes after the user's name (with `-encrypted`).
    pub fn as_saved(&self) -> &str {
        &self.0
    }

    /// Whether this is a hash Fulcrum can check.
    pub fn checkable(&self) -> bool {
        self.0.starts_with("$6$")
    }

    /// Whether `plain` is the password (constant time in the hash comparison).
    pub fn verify(&self, plain: &str) -> bool {
        self.checkable() && sha_crypt::sha512_check(plain, &self.0).is_ok()
    }
}

fn hash_failed() -> CliError {
    CliError::new(ErrorKind::Io).with_detail("Cannot hash the password (no random salt)")
}

/// `bind system user <name> <policy> <priority>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyBinding {
    pub policy: CommandPolicy,
    pub priority: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemUser {
    pub name: Name,
    pub password: PasswordHash,
    pub settings: SystemUserSettings,
    /// In priority order (lowest number first).
    pub policies: Vec<PolicyBinding>,
}

impl SystemUser {
    /// May change the configuration.
    pub fn writes(&self) -> bool {
        self.policies.iter().any(|b| b.policy.writes())
    }

    /// May enable and disable objects.
    pub fn operates(&self) -> bool {
        self.policies.iter().any(|b| b.policy.operates())
    }

    /// May read (every bound policy reads).
    pub fn reads(&self) -> bool {
        !self.policies.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_checks_its_password_only() {
        let h = PasswordHash::of("s3cret pass").unwrap();
        assert!(h.as_saved().starts_with("$6$"));
        assert!(h.verify("s3cret pass"));
        assert!(!h.verify("s3cret pas"));
        assert!(!h.verify(""));
        // A fresh salt each time.
        assert_ne!(PasswordHash::of("s3cret pass").unwrap(), h);
    }

    #[test]
    fn a_netscaler_hash_is_kept_but_checks_nothing() {
        let h = PasswordHash::stored("2a8f1e0b9c7d").unwrap();
        assert!(!h.checkable());
        assert!(!h.verify("2a8f1e0b9c7d"));
        assert!(PasswordHash::stored("").is_err());
        assert!(PasswordHash::of("").is_err());
    }

    #[test]
    fn openssl_passwd_6_hashes_are_accepted() {
        // `openssl passwd -6 -salt fulcrumsalt nsroot`
        let h = PasswordHash::stored(
            "$6$fulcrumsalt$2SvbBJ4GaDtnFmGZieuk9rwcNwgl.wCNVbkXX5Us5s.0gzNmHDEMkS5Qz8sRUH9AcC6FmwNtMclIJHO.tbCp/.",
        )
        .unwrap();
        assert!(h.verify("nsroot"));
        assert!(!h.verify("nsroot2"));
        assert!(h.checkable());
    }
}
