//! The control plane as NITRO sees it: the same configuration, the same validation and
//! publication as the Unix socket's commands.

use std::sync::Arc;

use ctl::command::Command;
use ctl::conf::{Config, OutputFormat};
use ctl::error::CliError;
use ctl::grammar::Object;
use ctl::render::Runtime;

use super::Control;

/// A running daemon's control plane, for [`nitro::Nitro`].
#[derive(Debug)]
pub struct NitroApi(pub Arc<Control>);

impl nitro::Appliance for NitroApi {
    fn read(&self, f: &mut dyn FnMut(&Config, &dyn Runtime)) {
        self.0.with_view(f);
    }

    fn apply(&self, groups: &[Vec<Command>]) -> Result<(), (usize, CliError)> {
        self.0.apply_groups(groups)
    }

    fn save(&self) -> Result<(), CliError> {
        self.0.run_query(&Command::SaveNsConfig).map(|_| ())
    }

    fn config_changed(&self) -> bool {
        self.0.unsaved_changes()
    }

    fn running_config(&self) -> String {
        self.0
            .run_query(&Command::Show {
                object: Object::NsRunningConfig,
                name: None,
                format: OutputFormat::Text,
            })
            .unwrap_or_else(|e| e.to_string())
    }
}
