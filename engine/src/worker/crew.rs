//! Workers built together as `fulcrumd` builds them, without ports: one counter block, one
//! health table and one neighbour table shared by all. Tests, benchmarks and fuzz targets
//! drive workers this way.

use std::sync::Arc;

use crate::counters::Counters;
use crate::health::ServiceHealth;
use crate::neigh::Neighbours;
use crate::tables::Tables;
use crate::wire::Mac;

use super::{NEIGHBOURS, Worker, WorkerSetup};

#[derive(Debug)]
pub struct Crew {
    pub workers: Vec<Worker>,
    pub counters: Arc<Counters>,
    pub health: Arc<ServiceHealth>,
    pub neighbours: Arc<Neighbours>,
}

impl Crew {
    /// `n` workers with ports of these MACs, `flow_capacity` flows each, room for
    /// `services` services, all on `tables`.
    pub fn new(
        n: usize,
        macs: &[Mac],
        flow_capacity: usize,
        services: usize,
        tables: &Arc<Tables>,
    ) -> Self {
        let (counters, writers) = Counters::new(n, services);
        let health = Arc::new(ServiceHealth::new(services));
        let neighbours = Arc::new(Neighbours::new(NEIGHBOURS));
        let workers = writers
            .into_iter()
            .enumerate()
            .map(|(id, writer)| {
                let mut w = Worker::new(WorkerSetup {
                    id,
                    workers: n,
                    macs: macs.to_vec(),
                    flow_capacity,
                    writer,
                    counters: Arc::clone(&counters),
                    health: Arc::clone(&health),
                    tables: Arc::clone(tables),
                });
                w.share_neighbours(Arc::clone(&neighbours));
                w
            })
            .collect();
        Self {
            workers,
            counters,
            health,
            neighbours,
        }
    }

    /// One worker alone, and what it shares.
    pub fn one(macs: &[Mac], flow_capacity: usize, services: usize, tables: &Arc<Tables>) -> Self {
        Self::new(1, macs, flow_capacity, services, tables)
    }
}
