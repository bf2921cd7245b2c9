//! `lb metricTable`: the SNMP OIDs LOAD monitors read.

use super::super::Config;
use super::super::model::*;
use super::{exists, in_use};
use crate::command::MetricTableCmd;
use crate::error::{CliError, ErrorKind, Result};
use crate::value::Name;

impl Config {
    pub(super) fn apply_metric_table(&mut self, cmd: &MetricTableCmd) -> Result<()> {
        match cmd {
            MetricTableCmd::Add { name } => {
                if self.metric_tables.contains_key(name.as_str()) {
                    return Err(exists("metricTable", name.as_str()));
                }
                if name.as_str().len() > 31 {
                    return Err(CliError::arg_value(
                        ErrorKind::InvalidArgumentValue,
                        "metricTable",
                        name.as_str(),
                    )
                    .with_detail("Metric table names are at most 31 characters"));
                }
                self.metric_tables.insert(
                    name.0.clone(),
                    MetricTable {
                        name: name.clone(),
                        metrics: Vec::new(),
                    },
                );
            }
            MetricTableCmd::Rm { name } => {
                self.metric_table("metricTable", name.as_str())?;
                if let Some(user) = self.metric_table_user(name, None) {
                    return Err(in_use("metricTable", name, "Metric table", "used by", user));
                }
                self.metric_tables.shift_remove(name.as_str());
            }
            MetricTableCmd::Bind { table, metric, oid } => {
                let t = self.metric_table("metricTable", table.as_str())?;
                if t.metrics.iter().any(|(n, _)| n == metric) {
                    return Err(exists("metric", metric.as_str()));
                }
                self.metric_tables[table.as_str()]
                    .metrics
                    .push((metric.clone(), oid.clone()));
            }
            MetricTableCmd::Set { table, metric, oid } => {
                let i = self.metric_index(table, metric)?;
                self.metric_tables[table.as_str()].metrics[i].1 = oid.clone();
            }
            MetricTableCmd::Unbind { table, metric } => {
                let i = self.metric_index(table, metric)?;
                if let Some(user) = self.metric_table_user(table, Some(metric)) {
                    return Err(in_use("metric", metric, "Metric", "bound to", user));
                }
                self.metric_tables[table.as_str()].metrics.remove(i);
            }
        }
        Ok(())
    }

    /// Where `metric` stands in `table`.
    fn metric_index(&self, table: &Name, metric: &Name) -> Result<usize> {
        let t = self.metric_table("metricTable", table.as_str())?;
        t.metrics
            .iter()
            .position(|(n, _)| n == metric)
            .ok_or_else(|| {
                CliError::arg_value(ErrorKind::NoSuchResource, "metric", metric.as_str())
            })
    }
}
