//! What roam's own processes measured at each hop, from the metrics snapshot each router and
//! proxy leaves in its metrics file at shutdown (per link: age of arriving data and the QUIC
//! path; per exported topic: DDS age when sealed; per imported topic: age when opened and
//! once written to DDS). E7 splits a round trip into components with them.

use std::collections::BTreeMap;

use roam_edge::metrics::{self, Direction, Snapshot};
use serde::Serialize;

/// One age distribution, microseconds (the summary of a snapshot's [`metrics::Ages`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Ages {
    pub n: f64,
    pub mean: f64,
    pub std: f64,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl From<&metrics::Ages> for Ages {
    fn from(a: &metrics::Ages) -> Self {
        Ages {
            n: a.count as f64,
            mean: a.mean_us,
            std: a.std_us,
            min: a.min_us as f64,
            p50: a.p50_us,
            p90: a.p90_us,
            p99: a.p99_us,
            max: a.max_us as f64,
        }
    }
}

/// One link or topic of one process.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Hop {
    /// The lab's name for the process (`proxy-a`, `r1`, ...).
    pub process: String,
    /// `link`, `export` or `import`.
    pub kind: String,
    /// The link's peer, or the topic.
    pub of: String,
    /// Its ages, under the names of the status lines (`data_age_us`, `dds_age_us`,
    /// `opened_age_us`, `written_age_us`).
    pub ages: BTreeMap<String, Ages>,
    /// A QUIC link's path estimates (`rtt_us`, `cwnd`, `lost_packets`, ...); empty otherwise.
    pub path: BTreeMap<String, f64>,
}

/// The hops of one process's snapshot: its links (open ones, then the last closed ones),
/// then its topics.
pub fn from_snapshot(process: &str, s: &Snapshot) -> Vec<Hop> {
    let hop = |kind: &str, of: &str, ages: Vec<(&str, &metrics::Ages)>| Hop {
        process: process.to_string(),
        kind: kind.to_string(),
        of: of.to_string(),
        ages: ages
            .into_iter()
            .map(|(k, a)| (k.to_string(), Ages::from(a)))
            .collect(),
        path: BTreeMap::new(),
    };
    let links = s.links.iter().map(|l| {
        let mut h = hop("link", &l.peer, vec![("data_age_us", &l.data_age)]);
        if let Some(p) = &l.path {
            h.path = [
                ("rtt_us", p.rtt_us),
                ("cwnd", p.cwnd),
                ("sent_packets", p.sent_packets),
                ("lost_packets", p.lost_packets),
                ("congestion_events", p.congestion_events),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v as f64))
            .collect();
        }
        h
    });
    let topics = s.topics.iter().map(|t| match t.direction {
        Direction::Export => hop("export", &t.name, vec![("dds_age_us", &t.age_in)]),
        Direction::Import => {
            let mut ages = vec![("opened_age_us", &t.age_in)];
            ages.extend(t.age_out.as_ref().map(|a| ("written_age_us", a)));
            hop("import", &t.name, ages)
        }
    });
    links.chain(topics).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A proxy's snapshot as its metrics file holds it (buckets trimmed to what matters).
    const SNAPSHOT: &str = r#"{"version":1,
        "process":{"id":"proxy-b","kind":"proxy","roam_version":"0.1.0","pid":7,
                   "start_time_us":1,"snapshot_time_us":2},
        "routing":{"names":4,"routers_known":2,"subscribed_names":1,"data_in":2,
                   "data_forwarded":0,"data_delivered_local":2,"control_frames_in":9,
                   "drops":{"no_route":0,"rpf":0,"malformed":0,"unknown_link":0,"local_subscriber":0}},
        "links":[
          {"link":1,"peer":"r1","peer_role":"router","kind":"quic","closed":false,
           "frames_in":1016,"frames_out":3,"bytes_in":9,"bytes_out":9,"drops":{"full":0,"stale":0},
           "path":{"rtt_us":70210,"cwnd":1048576,"sent_packets":9000,"lost_packets":12,"congestion_events":3},
           "data_age":{"count":1004,"sum_us":522080,"min_us":169,"max_us":8437,"mean_us":520.0,
                       "std_us":884.0,"p50_us":296.0,"p90_us":488.0,"p99_us":4992.0,"buckets":[]}},
          {"link":2,"peer":"r0","peer_role":"router","kind":"tcp","closed":true,
           "frames_in":1,"frames_out":1,"bytes_in":1,"bytes_out":1,"drops":{"full":0,"stale":0},
           "data_age":{"count":1,"sum_us":5,"min_us":5,"max_us":5,"mean_us":5.0,"std_us":0.0,
                       "p50_us":5.0,"p90_us":5.0,"p99_us":5.0,"buckets":[{"le_us":5,"count":1}]}}],
        "topics":[
          {"name":"rt/t","direction":"import","samples":1001,
           "drops":{"refused":0,"failed":0,"unattributed":0,"unannounced":0},
           "age_in":{"count":1001,"sum_us":540540,"min_us":179,"max_us":8462,"mean_us":540.0,
                     "std_us":890.0,"p50_us":312.0,"p90_us":528.0,"p99_us":4992.0,"buckets":[]},
           "age_out":{"count":1001,"sum_us":550550,"min_us":185,"max_us":8480,"mean_us":550.0,
                      "std_us":894.0,"p50_us":328.0,"p90_us":528.0,"p99_us":4992.0,"buckets":[]}},
          {"name":"rt/t/echo","direction":"export","samples":3,
           "drops":{"refused":0,"failed":0,"unattributed":0,"unannounced":0},
           "age_in":{"count":3,"sum_us":30,"min_us":10,"max_us":10,"mean_us":10.0,"std_us":0.0,
                     "p50_us":10.0,"p90_us":10.0,"p99_us":10.0,"buckets":[]}}]}"#;

    #[test]
    fn a_snapshot_gives_each_link_and_topic_its_ages() {
        let s = Snapshot::from_json(SNAPSHOT).unwrap();
        let hops = from_snapshot("proxy-b", &s);
        let kinds: Vec<_> = hops
            .iter()
            .map(|h| (h.kind.as_str(), h.of.as_str()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("link", "r1"),
                ("link", "r0"),
                ("import", "rt/t"),
                ("export", "rt/t/echo")
            ]
        );
        assert!(hops.iter().all(|h| h.process == "proxy-b"));
        let a = &hops[0].ages["data_age_us"];
        assert_eq!((a.n, a.p50, a.max), (1004.0, 296.0, 8437.0));
        assert_eq!(hops[0].path["lost_packets"], 12.0);
        assert_eq!(hops[0].path["rtt_us"], 70210.0);
        assert!(hops[1].path.is_empty(), "TCP: no QUIC figures");
        assert_eq!(hops[2].ages["written_age_us"].mean, 550.0);
        assert_eq!(hops[2].ages["opened_age_us"].n, 1001.0);
        assert_eq!(hops[3].ages.len(), 1);
        assert_eq!(hops[3].ages["dds_age_us"].min, 10.0);
    }
}
