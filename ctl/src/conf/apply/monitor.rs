//! `lb monitor`: monitors, their metric bindings, and the state of their bindings.

use super::super::Config;
use super::super::model::*;
use super::{exists, in_use, rename_in, require_ipv4, set_monitor_states};
use crate::command::{MonitorCmd, ServiceCmd, ServiceGroupCmd};
use crate::error::{CliError, ErrorKind, Result};
use crate::settings::Settings;
use crate::value::Name;

impl Config {
    pub(super) fn apply_monitor(&mut self, cmd: &MonitorCmd) -> Result<()> {
        match cmd {
            MonitorCmd::Add {
                name,
                monitor_type,
                settings,
            } => {
                if self.monitors.contains_key(name.as_str()) {
                    return Err(exists("monitorName", name.as_str()));
                }
                let monitor = Monitor {
                    name: name.clone(),
                    monitor_type: *monitor_type,
                    settings: MonitorSettings::default().with(settings),
                    metrics: Vec::new(),
                    builtin: false,
                };
                self.check_monitor(&monitor, settings)?;
                self.monitors.insert(name.0.clone(), monitor);
            }
            MonitorCmd::Set {
                name,
                monitor_type,
                settings,
            } => {
                let mut monitor = self.typed_monitor(name, Some(*monitor_type))?.clone();
                monitor.settings = monitor.settings.clone().with(settings);
                self.check_monitor(&monitor, settings)?;
                self.replace_monitor(monitor);
            }
            MonitorCmd::Unset {
                name,
                monitor_type,
                keys,
            } => {
                let mut monitor = self.typed_monitor(name, Some(*monitor_type))?.clone();
                for k in keys {
                    monitor.settings.reset(*k);
                }
                self.check_monitor(&monitor, &[])?;
                self.replace_monitor(monitor);
            }
            MonitorCmd::Rm { name, monitor_type } => {
                let monitor = self.typed_monitor(name, *monitor_type)?;
                if monitor.builtin {
                    return Err(CliError::arg_value(
                        ErrorKind::BuiltinMonitor,
                        "monitorName",
                        name.as_str(),
                    ));
                }
                if let Some(user) = self.monitor_user(name) {
                    return Err(in_use("monitorName", name, "Monitor", "bound to", user));
                }
                self.monitors.shift_remove(name.as_str());
            }
            MonitorCmd::Rename { name, new_name } => {
                if self.monitor("name", name.as_str())?.builtin {
                    return Err(CliError::arg_value(
                        ErrorKind::BuiltinMonitor,
                        "name",
                        name.as_str(),
                    ));
                }
                rename_in(&mut self.monitors, name, new_name, false)?;
                let groups = self
                    .service_groups
                    .values_mut()
                    .flat_map(|g| g.monitors.iter_mut());
                for b in self
                    .services
                    .values_mut()
                    .flat_map(|s| s.monitors.iter_mut())
                    .chain(groups)
                    .filter(|b| b.monitor == *name)
                {
                    b.monitor = new_name.clone();
                }
            }
            MonitorCmd::BindTo {
                monitor,
                target,
                settings,
            } => {
                let (monitor, settings) = (monitor.clone(), settings.clone());
                return if self.service_groups.contains_key(target.as_str()) {
                    self.apply_group(&ServiceGroupCmd::BindMonitor {
                        group: target.clone(),
                        monitor,
                        settings,
                    })
                } else {
                    self.apply_service(&ServiceCmd::BindMonitor {
                        service: target.clone(),
                        monitor,
                        settings,
                    })
                };
            }
            MonitorCmd::UnbindFrom { monitor, target } => {
                let monitor = monitor.clone();
                return if self.service_groups.contains_key(target.as_str()) {
                    self.apply_group(&ServiceGroupCmd::UnbindMonitor {
                        group: target.clone(),
                        monitor,
                    })
                } else {
                    self.apply_service(&ServiceCmd::UnbindMonitor {
                        service: target.clone(),
                        monitor,
                    })
                };
            }
            MonitorCmd::BindMetric {
                monitor,
                metric,
                threshold,
                weight,
            } => {
                let m = self.monitor("monitorName", monitor.as_str())?;
                let key = m.name.clone();
                let table = self.load_monitor_table(m)?;
                if !table.metrics.iter().any(|(n, _)| n == metric) {
                    return Err(CliError::arg_value(
                        ErrorKind::NoSuchResource,
                        "metric",
                        metric.as_str(),
                    ));
                }
                if m.metrics.iter().any(|b| b.metric == *metric) {
                    return Err(CliError::arg_value(
                        ErrorKind::ResourceAlreadyBound,
                        "metric",
                        metric.as_str(),
                    ));
                }
                let binding = MetricBinding {
                    metric: metric.clone(),
                    threshold: *threshold,
                    weight: *weight,
                };
                if let Some(m) = self.monitors.get_mut(key.as_str()) {
                    m.metrics.push(binding);
                }
            }
            MonitorCmd::UnbindMetric { monitor, metric } => {
                let m = self.monitor("monitorName", monitor.as_str())?;
                let key = m.name.clone();
                let i = m
                    .metrics
                    .iter()
                    .position(|b| b.metric == *metric)
                    .ok_or_else(|| {
                        CliError::arg_value(ErrorKind::ResourceNotBound, "metric", metric.as_str())
                    })?;
                if let Some(m) = self.monitors.get_mut(key.as_str()) {
                    m.metrics.remove(i);
                }
            }
            MonitorCmd::Enable { service, monitor } | MonitorCmd::Disable { service, monitor } => {
                let enable = matches!(cmd, MonitorCmd::Enable { .. });
                if self.service_groups.contains_key(service.as_str()) {
                    return self.set_group_monitor_states(service, monitor.as_ref(), enable);
                }
                self.service("serviceName", service.as_str())?;
                let bindings = &mut self.services[service.as_str()].monitors;
                set_monitor_states(bindings, monitor.as_ref(), enable)?;
            }
        }
        Ok(())
    }

    /// Puts a changed monitor back under its own spelling (the command may have named it in
    /// another case: names are found ignoring case).
    fn replace_monitor(&mut self, monitor: Monitor) {
        if let Some(slot) = self.monitors.get_mut(monitor.name.as_str()) {
            *slot = monitor;
        }
    }

    fn typed_monitor(&self, name: &Name, monitor_type: Option<MonitorType>) -> Result<&Monitor> {
        let m = self.monitor("monitorName", name.as_str())?;
        match monitor_type {
            Some(t) if t != m.monitor_type => {
                Err(
                    CliError::arg_value(ErrorKind::InvalidArgumentValue, "type", t.keyword())
                        .with_detail(format!("Monitor {} is of type {}", m.name, m.monitor_type)),
                )
            }
            _ => Ok(m),
        }
    }

    fn load_monitor_table(&self, m: &Monitor) -> Result<&MetricTable> {
        if m.monitor_type != MonitorType::Load {
            return Err(CliError::arg_value(
                ErrorKind::ArgumentNotApplicable,
                "metric",
                m.name.as_str(),
            )
            .with_detail("Metrics can only be bound to LOAD monitors"));
        }
        let table = m
            .settings
            .metric_table
            .as_ref()
            .ok_or_else(|| CliError::arg(ErrorKind::RequiredArgumentMissing, "metricTable"))?;
        self.metric_table("metricTable", table.as_str())
    }

    /// Whole-monitor checks: options valid for the type, timers, the strings each type needs.
    fn check_monitor(&self, m: &Monitor, given: &[MonitorSetting]) -> Result<()> {
        for s in given {
            let key = MonitorSettings::setting_key(s);
            if !m.monitor_type.accepts(key) {
                return Err(CliError::arg_value(
                    ErrorKind::ArgumentNotApplicable,
                    format!("-{}", MonitorSettings::key_name(key)),
                    m.monitor_type.keyword(),
                ));
            }
        }
        m.settings.check_timers()?;
        let st = &m.settings;
        if let Some(ip) = st.dest_ip {
            require_ipv4("destIP", ip)?;
        }
        let misconfigured = |arg: &str, what: &str| {
            Err(CliError::arg(ErrorKind::Misconfigured, arg)
                .with_detail(format!("{} monitor needs {what}", m.monitor_type)))
        };
        match m.monitor_type {
            MonitorType::TcpEcv if st.send.is_none() || st.recv.is_none() => {
                return misconfigured(
                    if st.send.is_none() { "send" } else { "recv" },
                    "both -send and -recv",
                );
            }
            MonitorType::UdpEcv if st.recv.is_none() => return misconfigured("recv", "-recv"),
            MonitorType::Dns if st.query.is_none() => return misconfigured("query", "-query"),
            MonitorType::Ftp if st.user_name.is_none() || st.password.is_none() => {
                return misconfigured(
                    if st.user_name.is_none() {
                        "userName"
                    } else {
                        "password"
                    },
                    "-userName and -password",
                );
            }
            MonitorType::User if st.script_name.is_none() => {
                return misconfigured("scriptName", "-scriptName");
            }
            MonitorType::Load => {
                let table = match &st.metric_table {
                    None => return misconfigured("metricTable", "-metricTable"),
                    Some(t) => self.metric_table("metricTable", t.as_str())?,
                };
                if let Some(b) = m
                    .metrics
                    .iter()
                    .find(|b| !table.metrics.iter().any(|(n, _)| *n == b.metric))
                {
                    return Err(CliError::arg_value(
                        ErrorKind::NoSuchResource,
                        "metric",
                        b.metric.as_str(),
                    )
                    .with_detail(format!(
                        "Metric table {} has no metric {}",
                        table.name, b.metric
                    )));
                }
            }
            _ => {}
        }
        Ok(())
    }
}
