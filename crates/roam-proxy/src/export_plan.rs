//! Which streams and DDS readers an exported topic needs, from the local publications on it.
//! Pure: fed discovery events and the time, no DDS and no I/O.
//!
//! Within one DDS domain a listener receives from every publisher it matches, each with that
//! publisher's QoS: a transient-local publisher's history reaches late joiners, a best-effort
//! one's samples are not retransmitted, and two latched publishers (two `/tf_static` nodes)
//! both reach a late joiner. The proxy keeps that across networks:
//!
//! - **Readers.** One DDS reader per [`ReaderClass`] (type, reliability, durability) present
//!   among the publishers, with exactly that reliability and durability, so it matches every
//!   publisher of its class and reads a transient-local one's history. A reader also matches
//!   publishers of stronger classes (a volatile reader matches a transient-local publisher);
//!   samples are routed by their writer, so each is forwarded once, by its own class's reader.
//! - **Streams.** What an importer mirrors with one DDS writer: all volatile publishers of one
//!   class share a stream; every transient-local publisher has a stream of its own, so each
//!   one's history survives for late joiners as it would natively.
//! - **Linger.** A stream whose last publisher left stays for [`LINGER`], so the samples it
//!   published just before leaving are still forwarded.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use roam_dds::{Guid, History, Qos};
use roam_proto::meta::StreamQos;

/// How long a stream outlives its last publisher.
pub const LINGER: Duration = Duration::from_secs(2);

/// The publishers one DDS reader serves: one type, one reliability, one durability.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReaderClass {
    pub dds_type: String,
    pub keyed: bool,
    pub reliable: bool,
    pub transient_local: bool,
}

impl ReaderClass {
    /// The reader's QoS: the class's reliability and durability, keeping all samples (they
    /// are taken as they arrive; a full sender blocks the DDS delivery and so pushes back
    /// on reliable publishers instead of dropping).
    pub fn reader_qos(&self) -> Qos {
        Qos {
            reliable: self.reliable,
            transient_local: self.transient_local,
            history: History::KeepAll,
        }
    }
}

/// One stream of the topic: a class, and for a transient-local publisher, that publisher.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamKey {
    pub class: ReaderClass,
    pub publisher: Option<Guid>,
}

impl StreamKey {
    /// A stable id for the stream (the same in every process and run), so that an importer
    /// keeps its writer when this exporter restarts while the publisher lives on.
    pub fn id(&self) -> u64 {
        // FNV-1a: deterministic, and collisions only cost an importer a writer re-creation.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let c = &self.class;
        let flags = [c.keyed as u8, c.reliable as u8, c.transient_local as u8];
        let publisher = self.publisher.unwrap_or([0; 16]);
        for b in c.dds_type.bytes().chain([0]).chain(flags).chain(publisher) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        h
    }
}

/// Where a sample read by some reader belongs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// To this stream.
    Stream(StreamKey),
    /// Its writer is another class's: that class's reader forwards it.
    Elsewhere,
    /// Its writer is unknown (gone before discovery told us about it) and the reader's class
    /// has no shared stream to put it in.
    Unknown,
}

#[derive(Clone, Debug)]
struct Member {
    stream: StreamKey,
    depth: u32,
    /// Set once the publication is gone: it routes its last samples until then.
    gone_until: Option<Instant>,
}

/// The publications of one exported topic and the streams and readers they need.
#[derive(Debug, Default)]
pub struct ExportPlan {
    members: BTreeMap<Guid, Member>,
}

fn depth_of(h: History) -> u32 {
    match h {
        History::KeepLast(n) => n.max(1),
        History::KeepAll => 0,
    }
}

/// The history depth a stream announces for a publisher that does not say its own.
///
/// The DDS standard leaves HISTORY out of a publication's discovery data; CycloneDDS adds it,
/// Fast DDS (rmw_fastrtps), RustDDS and others do not, and CycloneDDS then reports the DDS
/// default, keep last 1. Taken at its word, an importer would keep one sample where the
/// publisher keeps several: a late joiner of a latched topic would get only the newest, and
/// for a keyed type the proxy cannot resolve (forwarded as one keyless stream) only the
/// newest instance. So a publisher whose GUID does not carry CycloneDDS's vendor id counts as
/// keeping at least this many, the ROS 2 default depth (`rclcpp::QoS(10)`). A late joiner
/// keeps what its own depth allows, so a depth-1 subscriber still ends with the newest only.
pub const UNANNOUNCED_DEPTH: u32 = 10;

/// CycloneDDS's RTPS vendor id, at the head of the GUIDs it makes.
const VENDOR_ECLIPSE: [u8; 2] = [0x01, 0x10];

/// The depth to announce for `guid`'s publication, whose discovered history is `h`.
fn publisher_depth(guid: &Guid, h: History) -> u32 {
    match depth_of(h) {
        0 => 0,
        d if guid[..2] == VENDOR_ECLIPSE => d,
        d => d.max(UNANNOUNCED_DEPTH),
    }
}

impl ExportPlan {
    /// A local publication appeared (or its QoS changed).
    pub fn publication_up(&mut self, guid: Guid, dds_type: &str, keyed: bool, qos: Qos) {
        let class = ReaderClass {
            dds_type: dds_type.to_string(),
            keyed,
            reliable: qos.reliable,
            transient_local: qos.transient_local,
        };
        let publisher = qos.transient_local.then_some(guid);
        self.members.insert(
            guid,
            Member {
                stream: StreamKey { class, publisher },
                depth: publisher_depth(&guid, qos.history),
                gone_until: None,
            },
        );
    }

    /// A local publication went away: its stream lingers for [`LINGER`].
    pub fn publication_down(&mut self, now: Instant, guid: &Guid) {
        if let Some(m) = self.members.get_mut(guid) {
            m.gone_until.get_or_insert(now + LINGER);
        }
    }

    /// Forgets publications whose linger ended; true if anything changed.
    pub fn handle_timeout(&mut self, now: Instant) -> bool {
        let before = self.members.len();
        self.members
            .retain(|_, m| m.gone_until.is_none_or(|until| until > now));
        self.members.len() != before
    }

    /// When [`Self::handle_timeout`] has something to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.members.values().filter_map(|m| m.gone_until).min()
    }

    /// True when no publication (not even a lingering one) is left.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The streams now, with the QoS each announces: its class's reliability and durability,
    /// and the deepest history any of its publishers keeps (0: keep all wins).
    pub fn streams(&self) -> BTreeMap<StreamKey, StreamQos> {
        let mut out: BTreeMap<StreamKey, StreamQos> = BTreeMap::new();
        for m in self.members.values() {
            let q = out.entry(m.stream.clone()).or_insert(StreamQos {
                reliable: m.stream.class.reliable,
                transient_local: m.stream.class.transient_local,
                depth: m.depth,
            });
            q.depth = match (q.depth, m.depth) {
                (0, _) | (_, 0) => 0,
                (a, b) => a.max(b),
            };
        }
        out
    }

    /// The reader classes now.
    pub fn readers(&self) -> Vec<ReaderClass> {
        let mut v: Vec<ReaderClass> = self
            .members
            .values()
            .map(|m| m.stream.class.clone())
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// Where a sample that a `class` reader took from `writer` belongs.
    pub fn route(&self, class: &ReaderClass, writer: &Guid) -> Route {
        self.routes(class).route(writer)
    }

    /// How a `class` reader routes its samples, by writer.
    pub fn routes(&self, class: &ReaderClass) -> Routes {
        let mut r = Routes::default();
        for (g, m) in &self.members {
            if m.stream.class == *class {
                r.own.insert(*g, m.stream.clone());
            } else {
                r.foreign.insert(*g);
            }
        }
        // A volatile class shares one stream: a writer discovery has not reported yet (or
        // already forgot) goes there.
        if !class.transient_local {
            r.shared = Some(StreamKey {
                class: class.clone(),
                publisher: None,
            });
        }
        r
    }
}

/// How one reader routes its samples: what its callback looks up per sample.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Routes {
    own: BTreeMap<Guid, StreamKey>,
    foreign: BTreeSet<Guid>,
    shared: Option<StreamKey>,
}

impl Routes {
    /// Where a sample from `writer` belongs.
    pub fn route(&self, writer: &Guid) -> Route {
        if let Some(k) = self.own.get(writer) {
            return Route::Stream(k.clone());
        }
        if self.foreign.contains(writer) {
            return Route::Elsewhere;
        }
        match &self.shared {
            Some(k) => Route::Stream(k.clone()),
            None => Route::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRING: &str = "std_msgs::msg::dds_::String_";

    /// A CycloneDDS publication's GUID (vendor id 01.10 at its head).
    fn guid(n: u8) -> Guid {
        let mut g = [n; 16];
        g[..2].copy_from_slice(&VENDOR_ECLIPSE);
        g
    }

    /// A Fast DDS publication's GUID (vendor id 01.0f).
    fn fastdds_guid(n: u8) -> Guid {
        let mut g = [n; 16];
        g[..2].copy_from_slice(&[0x01, 0x0f]);
        g
    }

    #[test]
    fn a_publisher_that_does_not_announce_its_history_counts_as_the_ros_default_depth() {
        let mut p = ExportPlan::default();
        // Fast DDS announced no HISTORY: CycloneDDS reports keep last 1.
        p.publication_up(fastdds_guid(1), STRING, false, Qos::latched(1));
        let streams = p.streams();
        let (_, q) = streams.iter().next().unwrap();
        assert_eq!(q.depth, UNANNOUNCED_DEPTH);
        // A deeper announcement (a vendor that does send it) and keep-all stay as they are.
        p.publication_up(fastdds_guid(1), STRING, false, Qos::latched(50));
        assert_eq!(p.streams().values().next().unwrap().depth, 50);
        let keep_all = Qos {
            history: History::KeepAll,
            ..Qos::latched(1)
        };
        p.publication_up(fastdds_guid(1), STRING, false, keep_all);
        assert_eq!(p.streams().values().next().unwrap().depth, 0);
        // A CycloneDDS publisher's depth is its own.
        let mut c = ExportPlan::default();
        c.publication_up(guid(2), STRING, false, Qos::latched(1));
        assert_eq!(c.streams().values().next().unwrap().depth, 1);
    }

    fn volatile(depth: u32) -> Qos {
        Qos {
            reliable: true,
            transient_local: false,
            history: History::KeepLast(depth),
        }
    }

    #[test]
    fn a_latched_and_a_volatile_publisher_each_get_a_reader_and_a_stream() {
        let mut p = ExportPlan::default();
        p.publication_up(guid(1), STRING, false, Qos::latched(1));
        p.publication_up(guid(2), STRING, false, volatile(10));
        let readers = p.readers();
        assert_eq!(readers.len(), 2);
        assert!(
            readers.iter().any(|c| c.transient_local) && readers.iter().any(|c| !c.transient_local)
        );
        let streams = p.streams();
        assert_eq!(streams.len(), 2);
        let latched = streams
            .iter()
            .find(|(k, _)| k.class.transient_local)
            .unwrap();
        assert_eq!(latched.0.publisher, Some(guid(1)));
        assert_eq!(
            *latched.1,
            StreamQos {
                reliable: true,
                transient_local: true,
                depth: 1
            }
        );

        // The volatile reader also matches the latched publisher: its samples are the other
        // reader's to forward.
        let v = readers.iter().find(|c| !c.transient_local).unwrap();
        let t = readers.iter().find(|c| c.transient_local).unwrap();
        assert_eq!(p.route(v, &guid(1)), Route::Elsewhere);
        assert!(matches!(p.route(t, &guid(1)), Route::Stream(k) if k.publisher == Some(guid(1))));
        assert!(matches!(p.route(v, &guid(2)), Route::Stream(k) if k.publisher.is_none()));
        // A writer discovery has not reported yet: the volatile class's shared stream.
        assert!(matches!(p.route(v, &guid(9)), Route::Stream(_)));
        assert_eq!(p.route(t, &guid(9)), Route::Unknown);
    }

    #[test]
    fn two_latched_publishers_keep_two_histories_and_volatile_ones_share_a_stream() {
        let mut p = ExportPlan::default();
        p.publication_up(guid(1), STRING, false, Qos::latched(1));
        p.publication_up(guid(2), STRING, false, Qos::latched(5));
        p.publication_up(guid(3), STRING, false, volatile(10));
        p.publication_up(guid(4), STRING, false, volatile(100));
        let streams = p.streams();
        assert_eq!(streams.len(), 3, "{streams:?}");
        let shared = streams
            .iter()
            .find(|(k, _)| !k.class.transient_local)
            .unwrap();
        assert_eq!(shared.1.depth, 100, "the deepest history of the class");
        assert_eq!(p.readers().len(), 2);
        let t = p.readers().into_iter().find(|c| c.transient_local).unwrap();
        assert!(matches!(p.route(&t, &guid(2)), Route::Stream(k) if k.publisher == Some(guid(2))));
        assert_eq!(p.route(&t, &guid(3)), Route::Elsewhere);
        // Stream ids are stable and distinct.
        let ids: std::collections::BTreeSet<u64> = streams.keys().map(StreamKey::id).collect();
        assert_eq!(ids.len(), 3);
        assert_eq!(ExportPlan::default().streams().len(), 0);
    }

    #[test]
    fn a_publisher_that_leaves_lingers_then_its_stream_goes() {
        let t0 = Instant::now();
        let mut p = ExportPlan::default();
        p.publication_up(guid(1), STRING, false, Qos::latched(1));
        p.publication_down(t0, &guid(1));
        assert_eq!(p.streams().len(), 1, "still forwarding its last samples");
        assert_eq!(p.poll_timeout(), Some(t0 + LINGER));
        assert!(!p.handle_timeout(t0 + LINGER / 2));
        assert!(p.handle_timeout(t0 + LINGER));
        assert!(p.is_empty() && p.streams().is_empty() && p.poll_timeout().is_none());

        // A node restarted with other QoS: the new publication's class replaces the old.
        p.publication_up(guid(1), STRING, false, Qos::latched(1));
        p.publication_down(t0, &guid(1));
        p.publication_up(guid(2), STRING, false, Qos::best_effort(5));
        p.handle_timeout(t0 + LINGER);
        let streams = p.streams();
        assert_eq!(streams.len(), 1);
        assert!(!streams.keys().next().unwrap().class.reliable);
    }

    #[test]
    fn keep_all_wins_the_depth_of_a_shared_stream() {
        let mut p = ExportPlan::default();
        p.publication_up(guid(1), STRING, false, volatile(10));
        p.publication_up(
            guid(2),
            STRING,
            false,
            Qos {
                history: History::KeepAll,
                ..volatile(1)
            },
        );
        assert_eq!(p.streams().values().next().unwrap().depth, 0);
    }
}
