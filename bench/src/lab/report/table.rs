//! What every table of the report shares: formatting a cell (times, sizes, ratios), reading a
//! measurement's figures, and picking the measurements of one experiment.

use std::fmt::Write as _;

use serde_json::Value;

use super::Report;
use crate::measure::Measurement;
use crate::systems::{System, Vendor, ZenohLink};

pub(super) fn f(v: &Value, path: &[&str]) -> Option<f64> {
    let mut v = v;
    for p in path {
        v = v.get(p)?;
    }
    v.as_f64()
}

pub(crate) fn us(v: Option<f64>) -> String {
    match v {
        None => "—".into(),
        Some(v) if v >= 10_000.0 => format!("{:.1} ms", v / 1e3),
        Some(v) if v >= 1000.0 => format!("{:.2} ms", v / 1e3),
        Some(v) => format!("{v:.0} µs"),
    }
}

pub(super) fn size(b: usize) -> String {
    match b {
        b if b >= 1_000_000 && b % 1_000_000 == 0 => format!("{} MB", b / 1_000_000),
        b if b >= 1 << 20 => format!("{} MiB", b >> 20),
        b if b >= 1024 && b % 1024 == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

pub(super) fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "—".into(),
    }
}

impl Measurement {
    pub(super) fn ok(&self) -> bool {
        self.error.is_none()
    }
    pub(crate) fn rtt(&self, field: &str) -> Option<f64> {
        self.ok()
            .then(|| f(&self.source, &["rtt", field]))
            .flatten()
    }
    pub(super) fn sink_f(&self, path: &[&str]) -> Option<f64> {
        self.sink.as_ref().and_then(|s| f(s, path))
    }
    pub(super) fn lost(&self) -> Option<f64> {
        if self.load.echo {
            f(&self.source, &["echo", "lost"])
        } else {
            self.sink_f(&["counts", "lost"])
        }
    }
    pub(super) fn dups(&self) -> Option<f64> {
        if self.load.echo {
            f(&self.source, &["echo", "duplicates"])
        } else {
            self.sink_f(&["counts", "duplicates"])
        }
    }
}

/// The systems present in `ms`, in first-seen order.
pub(super) fn systems(ms: &[&Measurement]) -> Vec<System> {
    let mut v = Vec::new();
    for m in ms {
        if !v.contains(&m.system) {
            v.push(m.system);
        }
    }
    v
}

/// The measurements of experiment `e` with CycloneDDS nodes (every table's usual rows).
pub(super) fn of<'a>(r: &'a Report, e: &str) -> Vec<&'a Measurement> {
    of_nodes(r, e, Vendor::CycloneDds)
}

/// The measurements of experiment `e` whose load generators ran on `nodes`.
pub(super) fn of_nodes<'a>(r: &'a Report, e: &str, nodes: Vendor) -> Vec<&'a Measurement> {
    r.measurements
        .iter()
        .filter(|m| m.experiment == e && m.nodes == nodes)
        .collect()
}

/// Where the rows with Fast DDS nodes are, or why there are none.
pub(super) fn fastdds_note(r: &Report, s: &mut String, what: &str) {
    if let Some(why) = &r.fastdds_left_out {
        let _ = writeln!(
            s,
            "{what} with Fast DDS nodes: not run ({}).\n",
            why.lines().next().unwrap_or("")
        );
    }
}

pub(super) fn find<'a>(
    ms: &[&'a Measurement],
    sys: System,
    pred: impl Fn(&Measurement) -> bool,
) -> Option<&'a Measurement> {
    ms.iter().copied().find(|m| m.system == sys && pred(m))
}

pub(super) const ZENOH_TCP: System = System::Zenoh {
    link: ZenohLink::Tcp,
};
