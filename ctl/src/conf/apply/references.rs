//! Who refers to an object: the one check every `rm` (and `unbind lb metricTable`) makes
//! before it removes something others still use.

use std::fmt;

use super::super::Config;
use crate::value::Name;

/// An object that refers to another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum User<'a> {
    Service(&'a Name),
    ServiceGroup(&'a Name),
    Monitor(&'a Name),
    Vserver(&'a Name),
}

impl fmt::Display for User<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Service(n) => write!(f, "service {n}"),
            Self::ServiceGroup(n) => write!(f, "service group {n}"),
            Self::Monitor(n) => write!(f, "monitor {n}"),
            Self::Vserver(n) => write!(f, "vserver {n}"),
        }
    }
}

impl Config {
    /// A service (or a service group, through a member) on server `name`.
    pub(super) fn server_user(&self, name: &Name) -> Option<User<'_>> {
        let s = self.services.values().find(|s| s.server == *name)?;
        Some(match &s.group {
            Some(g) => User::ServiceGroup(g),
            None => User::Service(&s.name),
        })
    }

    /// A service group or service monitor `name` is bound to. A group holds its monitors
    /// even while it has no members, so groups are asked first.
    pub(super) fn monitor_user(&self, name: &Name) -> Option<User<'_>> {
        let bound = |bindings: &[super::super::model::MonitorBinding]| {
            bindings.iter().any(|b| b.monitor == *name)
        };
        let group = self.service_groups.values().find(|g| bound(&g.monitors));
        let service = || self.services.values().find(|s| bound(&s.monitors));
        match group {
            Some(g) => Some(User::ServiceGroup(&g.name)),
            None => service().map(|s| User::Service(&s.name)),
        }
    }

    /// A monitor reading metric table `table` (and, given `metric`, bound to that metric).
    pub(super) fn metric_table_user(
        &self,
        table: &Name,
        metric: Option<&Name>,
    ) -> Option<User<'_>> {
        self.monitors
            .values()
            .find(|m| {
                m.settings.metric_table.as_ref() == Some(table)
                    && metric.is_none_or(|x| m.metrics.iter().any(|b| b.metric == *x))
            })
            .map(|m| User::Monitor(&m.name))
    }
}
