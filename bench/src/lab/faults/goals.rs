//! The goals, judged from a run's outcomes (pure: the same figures the report shows).
//!
//! Where a fault hits the subscriber's own router there is no way around it: such events are
//! judged by how soon delivery is back after the router is, as the chain's are.

use serde::Serialize;

use super::campaign::Outcome;
use super::flood::FloodOutcome;
use super::stream::EventDelivery;

#[derive(Clone, Debug, Serialize)]
pub struct Goal {
    pub name: String,
    pub target: String,
    pub figure: String,
    pub met: bool,
}

/// Every (subscriber's router, fault target, event) of a campaign.
fn events<'a>(o: &'a Outcome) -> impl Iterator<Item = (bool, &'a EventDelivery)> + 'a {
    o.subscribers.iter().flat_map(move |s| {
        o.faults
            .iter()
            .zip(&s.delivery.events)
            .map(move |(f, e)| (f.target == s.router, e))
    })
}

fn campaign<'a>(outcomes: &'a [Outcome], name: &str) -> Option<&'a Outcome> {
    outcomes
        .iter()
        .find(|o| o.name == name && o.error.is_none())
}

fn max(it: impl Iterator<Item = f64>) -> f64 {
    it.fold(0.0, f64::max)
}

pub fn judge(outcomes: &[Outcome]) -> Vec<Goal> {
    let mut goals = Vec::new();
    let dups = |o: &Outcome| {
        o.subscribers
            .iter()
            .map(|s| s.delivery.duplicated)
            .sum::<u64>()
    };
    if let Some(o) = campaign(outcomes, "ring-kill") {
        let around: Vec<_> = events(o).filter(|(own, _)| !own).map(|(_, e)| e).collect();
        let gap = max(around.iter().map(|e| e.gap_ms));
        let lost: u64 = around.iter().map(|e| e.lost).sum();
        goals.push(Goal {
            name: "router killed, a way around it".into(),
            target: "longest gap < 1 s, 0 lost, 0 duplicated".into(),
            figure: format!(
                "longest gap {gap:.0} ms over {} events, {lost} lost, {} duplicated",
                around.len(),
                dups(o)
            ),
            met: gap < 1000.0 && lost == 0 && dups(o) == 0,
        });
    }
    let mut own = Vec::new();
    if let Some(o) = campaign(outcomes, "chain-kill") {
        own.extend(events(o).map(|(_, e)| e.clone()));
    }
    if let Some(o) = campaign(outcomes, "ring-kill") {
        own.extend(events(o).filter(|(own, _)| *own).map(|(_, e)| e.clone()));
    }
    if !own.is_empty() {
        let back = max(own.iter().map(|e| e.recovery_after_back_ms));
        let lost: u64 = own.iter().map(|e| e.lost).sum();
        goals.push(Goal {
            name: "router killed, no way around it".into(),
            target: "delivery back < 1 s after the router is".into(),
            figure: format!(
                "at most {back:.0} ms after it was back over {} events, {lost} lost",
                own.len()
            ),
            met: back < 1000.0,
        });
    }
    if let Some(o) = campaign(outcomes, "ring-restart") {
        let all: Vec<_> = events(o).collect();
        let gap = max(all.iter().filter(|(own, _)| !own).map(|(_, e)| e.gap_ms));
        let back = max(all
            .iter()
            .filter(|(own, _)| *own)
            .map(|(_, e)| e.recovery_after_back_ms));
        let lost: u64 = o.subscribers.iter().map(|s| s.delivery.lost).sum();
        goals.push(Goal {
            name: "graceful restart".into(),
            target: "gap < 0.5 s (own router: back < 0.5 s after it), 0 lost, every time".into(),
            figure: format!("longest gap {gap:.0} ms, own router back after {back:.0} ms, {lost} lost, {} duplicated", dups(o)),
            met: gap < 500.0 && back < 500.0 && lost == 0 && dups(o) == 0,
        });
    }
    if let Some(o) = campaign(outcomes, "partition") {
        let short: u64 = o
            .subscribers
            .iter()
            .filter_map(|s| s.delivery.events.first())
            .map(|e| e.lost)
            .sum();
        goals.push(Goal {
            name: "partition shorter than the resend window".into(),
            target: "0 lost after the heal".into(),
            figure: format!("{short} lost"),
            met: short == 0,
        });
        let lost: u64 = o.subscribers.iter().map(|s| s.delivery.lost).sum();
        let counted: Option<u64> = o.subscribers.iter().map(|s| s.lost_counted).sum();
        let union = union_lost(o);
        let at_pub = o.publisher.as_ref().map(|p| p.lost);
        goals.push(Goal {
            name: "partition longer than the resend window".into(),
            target: "the loss counted exactly at both ends".into(),
            figure: format!(
                "{lost} lost; counted {} by the subscriber, {} by the publisher ({union} distinct)",
                counted.map_or("nothing".into(), |c| c.to_string()),
                at_pub.map_or("nothing".into(), |c| c.to_string())
            ),
            met: counted == Some(lost) && at_pub == Some(union),
        });
    }
    if let Some(o) = campaign(outcomes, "soak") {
        let (growth, fds) = soak(o);
        goals.push(Goal {
            name: "soak".into(),
            target: "RSS within 10%, file descriptors constant after warm-up".into(),
            figure: format!(
                "largest RSS change {:+.1}%, descriptors varied by {fds}",
                growth * 100.0
            ),
            met: growth.abs() <= 0.10 && fds == 0,
        });
    }
    goals
}

/// The flood goal, judged on the run under the quota against the run alone: the neighbour's
/// p99 within 2x, the flood held to its quota (10% for the bucket's one-second burst and
/// the timing of the flooder's own count) and counted on its link.
pub fn flood(f: &FloodOutcome) -> Option<Goal> {
    if f.error.is_some() {
        return None;
    }
    let alone = f.runs.iter().find(|r| !r.flood)?;
    let held = f.runs.iter().find(|r| r.flood && r.quota_in_force > 0)?;
    let quota = held.quota_in_force as f64;
    let rate = held.flood_per_s.unwrap_or(f64::NAN);
    let waits = held.flood_quota_waits.unwrap_or(0) + held.flood_dropped_quota.unwrap_or(0);
    let ratio = held.neighbour_p99_ms / alone.neighbour_p99_ms;
    Some(Goal {
        name: "a member flooding one topic".into(),
        target: "the other topic's p99 within 2x of unloaded; the flood throttled to its quota and counted".into(),
        figure: format!(
            "p99 {:.2} ms alone, {:.2} ms flooded ({ratio:.2}x); flood {rate:.0} msg/s against a quota of {quota:.0}, {waits} waits counted",
            alone.neighbour_p99_ms, held.neighbour_p99_ms
        ),
        met: ratio <= 2.0 && rate <= quota * 1.1 && waits > 0 && held.neighbour_missing == 0,
    })
}

/// Distinct sequences lost to any subscriber.
fn union_lost(o: &Outcome) -> u64 {
    let mut all: Vec<(u64, u64)> = o
        .subscribers
        .iter()
        .flat_map(|s| s.delivery.lost_ranges.iter().copied())
        .collect();
    all.sort_unstable();
    let mut n = 0;
    let mut end = 0;
    for (a, b) in all {
        let a = a.max(end + 1);
        if b >= a {
            n += b - a + 1;
            end = b;
        }
    }
    n
}

/// After the warm-up (the first fifth of the run, at least 30 s): the largest relative
/// change of any process's RSS between the mean of its first three samples and of its last
/// three, and the largest spread of its open descriptors.
pub fn soak(o: &Outcome) -> (f64, u64) {
    let end = o.usage.iter().map(|u| u.at_s).fold(0.0, f64::max);
    let start = o.usage.iter().map(|u| u.at_s).fold(f64::MAX, f64::min);
    let warm = start + ((end - start) / 5.0).max(30.0);
    let mut names: Vec<&str> = o.usage.iter().map(|u| u.process.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let (mut growth, mut spread) = (0.0f64, 0u64);
    for n in names {
        let s: Vec<_> = o
            .usage
            .iter()
            .filter(|u| u.process == n && u.at_s >= warm)
            .collect();
        if s.len() < 6 {
            continue;
        }
        let mean = |v: &[&super::campaign::UsageSample]| {
            v.iter().map(|u| u.rss_kb as f64).sum::<f64>() / v.len() as f64
        };
        let (a, b) = (mean(&s[..3]), mean(&s[s.len() - 3..]));
        let g = (b - a) / a.max(1.0);
        if g.abs() > growth.abs() {
            growth = g;
        }
        let fds = s.iter().map(|u| u.fds);
        spread = spread.max(fds.clone().max().unwrap_or(0) - fds.min().unwrap_or(0));
    }
    (growth, spread)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::campaign::SubscriberOutcome;
    use crate::faults::stream::Delivery;

    #[test]
    fn the_union_of_lost_ranges_counts_each_sequence_once() {
        let sub = |r: Vec<(u64, u64)>| SubscriberOutcome {
            delivery: Delivery {
                lost_ranges: r,
                ..Delivery::default()
            },
            ..SubscriberOutcome::default()
        };
        let o = Outcome {
            subscribers: vec![sub(vec![(5, 10), (20, 20)]), sub(vec![(8, 12)])],
            ..Outcome::default()
        };
        assert_eq!(union_lost(&o), 9);
    }
}
