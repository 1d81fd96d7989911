//! `roam top`: every topic of a realm at once, live, in a terminal (what `ros2 topic hz` and
//! `bw` give one topic at a time), from the snapshots every member seals on the realm's
//! metrics name ([`roam_edge::metrics::realm`]): per member and topic the message rate,
//! bandwidth, mean and largest size, age percentiles at that hop and drops; per member its CPU
//! and memory and its links' round-trip times.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use roam_edge::metrics::rates::{History, RealmRates};
use roam_edge::metrics::Direction;

use super::connect::{client_config, client_edge, ClientEdge};
use super::{CmdResult, ConnectArgs};

#[derive(Debug, Args)]
pub struct TopArgs {
    /// Realm file (from `roam realm new`).
    #[arg(long, value_name = "FILE")]
    pub realm: PathBuf,
    #[command(flatten)]
    pub conn: ConnectArgs,
    /// Seconds between refreshes.
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0)]
    pub interval: f64,
    /// Print one table (rates over one interval, once every member heard has been heard
    /// twice) and exit, instead of refreshing the screen.
    #[arg(long)]
    pub once: bool,
    /// Give up after this many seconds when no member is heard.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub wait: f64,
}

pub async fn run(a: TopArgs) -> CmdResult {
    let mut stop = super::signals::Stop::install()?;
    let interval = Duration::try_from_secs_f64(a.interval)
        .ok()
        .filter(|d| *d >= Duration::from_millis(100))
        .ok_or_else(|| format!("--interval {}: at least 0.1 seconds", a.interval))?;
    let wait = Duration::try_from_secs_f64(a.wait)
        .map_err(|_| format!("--wait {}: a number of seconds", a.wait))?;
    let realm = Arc::new(roam_edge::realm::load(&a.realm)?);
    let ClientEdge { edge, .. } = client_edge(
        client_config(&a.conn)?,
        &a.conn.id,
        "watching through",
        None,
    )?;
    let view = edge.realm_metrics(realm.clone()).await;
    let mut history = History::default();
    let started = tokio::time::Instant::now();
    let mut tick = tokio::time::interval(interval);
    let tty = std::io::stdout().is_terminal() && !a.once;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            sig = stop.wait() => {
                eprintln!("{sig}: stopping");
                return Ok(());
            }
        }
        history.update(view.snapshots());
        if history.is_empty() && started.elapsed() > wait {
            return Err(format!(
                "no member of realm {} was heard within {} s (members send their metrics while someone listens; is a proxy or gateway of the realm linked to this router's network?)",
                realm.label, a.wait
            ));
        }
        if a.once && !history.all_twice() {
            continue;
        }
        let text = render(&realm.label, &history.rates());
        let mut out = std::io::stdout().lock();
        if tty {
            // Home and clear: redraw in place, as top does.
            let _ = write!(out, "\x1b[H\x1b[2J");
        }
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        if a.once {
            return Ok(());
        }
    }
}

fn si(v: f64, unit: &str) -> String {
    let (v, p) = if v >= 1e9 {
        (v / 1e9, "G")
    } else if v >= 1e6 {
        (v / 1e6, "M")
    } else if v >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    format!("{v:.1} {p}{unit}")
}

fn age(us: Option<u64>) -> String {
    match us {
        None => "-".into(),
        Some(u64::MAX) => "inf".into(),
        Some(us) if us >= 1000 => format!("{:.1} ms", us as f64 / 1000.0),
        Some(us) => format!("{us} us"),
    }
}

/// The table: members (CPU, memory, links), then every topic.
fn render(realm: &str, r: &RealmRates) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "roam top: realm {realm}, {} members", r.members.len());
    let _ = writeln!(
        s,
        "{:<20} {:<8} {:>6} {:>9}  LINKS (peer rtt)",
        "MEMBER", "KIND", "CPU%", "RSS"
    );
    for m in &r.members {
        let links: Vec<String> = r
            .links
            .iter()
            .filter(|l| l.member == m.id)
            .map(|l| format!("{} {}", l.peer, age(l.rtt_us)))
            .collect();
        let _ = writeln!(
            s,
            "{:<20} {:<8} {:>6} {:>9}  {}",
            m.id,
            format!("{:?}", m.kind).to_lowercase(),
            m.cpu_percent
                .map(|c| format!("{c:.1}"))
                .unwrap_or_else(|| "-".into()),
            m.rss_bytes
                .map(|b| si(b as f64, "B"))
                .unwrap_or_else(|| "-".into()),
            links.join(", ")
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<28} {:<3} {:<16} {:>9} {:>12} {:>9} {:>9} {:>9} {:>9} {:>6}",
        "TOPIC",
        "DIR",
        "MEMBER",
        "MSG/S",
        "BANDWIDTH",
        "MEAN",
        "MAX",
        "AGE P50",
        "AGE P99",
        "DROPS"
    );
    for t in &r.topics {
        let dir = match t.direction {
            Direction::Export => "out",
            Direction::Import => "in",
        };
        let _ = writeln!(
            s,
            "{:<28} {:<3} {:<16} {:>9.1} {:>12} {:>9} {:>9} {:>9} {:>9} {:>6}",
            t.topic,
            dir,
            t.member,
            t.msgs_per_s,
            si(t.bytes_per_s, "B/s"),
            t.mean_size
                .map(|m| si(m, "B"))
                .unwrap_or_else(|| "-".into()),
            t.max_size
                .map(|m| si(m as f64, "B"))
                .unwrap_or_else(|| "-".into()),
            age(t.age_p50_us),
            age(t.age_p99_us),
            t.drops
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_ages_read_as_people_write_them() {
        assert_eq!(si(950.0, "B"), "950.0 B");
        assert_eq!(si(12_345.0, "B/s"), "12.3 kB/s");
        assert_eq!(si(2.5e6, "B"), "2.5 MB");
        assert_eq!(age(Some(850)), "850 us");
        assert_eq!(age(Some(1500)), "1.5 ms");
        assert_eq!(age(None), "-");
        let t = render("test", &RealmRates::default());
        assert!(t.starts_with("roam top: realm test, 0 members\n"), "{t}");
        assert!(t.contains("TOPIC"), "{t}");
    }
}
