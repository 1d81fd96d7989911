//! Which DDS writers an imported topic needs, from what its exporters announce. Pure: fed
//! announcements and the time, no DDS and no I/O.
//!
//! Every stream an exporter announces ([`roam_proto::meta`]) is mirrored by one local DDS
//! writer with the stream's type and QoS, so the local listeners see what they would see next
//! to the publishers: a transient-local stream's history for late joiners, a best-effort
//! stream's samples without retransmission, two latched publishers as two histories. Data
//! envelopes name their stream by the sender session in their header.
//!
//! An exporter's announcement replaces its previous one: streams it no longer lists lose
//! their writer (as a publisher that leaves takes its history with it). An exporter that falls
//! silent for [`STALE_AFTER`] (gone, or cut off) loses its writers too; when it comes back it
//! announces again and its readers send the history again.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use roam_proto::meta::{StreamAnnouncement, StreamQos, TopicAnnouncement, XTypes};

/// How long an exporter's streams stay without a fresh announcement (it announces every 2 s).
pub const STALE_AFTER: Duration = Duration::from_secs(10);

/// Everything a local writer is made from. A stream whose QoS or type changes gets a new
/// writer (DDS cannot change those of a live writer).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WriterKey {
    pub exporter: String,
    pub stream: u64,
    pub dds_type: String,
    pub keyed: bool,
    pub qos: StreamQos,
    pub xtypes: Option<XTypes>,
}

impl WriterKey {
    fn of(exporter: &str, s: &StreamAnnouncement) -> Self {
        WriterKey {
            exporter: exporter.to_string(),
            stream: s.id,
            dds_type: s.dds_type.clone(),
            keyed: s.keyed,
            qos: s.qos,
            xtypes: s.xtypes.clone(),
        }
    }
}

#[derive(Debug)]
struct Exporter {
    streams: Vec<StreamAnnouncement>,
    last_seen: Instant,
}

/// The exporters of one imported topic and the writers they need.
#[derive(Debug, Default)]
pub struct ImportPlan {
    exporters: BTreeMap<String, Exporter>,
}

impl ImportPlan {
    /// Takes an announcement; true when the set of writers or sessions changed.
    pub fn handle_announcement(&mut self, now: Instant, a: TopicAnnouncement) -> bool {
        match self.exporters.get_mut(&a.exporter) {
            Some(e) if e.streams == a.streams => {
                e.last_seen = now;
                false
            }
            _ => {
                self.exporters.insert(
                    a.exporter,
                    Exporter {
                        streams: a.streams,
                        last_seen: now,
                    },
                );
                true
            }
        }
    }

    /// Forgets exporters silent for [`STALE_AFTER`]; true if any was.
    pub fn handle_timeout(&mut self, now: Instant) -> bool {
        let before = self.exporters.len();
        self.exporters
            .retain(|_, e| now.saturating_duration_since(e.last_seen) < STALE_AFTER);
        self.exporters.len() != before
    }

    /// When [`Self::handle_timeout`] has something to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.exporters
            .values()
            .map(|e| e.last_seen + STALE_AFTER)
            .min()
    }

    /// The writers every announced stream needs.
    pub fn writers(&self) -> BTreeSet<WriterKey> {
        self.exporters
            .iter()
            .flat_map(|(x, e)| e.streams.iter().map(move |s| WriterKey::of(x, s)))
            .collect()
    }

    /// Which writer each data session's envelopes go to.
    pub fn sessions(&self) -> HashMap<u64, WriterKey> {
        self.exporters
            .iter()
            .flat_map(|(x, e)| {
                e.streams
                    .iter()
                    .map(move |s| (s.session, WriterKey::of(x, s)))
            })
            .collect()
    }

    /// The DDS types announced: the topic's data travels on one realm name per type.
    pub fn data_types(&self) -> BTreeSet<String> {
        self.exporters
            .values()
            .flat_map(|e| e.streams.iter().map(|s| s.dds_type.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRING: &str = "std_msgs::msg::dds_::String_";

    fn stream(id: u64, session: u64, transient_local: bool) -> StreamAnnouncement {
        StreamAnnouncement {
            id,
            session,
            dds_type: STRING.into(),
            keyed: false,
            qos: StreamQos {
                reliable: true,
                transient_local,
                depth: 1,
            },
            xtypes: None,
        }
    }

    fn announce(exporter: &str, streams: Vec<StreamAnnouncement>) -> TopicAnnouncement {
        TopicAnnouncement {
            exporter: exporter.into(),
            streams,
        }
    }

    #[test]
    fn each_stream_gets_a_writer_and_its_sessions_map_to_it() {
        let t0 = Instant::now();
        let mut p = ImportPlan::default();
        assert!(p.handle_announcement(
            t0,
            announce("a", vec![stream(1, 10, true), stream(2, 20, false)])
        ));
        assert!(!p.handle_announcement(
            t0,
            announce("a", vec![stream(1, 10, true), stream(2, 20, false)])
        ));
        assert!(p.handle_announcement(t0, announce("b", vec![stream(1, 30, true)])));
        let w = p.writers();
        assert_eq!(
            w.len(),
            3,
            "two exporters' latched streams are two histories"
        );
        let s = p.sessions();
        assert!(s[&10].qos.transient_local && !s[&20].qos.transient_local);
        assert_eq!(s[&30].exporter, "b");
        assert_eq!(p.data_types().len(), 1);
    }

    #[test]
    fn a_changed_announcement_replaces_the_exporters_streams() {
        let t0 = Instant::now();
        let mut p = ImportPlan::default();
        p.handle_announcement(t0, announce("a", vec![stream(1, 10, true)]));
        // The latched node stopped, a volatile one started.
        assert!(p.handle_announcement(t0, announce("a", vec![stream(2, 11, false)])));
        let w = p.writers();
        assert_eq!(w.len(), 1);
        assert!(!w.iter().next().unwrap().qos.transient_local);
        assert!(!p.sessions().contains_key(&10));
        // A restarted exporter: same stream id, new session: same writer.
        let before = p.writers();
        p.handle_announcement(t0, announce("a", vec![stream(2, 99, false)]));
        assert_eq!(p.writers(), before);
        assert!(p.sessions().contains_key(&99));
    }

    #[test]
    fn a_silent_exporter_goes_stale() {
        let t0 = Instant::now();
        let mut p = ImportPlan::default();
        p.handle_announcement(t0, announce("a", vec![stream(1, 10, true)]));
        p.handle_announcement(
            t0 + Duration::from_secs(5),
            announce("b", vec![stream(1, 20, true)]),
        );
        assert_eq!(p.poll_timeout(), Some(t0 + STALE_AFTER));
        assert!(!p.handle_timeout(t0 + STALE_AFTER - Duration::from_millis(1)));
        assert!(p.handle_timeout(t0 + STALE_AFTER));
        assert_eq!(p.writers().len(), 1);
        assert_eq!(p.writers().iter().next().unwrap().exporter, "b");
    }
}
