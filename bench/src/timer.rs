//! A hand timer: warm-up, then repeated batches sized to a target duration; the median and
//! p90 of the per-operation time over batches.

use std::time::{Duration, Instant};

use serde::Serialize;

/// Per-operation time over repeated batches.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct OpTime {
    pub median_ns: f64,
    pub p90_ns: f64,
    pub batches: usize,
    pub ops_per_batch: u64,
}

/// How long and how often to measure.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub batch: Duration,
    pub batches: usize,
}

/// The `q` quantile (0..=1) of `v` by nearest rank; `v` need not be sorted.
pub fn quantile(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let i = ((v.len() as f64 - 1.0) * q).round() as usize;
    v[i.min(v.len() - 1)]
}

/// Times batches: `batch(n)` runs `n` operations (its own untimed setup first) and returns
/// how long the operations took. `max_ops` caps a batch (callers whose operations consume
/// prepared inputs).
pub fn measure<F>(plan: Plan, max_ops: u64, mut batch: F) -> OpTime
where
    F: FnMut(u64) -> Duration,
{
    // Calibrate: grow the batch until it takes a tenth of the target, then scale.
    let mut n = 1u64;
    loop {
        let e = batch(n);
        if e >= plan.batch / 10 || n >= max_ops {
            let per = e.as_secs_f64() / n as f64;
            n = ((plan.batch.as_secs_f64() / per.max(1e-9)) as u64).clamp(1, max_ops);
            break;
        }
        n = (n * 4).min(max_ops);
    }
    // Warm-up batch, untimed.
    batch(n);
    let mut per_op: Vec<f64> = (0..plan.batches)
        .map(|_| batch(n).as_nanos() as f64 / n as f64)
        .collect();
    OpTime {
        median_ns: quantile(&mut per_op.clone(), 0.5),
        p90_ns: quantile(&mut per_op, 0.9),
        batches: plan.batches,
        ops_per_batch: n,
    }
}

/// Times `n` calls of `op` in a loop.
pub fn time_loop(n: u64, mut op: impl FnMut(u64)) -> Duration {
    let t = Instant::now();
    for i in 0..n {
        op(i);
    }
    t.elapsed()
}
