//! CUSTOMLOAD and LRTM inputs computed from monitor samples.
//!
//! Load (SPEC §3, our formula — NetScaler does not publish its own): for the metrics of a LOAD
//! monitor with threshold t_i > 0, value v_i and weight w_i,
//! `load = Σ w_i × 100 × v_i / t_i ÷ Σ w_i`, the weighted mean of each metric's percentage of
//! its threshold. A service with any v_i ≥ t_i leaves the decision unless its binding is
//! `-passive`.

/// One metric's latest value with its binding's threshold and weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetricSample {
    pub value: u64,
    pub threshold: u64,
    pub weight: u64,
}

/// A computed load, in thousandths of a percent (so integer comparisons stay exact enough).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Load {
    pub milli_percent: u64,
    /// Some metric reached its threshold.
    pub over_threshold: bool,
}

/// The load of a service from its metric samples; `None` when no metric has a threshold.
pub fn load(samples: &[MetricSample]) -> Option<Load> {
    let counted: Vec<&MetricSample> = samples.iter().filter(|s| s.threshold > 0).collect();
    let weights: u128 = counted.iter().map(|s| u128::from(s.weight.max(1))).sum();
    if weights == 0 {
        return None;
    }
    let weighted: u128 = counted
        .iter()
        .map(|s| {
            u128::from(s.weight.max(1)) * 100_000 * u128::from(s.value) / u128::from(s.threshold)
        })
        .sum();
    Some(Load {
        milli_percent: u64::try_from(weighted / weights).unwrap_or(u64::MAX),
        over_threshold: counted.iter().any(|s| s.value >= s.threshold),
    })
}

/// Whether the service takes part in CUSTOMLOAD decisions.
pub fn eligible(load: &Load, passive: bool) -> bool {
    passive || !load.over_threshold
}

/// LRTM response time of a service: the mean over its LRTM-enabled monitors that have a
/// sample (microseconds); `None` until one has.
pub fn mean_response(samples: &[Option<u64>]) -> Option<u64> {
    let known: Vec<u64> = samples.iter().flatten().copied().collect();
    (!known.is_empty()).then(|| known.iter().sum::<u64>() / known.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_memory_example() {
        // 20/70/80 MB against a threshold of 100: 20 %, 70 %, 80 %.
        for (v, pct) in [(20, 20_000), (70, 70_000), (80, 80_000)] {
            let l = load(&[MetricSample {
                value: v,
                threshold: 100,
                weight: 1,
            }])
            .unwrap();
            assert_eq!(l.milli_percent, pct);
            assert!(!l.over_threshold);
        }
    }

    #[test]
    fn weighted_mean_thresholds_and_exclusion() {
        let l = load(&[
            MetricSample {
                value: 50,
                threshold: 100,
                weight: 3,
            }, // 50 %
            MetricSample {
                value: 10,
                threshold: 20,
                weight: 1,
            }, // 50 %
            MetricSample {
                value: 999,
                threshold: 0,
                weight: 5,
            }, // ignored
        ])
        .unwrap();
        assert_eq!(l.milli_percent, 50_000);
        let over = load(&[MetricSample {
            value: 100,
            threshold: 100,
            weight: 1,
        }])
        .unwrap();
        assert!(over.over_threshold);
        assert!(!eligible(&over, false) && eligible(&over, true));
        assert_eq!(
            load(&[MetricSample {
                value: 1,
                threshold: 0,
                weight: 1
            }]),
            None
        );
    }

    #[test]
    fn lrtm_mean_over_monitors_with_samples() {
        assert_eq!(mean_response(&[Some(5000), None, Some(1000)]), Some(3000));
        assert_eq!(mean_response(&[None, None]), None);
    }
}
