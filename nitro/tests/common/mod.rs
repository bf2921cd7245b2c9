//! An appliance that is a configuration in memory, changed all or nothing as the daemon's
//! control plane does, and requests to it with per-request credentials.

use std::sync::Mutex;

use ctl::Config;
use ctl::command::Command;
use ctl::error::CliError;
use ctl::render::{NothingRunning, Runtime};
use nitro::request::Request;
use nitro::{Appliance, Nitro};
use serde_json::Value;

pub struct Memory(Mutex<Config>);

impl Appliance for Memory {
    fn read(&self, f: &mut dyn FnMut(&Config, &dyn Runtime)) {
        let config = self.0.lock().unwrap();
        f(&config, &NothingRunning);
    }
    fn apply(&self, groups: &[Vec<Command>]) -> Result<(), (usize, CliError)> {
        let mut config = self.0.lock().unwrap();
        let mut next = config.clone();
        for (i, group) in groups.iter().enumerate() {
            next.apply_all(group).map_err(|e| (i, e))?;
        }
        *config = next;
        Ok(())
    }
    fn save(&self) -> Result<(), CliError> {
        Ok(())
    }
    fn running_config(&self) -> String {
        ctl::conf::render(&self.0.lock().unwrap(), "")
    }
    fn config_changed(&self) -> bool {
        false
    }
}

/// The API over `config` (ns.conf text that must load).
pub fn api(config: &str) -> Nitro<Memory> {
    let (config, errors) = ctl::conf::replay_text(config);
    assert!(errors.is_empty(), "{errors:?}");
    Nitro::new(Memory(Mutex::new(config)))
}

/// One request as `user`/`password` (per-request credentials): status and body.
pub fn call(
    api: &Nitro<Memory>,
    (user, password): (&str, &str),
    method: &str,
    path_and_query: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let (path, query) = path_and_query
        .split_once('?')
        .unwrap_or((path_and_query, ""));
    let reply = api.handle(&Request {
        method: method.into(),
        path: path.into(),
        query: query.into(),
        headers: vec![
            ("x-nitro-user".into(), user.into()),
            ("x-nitro-pass".into(), password.into()),
        ],
        body: body.map(|b| b.to_string().into_bytes()).unwrap_or_default(),
        peer: None,
    });
    (reply.status, reply.body)
}
