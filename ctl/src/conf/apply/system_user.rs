//! `system user`: the management API's users, their passwords and command policies.

use super::super::Config;
use super::super::users::{PasswordHash, PolicyBinding, SystemUser, SystemUserSettings};
use super::{exists, no_such};
use crate::command::{Password, SystemUserCmd};
use crate::error::{CliError, ErrorKind, Result};
use crate::settings::Settings;

fn hash(password: &Password) -> Result<PasswordHash> {
    match password {
        Password::Plain(p) => PasswordHash::of(p),
        Password::Encrypted(h) => Ok(h.clone()),
    }
}

impl Config {
    pub(super) fn apply_system_user(&mut self, cmd: &SystemUserCmd) -> Result<()> {
        match cmd {
            SystemUserCmd::Add {
                name,
                password,
                settings,
            } => {
                if self.system_users.contains_key(name.as_str()) {
                    return Err(exists("userName", name.as_str()));
                }
                let user = SystemUser {
                    name: name.clone(),
                    password: hash(password)?,
                    settings: SystemUserSettings::default().with(settings),
                    policies: Vec::new(),
                };
                self.system_users.insert(name.0.clone(), user);
            }
            SystemUserCmd::Set {
                name,
                password,
                settings,
            } => {
                let new_hash = password.as_ref().map(hash).transpose()?;
                let user = self
                    .system_users
                    .get_mut(name.as_str())
                    .ok_or_else(no_such("userName", name))?;
                if new_hash.is_none() && settings.is_empty() {
                    return Err(CliError::new(ErrorKind::RequiredArgumentMissing)
                        .with_detail("No arguments to set"));
                }
                if let Some(h) = new_hash {
                    user.password = h;
                }
                for s in settings {
                    user.settings.apply(s);
                }
            }
            SystemUserCmd::Unset { name, keys } => {
                let user = self
                    .system_users
                    .get_mut(name.as_str())
                    .ok_or_else(no_such("userName", name))?;
                for k in keys {
                    user.settings.reset(*k);
                }
            }
            SystemUserCmd::Rm { name } => {
                self.system_users
                    .shift_remove(name.as_str())
                    .ok_or_else(no_such("userName", name))?;
            }
            SystemUserCmd::Bind {
                name,
                policy,
                priority,
            } => {
                let user = self
                    .system_users
                    .get_mut(name.as_str())
                    .ok_or_else(no_such("userName", name))?;
                if user.policies.iter().any(|b| b.policy == *policy) {
                    return Err(CliError::arg_value(
                        ErrorKind::ResourceAlreadyExists,
                        "policyName",
                        policy.keyword(),
                    ));
                }
                user.policies.push(PolicyBinding {
                    policy: *policy,
                    priority: *priority,
                });
                user.policies.sort_by_key(|b| b.priority);
            }
            SystemUserCmd::Unbind { name, policy } => {
                let user = self
                    .system_users
                    .get_mut(name.as_str())
                    .ok_or_else(no_such("userName", name))?;
                let before = user.policies.len();
                user.policies.retain(|b| b.policy != *policy);
                if user.policies.len() == before {
                    return Err(CliError::arg_value(
                        ErrorKind::ResourceNotBound,
                        "policyName",
                        policy.keyword(),
                    ));
                }
            }
        }
        Ok(())
    }
}
