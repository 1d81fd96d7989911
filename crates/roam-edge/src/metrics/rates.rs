//! Rates between two snapshots of one process: what `roam top` and a dashboard show (messages
//! and bytes per second, mean and largest size, age percentiles over the interval, drops in
//! it). Pure: two snapshots in, rows out.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Ages, Bucket, Direction, Link, ProcessKind, Snapshot, Topic};

/// One topic of one member over an interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopicRate {
    pub member: String,
    pub topic: String,
    pub direction: Direction,
    pub msgs_per_s: f64,
    pub bytes_per_s: f64,
    /// Mean payload over the interval (None when nothing came).
    pub mean_size: Option<f64>,
    /// Largest payload since the process started.
    pub max_size: Option<u64>,
    /// Age percentiles of the interval's messages, µs (bucket upper bounds).
    pub age_p50_us: Option<u64>,
    pub age_p99_us: Option<u64>,
    /// Messages dropped in the interval, all causes.
    pub drops: u64,
    pub total: u64,
}

/// One link of one member, now.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkRate {
    pub member: String,
    pub peer: String,
    pub rtt_us: Option<u64>,
    pub cwnd: Option<u64>,
    pub bytes_in_per_s: f64,
    pub bytes_out_per_s: f64,
    pub lost_packets: Option<u64>,
    /// Bytes waiting in the link's send queue now.
    pub queued_bytes: u64,
    /// Reliable topics paused on the link now (back-pressure).
    pub stalled_topics: u64,
}

fn seconds(before: &Snapshot, now: &Snapshot) -> f64 {
    let us = now
        .process
        .snapshot_time_us
        .saturating_sub(before.process.snapshot_time_us);
    us as f64 / 1e6
}

fn drops(t: &Topic) -> u64 {
    t.drops_by_cause().iter().map(|(_, n)| n).sum()
}

/// The ages of `now` that came after `before` (bucket by bucket).
fn interval(before: Option<&Ages>, now: &Ages) -> Vec<Bucket> {
    now.buckets
        .iter()
        .map(|b| {
            let was = before
                .and_then(|a| a.buckets.iter().find(|x| x.le_us == b.le_us))
                .map_or(0, |x| x.count);
            Bucket {
                le_us: b.le_us,
                count: b.count.saturating_sub(was),
            }
        })
        .filter(|b| b.count > 0)
        .collect()
}

/// The bucket bound at or under which `q` of the ages are.
fn quantile(buckets: &[Bucket], q: f64) -> Option<u64> {
    let total: u64 = buckets.iter().map(|b| b.count).sum();
    if total == 0 {
        return None;
    }
    let want = (q * total as f64).ceil().max(1.0) as u64;
    let mut seen = 0;
    for b in buckets {
        seen += b.count;
        if seen >= want {
            return Some(b.le_us);
        }
    }
    buckets.last().map(|b| b.le_us)
}

/// Per topic rates from `before` to `now` (the same process); with no `before`, rates over
/// the process's whole life.
pub fn topic_rates(before: Option<&Snapshot>, now: &Snapshot) -> Vec<TopicRate> {
    let secs = match before {
        Some(b) => seconds(b, now),
        None => {
            let us = now
                .process
                .snapshot_time_us
                .saturating_sub(now.process.start_time_us);
            us as f64 / 1e6
        }
    };
    now.topics
        .iter()
        .map(|t| {
            let was = before.and_then(|b| {
                b.topics
                    .iter()
                    .find(|x| x.name == t.name && x.direction == t.direction)
            });
            let msgs = t.samples.saturating_sub(was.map_or(0, |w| w.samples));
            let bytes = t.bytes.saturating_sub(was.map_or(0, |w| w.bytes));
            let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
            let ages = interval(was.map(|w| &w.age_in), &t.age_in);
            TopicRate {
                member: now.process.id.clone(),
                topic: t.name.clone(),
                direction: t.direction,
                msgs_per_s: per_s(msgs),
                bytes_per_s: per_s(bytes),
                mean_size: (msgs > 0).then(|| bytes as f64 / msgs as f64),
                max_size: t.max_size,
                age_p50_us: quantile(&ages, 0.5),
                age_p99_us: quantile(&ages, 0.99),
                drops: drops(t).saturating_sub(was.map_or(0, drops)),
                total: t.samples,
            }
        })
        .collect()
}

/// Every open link of `now`, with its byte rates since `before`.
pub fn link_rates(before: Option<&Snapshot>, now: &Snapshot) -> Vec<LinkRate> {
    let secs = before.map_or(0.0, |b| seconds(b, now));
    now.links
        .iter()
        .filter(|l| !l.closed)
        .map(|l: &Link| {
            let was = before.and_then(|b| b.links.iter().find(|x| x.link == l.link));
            let per_s = |now: u64, was: Option<u64>| match was {
                Some(w) if secs > 0.0 => now.saturating_sub(w) as f64 / secs,
                _ => 0.0,
            };
            LinkRate {
                member: now.process.id.clone(),
                peer: l.peer.clone(),
                rtt_us: l.path.as_ref().map(|p| p.rtt_us),
                cwnd: l.path.as_ref().map(|p| p.cwnd),
                bytes_in_per_s: per_s(l.bytes_in, was.map(|w| w.bytes_in)),
                bytes_out_per_s: per_s(l.bytes_out, was.map(|w| w.bytes_out)),
                lost_packets: l.path.as_ref().map(|p| p.lost_packets),
                queued_bytes: l.queue.bytes,
                stalled_topics: l.queue.stalled_topics,
            }
        })
        .collect()
}

/// One member now: what it is, its CPU (% of one core over the interval) and memory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemberRate {
    pub id: String,
    pub kind: ProcessKind,
    pub cpu_percent: Option<f64>,
    pub rss_bytes: Option<u64>,
    /// µs since the Unix epoch of its latest snapshot.
    pub snapshot_time_us: u64,
}

/// A realm's figures over the last interval: every member, topic and open link.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RealmRates {
    pub members: Vec<MemberRate>,
    /// By topic, then member; the realm's own machinery (`roam/...` names) left out.
    pub topics: Vec<TopicRate>,
    pub links: Vec<LinkRate>,
}

/// The two latest snapshots of each member, to take rates between.
#[derive(Debug, Default)]
pub struct History {
    members: BTreeMap<String, (Option<Snapshot>, Snapshot)>,
}

impl History {
    /// Takes the members' latest snapshots (members not among them are forgotten).
    pub fn update(&mut self, latest: Vec<Snapshot>) {
        let names: Vec<String> = latest.iter().map(|s| s.process.id.clone()).collect();
        self.members.retain(|m, _| names.contains(m));
        for s in latest {
            match self.members.get_mut(&s.process.id) {
                Some((before, now))
                    if s.process.snapshot_time_us > now.process.snapshot_time_us =>
                {
                    *before = Some(std::mem::replace(now, s));
                }
                Some(_) => {}
                None => {
                    self.members.insert(s.process.id.clone(), (None, s));
                }
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Whether every member has been heard twice (rates over one interval for all).
    pub fn all_twice(&self) -> bool {
        !self.members.is_empty() && self.members.values().all(|(b, _)| b.is_some())
    }

    /// The figures now.
    pub fn rates(&self) -> RealmRates {
        let mut r = RealmRates::default();
        for (before, now) in self.members.values() {
            let before = before.as_ref();
            let cpu = before.and_then(|b| {
                let dt = now
                    .process
                    .snapshot_time_us
                    .saturating_sub(b.process.snapshot_time_us);
                let c = now.process.cpu_time_us?;
                let dc = c.saturating_sub(b.process.cpu_time_us?);
                (dt > 0).then(|| 100.0 * dc as f64 / dt as f64)
            });
            r.members.push(MemberRate {
                id: now.process.id.clone(),
                kind: now.process.kind,
                cpu_percent: cpu,
                rss_bytes: now.process.rss_bytes,
                snapshot_time_us: now.process.snapshot_time_us,
            });
            r.topics.extend(
                topic_rates(before, now)
                    .into_iter()
                    .filter(|t| !t.topic.starts_with("roam/")),
            );
            r.links.extend(link_rates(before, now));
        }
        r.topics
            .sort_by(|a, b| (&a.topic, &a.member).cmp(&(&b.topic, &b.member)));
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Process, ProcessKind, TopicDrops, VERSION};

    fn snap(at_s: u64, samples: u64, bytes: u64, ages: &[(u64, u64)], ruled: u64) -> Snapshot {
        Snapshot {
            version: VERSION,
            process: Process {
                id: "robot".into(),
                kind: ProcessKind::Proxy,
                roam_version: "0".into(),
                pid: 1,
                start_time_us: 0,
                snapshot_time_us: at_s * 1_000_000,
                cpu_time_us: None,
                rss_bytes: None,
                udp_receive_drops: None,
            },
            routing: None,
            admission: None,
            trust: None,
            links: Vec::new(),
            topics: vec![Topic {
                name: "rt/chatter".into(),
                direction: Direction::Export,
                samples,
                bytes,
                max_size: Some(100),
                min_size: Some(1),
                drops: TopicDrops {
                    ruled,
                    ..TopicDrops::default()
                },
                recovered: 0,
                age_in: Ages {
                    count: ages.iter().map(|(_, c)| c).sum(),
                    buckets: ages
                        .iter()
                        .map(|&(le_us, count)| Bucket { le_us, count })
                        .collect(),
                    ..Ages::default()
                },
                age_out: None,
            }],
        }
    }

    #[test]
    fn rates_are_over_the_interval_and_ages_are_the_interval_s() {
        let a = snap(10, 100, 1000, &[(100, 100)], 5);
        let b = snap(12, 300, 5000, &[(100, 101), (1000, 98), (5000, 1)], 9);
        let r = &topic_rates(Some(&a), &b)[0];
        assert_eq!(r.msgs_per_s, 100.0);
        assert_eq!(r.bytes_per_s, 2000.0);
        assert_eq!(r.mean_size, Some(20.0));
        assert_eq!(r.age_p50_us, Some(1000));
        assert_eq!(r.age_p99_us, Some(1000));
        assert_eq!(r.drops, 4);
        assert_eq!(r.total, 300);
        let first = &topic_rates(None, &a)[0];
        assert_eq!(first.msgs_per_s, 10.0);
        assert_eq!(first.age_p50_us, Some(100));
        let idle = &topic_rates(
            Some(&b),
            &snap(13, 300, 5000, &[(100, 101), (1000, 98), (5000, 1)], 9),
        )[0];
        assert_eq!(
            (idle.msgs_per_s, idle.mean_size, idle.age_p50_us),
            (0.0, None, None)
        );
    }
}
