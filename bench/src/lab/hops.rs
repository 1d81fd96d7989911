//! What roam's own processes measured at each hop: the `roam::stats` lines a router and a
//! proxy log at shutdown (per link: age of arriving data; per exported topic: DDS age when
//! sealed; per imported topic: age when opened and once written to DDS). E7 splits a round
//! trip into components with them.

use std::collections::BTreeMap;

use serde::Serialize;

/// One age distribution, microseconds (as `roam::stats::summary_field` writes it).
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

impl Ages {
    fn parse(s: &str) -> Option<Ages> {
        let mut a = Ages::default();
        let words: Vec<&str> = s.split_whitespace().collect();
        for pair in words.chunks(2) {
            let [k, v] = pair else { return None };
            let v: f64 = v.parse().ok()?;
            match *k {
                "n" => a.n = v,
                "mean" => a.mean = v,
                "std" => a.std = v,
                "min" => a.min = v,
                "p50" => a.p50 = v,
                "p90" => a.p90 = v,
                "p99" => a.p99 = v,
                "max" => a.max = v,
                _ => {}
            }
        }
        Some(a)
    }
}

/// One stats line of one process.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Hop {
    /// The lab's name for the process (`proxy-a`, `r1`, ...).
    pub process: String,
    /// `link`, `export` or `import`.
    pub kind: String,
    /// The link's peer, or the topic.
    pub of: String,
    /// Every age field of the line (`data_age_us`, `dds_age_us`, `opened_age_us`,
    /// `written_age_us`).
    pub ages: BTreeMap<String, Ages>,
    /// A QUIC link's path estimates (`rtt_us`, `cwnd`, `lost_packets`, ...); empty otherwise.
    pub path: BTreeMap<String, f64>,
}

/// `key number key number ...` (the `path` field); pairs that are not numbers are skipped.
fn numbers(s: &str) -> BTreeMap<String, f64> {
    let words: Vec<&str> = s.split_whitespace().collect();
    words
        .chunks(2)
        .filter_map(|pair| match pair {
            [k, v] => Some((k.to_string(), v.parse().ok()?)),
            _ => None,
        })
        .collect()
}

/// Splits `key=value key="quoted value"` fields.
fn fields(s: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = s.trim_start();
    while let Some(eq) = rest.find('=') {
        let key = rest[..eq].trim().to_string();
        let after = &rest[eq + 1..];
        let (value, next) = match after.strip_prefix('"') {
            Some(q) => match q.find('"') {
                Some(end) => (&q[..end], &q[end + 1..]),
                None => (q, ""),
            },
            None => match after.find(' ') {
                Some(sp) => (&after[..sp], &after[sp..]),
                None => (after, ""),
            },
        };
        out.insert(key, value.to_string());
        rest = next.trim_start();
    }
    out
}

/// Parses a `roam::stats` log line of `process`; None for other lines and status lines.
pub fn parse(process: &str, line: &str) -> Option<Hop> {
    let body = &line[line.find("roam::stats: ")? + "roam::stats: ".len()..];
    let (kind, rest) = body.split_once(' ')?;
    let f = fields(rest);
    let of = match kind {
        "link" => f.get("peer")?,
        "export" | "import" => f.get("topic")?,
        _ => return None,
    };
    let ages = f
        .iter()
        .filter(|(k, _)| k.ends_with("_age_us"))
        .filter_map(|(k, v)| Some((k.clone(), Ages::parse(v)?)))
        .collect();
    Some(Hop {
        process: process.to_string(),
        kind: kind.to_string(),
        of: of.clone(),
        ages,
        path: f.get("path").map(|p| numbers(p)).unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_lines_roam_writes() {
        let link = "2026-11-23T03:05:00.529790Z  INFO roam::stats: link peer=r1 kind=\"quic\" frames_in=1016 dropped_stale=0 data_age_us=\"n 1004 mean 520 std 884 min 169 p50 296 p90 488 p99 4992 max 8437\"";
        let h = parse("proxy-a", link).unwrap();
        assert_eq!((h.kind.as_str(), h.of.as_str()), ("link", "r1"));
        let a = &h.ages["data_age_us"];
        assert_eq!((a.n, a.p50, a.max), (1004.0, 296.0, 8437.0));
        assert!(h.path.is_empty());
        let quic = "x INFO roam::stats: link peer=proxy-a kind=\"quic\" closed=true path=\"rtt_us 70210 cwnd 1048576 sent_packets 9000 lost_packets 12 congestion_events 3\" data_age_us=\"n 1 mean 5 std 0 min 5 p50 5 p90 5 p99 5 max 5\"";
        let h = parse("r1", quic).unwrap();
        assert_eq!(h.path["lost_packets"], 12.0);
        assert_eq!(h.path["rtt_us"], 70210.0);
        assert_eq!(h.ages.len(), 1);
        let tcp = "x INFO roam::stats: link peer=proxy-a kind=\"tcp\" path=\"-\" data_age_us=\"n 1 mean 5 std 0 min 5 p50 5 p90 5 p99 5 max 5\"";
        assert!(parse("r1", tcp).unwrap().path.is_empty());
        let import = "x INFO roam::stats: import topic=rt/t samples=1001 refused=0 failed=0 opened_age_us=\"n 1001 mean 540 std 890 min 179 p50 312 p90 528 p99 4992 max 8462\" written_age_us=\"n 1001 mean 550 std 894 min 185 p50 328 p90 528 p99 4992 max 8480\"";
        let h = parse("proxy-b", import).unwrap();
        assert_eq!(h.of, "rt/t");
        assert_eq!(h.ages["written_age_us"].mean, 550.0);
        assert_eq!(h.ages.len(), 2);
        assert!(parse("r1", "x INFO roam::stats: status names=4 data_in=2").is_none());
        assert!(parse("r1", "x WARN roam: something else").is_none());
        assert!(parse("r1", "x INFO roam::stats: link kind=quic").is_none());
    }
}
