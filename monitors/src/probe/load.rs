//! LOAD: an SNMP GET (v1 or v2c) of the metric table's OIDs; the answer gives the service's
//! load (see [`crate::load`]). A LOAD monitor feeds CUSTOMLOAD and never the service's state.

use crate::load::{Load, MetricSample};
use crate::snmp::{self, SnmpError};

use super::{Failure, Outcome};

#[derive(Debug)]
pub struct LoadProbe {
    request_id: i32,
    v1: bool,
    community: String,
    /// OID, threshold, weight of each bound metric.
    metrics: Vec<(Vec<u32>, u64, u64)>,
    started: u64,
    /// The load the last answer gave (`None` when it gave none).
    pub load: Option<Load>,
}

impl LoadProbe {
    pub fn new(
        request_id: i32,
        v1: bool,
        community: &str,
        metrics: &[(Vec<u32>, u64, u64)],
        now: u64,
    ) -> Self {
        Self {
            request_id,
            v1,
            community: community.to_owned(),
            metrics: metrics.to_vec(),
            started: now,
            load: None,
        }
    }

    /// The GET request; `None` when it cannot be encoded.
    pub fn request(&self) -> Option<Vec<u8>> {
        let oids: Vec<Vec<u32>> = self.metrics.iter().map(|(o, _, _)| o.clone()).collect();
        snmp::get_request(self.v1, &self.community, self.request_id, &oids)
    }

    /// An answer to another request is ignored (`None`); this one's decides.
    pub fn on_datagram(&mut self, data: &[u8], now: u64) -> Option<Outcome> {
        let values = match snmp::parse_response(self.v1, self.request_id, data) {
            Err(SnmpError::OtherRequest) => return None,
            other => other.ok(),
        };
        let samples: Option<Vec<MetricSample>> = values.map(|v| {
            v.iter()
                .zip(&self.metrics)
                .map(|(value, (_, threshold, weight))| MetricSample {
                    value: *value,
                    threshold: *threshold,
                    weight: *weight,
                })
                .collect()
        });
        self.load = samples.as_deref().and_then(crate::load::load);
        Some(match self.load {
            Some(_) => Outcome::passed(self.started, now),
            None => Outcome::Failed(Failure::NoMatch),
        })
    }
}
