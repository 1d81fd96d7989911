//! Where the time of many topics goes inside roam (E12, E13): the ages roam's proxies
//! measured for each topic (since the DDS source timestamp: into the exporting proxy, opened
//! in the importing proxy, written to DDS there), summarised over the topics of one flow.

use std::collections::BTreeMap;

use serde::Serialize;

use super::hops::Hop;

/// One age of one process over the topics of one flow: the median of the topics' p50s and
/// p99s, and the worst topic's p99 and maximum (microseconds).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stage {
    pub flow: String,
    pub process: String,
    /// `dds_age_us` (export), `opened_age_us` or `written_age_us` (import).
    pub age: String,
    pub topics: usize,
    pub samples: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub worst_p99_us: f64,
    pub max_us: f64,
}

/// Whether hop `of` (`/T/3` for an export, `rt/T/3` for an import) is topic `prefix`/N.
fn of_flow(of: &str, prefix: &str) -> bool {
    let name = of.strip_prefix("rt").unwrap_or(of);
    name.strip_prefix(prefix)
        .and_then(|r| r.strip_prefix('/'))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The stages of flow `name`, whose topics are `prefix`/0 .. `prefix`/N-1.
pub fn of(hops: &[Hop], name: &str, prefix: &str) -> Vec<Stage> {
    let mut groups: BTreeMap<(String, String), Vec<&super::hops::Ages>> = BTreeMap::new();
    for h in hops
        .iter()
        .filter(|h| h.kind != "link" && of_flow(&h.of, prefix))
    {
        for (age, a) in &h.ages {
            if a.n > 0.0 {
                groups
                    .entry((h.process.clone(), age.clone()))
                    .or_default()
                    .push(a);
            }
        }
    }
    groups
        .into_iter()
        .map(|((process, age), v)| Stage {
            flow: name.to_string(),
            process,
            age,
            topics: v.len(),
            samples: v.iter().map(|a| a.n).sum(),
            p50_us: median(v.iter().map(|a| a.p50).collect()),
            p99_us: median(v.iter().map(|a| a.p99).collect()),
            worst_p99_us: v.iter().map(|a| a.p99).fold(0.0, f64::max),
            max_us: v.iter().map(|a| a.max).fold(0.0, f64::max),
        })
        .collect()
}

/// The age of the data one process received over one link (since it was sealed), over the
/// whole run: where the time between the two proxies goes (at a router, or at proxy B).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkAge {
    pub process: String,
    pub peer: String,
    pub samples: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

/// The data ages of every link that received data.
pub fn links(hops: &[Hop]) -> Vec<LinkAge> {
    hops.iter()
        .filter(|h| h.kind == "link")
        .filter_map(|h| {
            let a = h.ages.get("data_age_us").filter(|a| a.n > 0.0)?;
            Some(LinkAge {
                process: h.process.clone(),
                peer: h.of.clone(),
                samples: a.n,
                p50_us: a.p50,
                p99_us: a.p99,
                max_us: a.max,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::hops::Ages;
    use super::*;

    fn hop(process: &str, kind: &str, of: &str, age: &str, p99: f64) -> Hop {
        Hop {
            process: process.into(),
            kind: kind.into(),
            of: of.into(),
            ages: [(
                age.to_string(),
                Ages {
                    n: 10.0,
                    p50: p99 / 2.0,
                    p99,
                    max: p99 * 2.0,
                    ..Ages::default()
                },
            )]
            .into(),
            path: BTreeMap::new(),
        }
    }

    #[test]
    fn link_ages_of_the_links_that_received_data() {
        let mut idle = hop("proxy-a", "link", "r1", "data_age_us", 0.0);
        if let Some(a) = idle.ages.get_mut("data_age_us") {
            a.n = 0.0;
        }
        let hops = vec![
            hop("r1", "link", "proxy-a", "data_age_us", 800.0),
            idle,
            hop(
                "proxy-b",
                "import",
                "rt/roam_lab/many/0",
                "opened_age_us",
                5.0,
            ),
        ];
        let got = links(&hops);
        assert_eq!(got.len(), 1);
        let l = &got[0];
        assert_eq!(
            (
                l.process.as_str(),
                l.peer.as_str(),
                l.p50_us,
                l.p99_us,
                l.max_us
            ),
            ("r1", "proxy-a", 400.0, 800.0, 1600.0)
        );
    }

    #[test]
    fn names_of_a_flow() {
        assert!(of_flow("/roam_lab/small/12", "/roam_lab/small"));
        assert!(of_flow("rt/roam_lab/small/0", "/roam_lab/small"));
        assert!(!of_flow("rt/roam_lab/small/echo", "/roam_lab/small"));
        assert!(!of_flow("/roam_lab/small/", "/roam_lab/small"));
        assert!(!of_flow("/roam_lab/smaller/1", "/roam_lab/small"));
        assert!(!of_flow("/roam_lab/image/0", "/roam_lab/small"));
    }

    #[test]
    fn stages_over_the_topics_of_a_flow() {
        let hops = vec![
            hop(
                "proxy-a",
                "export",
                "/roam_lab/small/0",
                "dds_age_us",
                100.0,
            ),
            hop(
                "proxy-a",
                "export",
                "/roam_lab/small/1",
                "dds_age_us",
                300.0,
            ),
            hop(
                "proxy-a",
                "export",
                "/roam_lab/small/2",
                "dds_age_us",
                200.0,
            ),
            hop("proxy-a", "export", "/roam_lab/image/0", "dds_age_us", 9e6),
            hop(
                "proxy-b",
                "import",
                "rt/roam_lab/small/0",
                "written_age_us",
                500.0,
            ),
            hop("proxy-b", "link", "/roam_lab/small/0", "data_age_us", 1.0),
        ];
        let s = of(&hops, "small", "/roam_lab/small");
        assert_eq!(s.len(), 2);
        assert_eq!(
            (s[0].process.as_str(), s[0].age.as_str()),
            ("proxy-a", "dds_age_us")
        );
        assert_eq!(s[0].topics, 3);
        assert_eq!(s[0].samples, 30.0);
        assert_eq!(s[0].p99_us, 200.0);
        assert_eq!(s[0].worst_p99_us, 300.0);
        assert_eq!(s[0].max_us, 600.0);
        assert_eq!(s[1].age, "written_age_us");
        assert!(of(&hops, "x", "/nothing").is_empty());
    }
}
