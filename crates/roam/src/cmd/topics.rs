//! `roam topics`: list a realm, like `ros2 topic list -t`, from its directory (what every
//! proxy and gateway of the realm announces it offers and imports).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use roam_edge::directory::{DirectoryView, Listed, Listing, DIRECTORY_PERIOD};
use serde::Serialize;

use super::connect::{client_config, client_edge, ClientEdge};
use super::{CmdResult, ConnectArgs};

/// After the first entry, how much longer than one period to listen so every member's
/// repeat has arrived (members announce at once when someone starts listening, and every
/// period anyway).
const SETTLE_MARGIN: Duration = Duration::from_millis(500);

#[derive(Debug, Args)]
pub struct TopicsArgs {
    /// Realm file (from `roam realm new`).
    #[arg(long, value_name = "FILE")]
    pub realm: PathBuf,
    #[command(flatten)]
    pub conn: ConnectArgs,
    /// Wait at most this many seconds for the realm's members to be heard. Once the first
    /// one is, it listens one more announce period (2 s) so every member is heard, then
    /// prints.
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
    pub wait: f64,
    /// Also say who offers and who imports each topic (with its QoS), and list services and
    /// actions, in sections.
    #[arg(short, long)]
    pub verbose: bool,
    /// Print one JSON document: the realm, its members, and every topic, service and action
    /// with its types and who offers and imports it (with QoS).
    #[arg(long)]
    pub json: bool,
    /// Keep listening and print the listing again each time it changes (a member comes,
    /// changes, leaves or falls silent), until stopped (Ctrl-C, SIGTERM).
    #[arg(long)]
    pub watch: bool,
}

/// What `--json` prints.
#[derive(Serialize)]
struct JsonListing<'a> {
    realm: &'a str,
    #[serde(flatten)]
    listing: &'a Listing,
}

pub async fn run(a: TopicsArgs) -> CmdResult {
    let mut stop = super::signals::Stop::install()?;
    let wait = Duration::try_from_secs_f64(a.wait)
        .map_err(|_| format!("--wait {}: a number of seconds, 0 or more", a.wait))?;
    let realm = Arc::new(roam_edge::realm::load(&a.realm)?);
    let ClientEdge {
        edge, connected, ..
    } = client_edge(
        client_config(&a.conn)?,
        &a.conn.id,
        "listening through",
        None,
    )?;
    let view = edge.directory_view(realm.clone()).await;
    let heard = tokio::select! {
        heard = settle(&view, Instant::now() + wait) => heard,
        sig = stop.wait() => {
            eprintln!("{sig}: stopping");
            return Ok(());
        }
    };
    if !heard {
        if !*connected.borrow() {
            return Err(format!(
                "no connection to the router at {} within {} s",
                a.conn.connect, a.wait
            ));
        }
        eprintln!(
            "no member of realm {} was heard within {} s: no proxy or gateway of the realm is \
             linked to this router's network, or --wait is shorter than their announce period",
            realm.label, a.wait
        );
    }
    let mut progress = view.progress();
    let mut version = progress.borrow_and_update().version;
    print(&a, &realm.label, &view.listing())?;
    if !a.watch {
        return Ok(());
    }
    loop {
        tokio::select! {
            changed = progress.changed() => {
                if changed.is_err() {
                    return Err("the client session ended".into());
                }
            }
            sig = stop.wait() => {
                eprintln!("{sig}: stopping");
                return Ok(());
            }
        }
        let now = progress.borrow_and_update().version;
        if now != version {
            version = now;
            if !a.json {
                println!();
            }
            print(&a, &realm.label, &view.listing())?;
        }
    }
}

/// Waits for the first member to be heard (until `deadline`), then one announce period more
/// (bounded by `deadline` too); whether anyone was heard.
async fn settle(view: &DirectoryView, deadline: Instant) -> bool {
    let mut progress = view.progress();
    let first = tokio::time::timeout_at(deadline.into(), progress.wait_for(|p| p.heard > 0));
    if !matches!(first.await, Ok(Ok(_))) {
        return false;
    }
    let until = (Instant::now() + DIRECTORY_PERIOD + SETTLE_MARGIN).min(deadline);
    tokio::time::sleep_until(until.into()).await;
    true
}

fn print(a: &TopicsArgs, realm: &str, listing: &Listing) -> CmdResult {
    let text = if a.json {
        let doc = JsonListing { realm, listing };
        let mut s = serde_json::to_string(&doc).map_err(|e| format!("JSON: {e}"))?;
        s.push('\n');
        s
    } else if a.verbose {
        verbose(listing)
    } else {
        listing.topics.iter().map(|t| line(t) + "\n").collect()
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| format!("cannot write the listing: {e}"))
}

/// `NAME [TYPE, ...]`, as `ros2 topic list -t` prints a topic.
fn line(t: &Listed) -> String {
    format!("{} [{}]", t.name, t.types.join(", "))
}

/// Topics, services and actions in sections, each with who offers and imports it.
fn verbose(listing: &Listing) -> String {
    let mut out = String::new();
    for (title, list) in [
        ("Topics", &listing.topics),
        ("Services", &listing.services),
        ("Actions", &listing.actions),
    ] {
        out += &format!("{title}:\n");
        if list.is_empty() {
            out += "  (none)\n";
        }
        for t in list {
            out += &format!(" * {}\n", line(t));
            for (how, parties) in [
                ("offered by", &t.offered_by),
                ("imported by", &t.imported_by),
            ] {
                for p in parties {
                    out += &format!("     {how} {}", p.member);
                    // A member's own types only when they disagree.
                    if t.types.len() > 1 {
                        out += &format!(" [{}]", p.types.join(", "));
                    }
                    let qos: Vec<String> = p.qos.iter().map(ToString::to_string).collect();
                    if !qos.is_empty() {
                        out += &format!(" ({})", qos.join("; "));
                    }
                    out.push('\n');
                }
            }
        }
    }
    out += &format!("Members: {}\n", listing.members.join(", "));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use roam_edge::directory::{Party, QosSummary};

    fn listing() -> Listing {
        let party = |m: &str, ty: &str, qos: Vec<QosSummary>| Party {
            member: m.into(),
            types: vec![ty.into()],
            qos,
        };
        let reliable = QosSummary {
            reliable: true,
            transient_local: false,
            depth: 10,
        };
        Listing {
            members: vec!["base".into(), "robot".into()],
            topics: vec![
                Listed {
                    name: "/chatter".into(),
                    types: vec!["std_msgs/msg/String".into()],
                    offered_by: vec![party("robot", "std_msgs/msg/String", vec![reliable])],
                    imported_by: vec![Party {
                        member: "base".into(),
                        types: vec![],
                        qos: vec![],
                    }],
                },
                Listed {
                    name: "/mixed".into(),
                    types: vec!["a/msg/A".into(), "b/msg/B".into()],
                    offered_by: vec![
                        party("base", "a/msg/A", vec![]),
                        party("robot", "b/msg/B", vec![]),
                    ],
                    imported_by: vec![],
                },
            ],
            services: vec![],
            actions: vec![],
        }
    }

    #[test]
    fn plain_lines_are_those_of_ros2_topic_list_t() {
        let l = listing();
        let lines: Vec<String> = l.topics.iter().map(line).collect();
        assert_eq!(
            lines,
            [
                "/chatter [std_msgs/msg/String]",
                "/mixed [a/msg/A, b/msg/B]"
            ]
        );
    }

    #[test]
    fn verbose_says_who_offers_and_imports_each_with_qos_and_mismatched_types() {
        let text = verbose(&listing());
        assert_eq!(
            text,
            "Topics:\n \
             * /chatter [std_msgs/msg/String]\n     \
             offered by robot (reliable, volatile, depth 10)\n     \
             imported by base\n \
             * /mixed [a/msg/A, b/msg/B]\n     \
             offered by base [a/msg/A]\n     \
             offered by robot [b/msg/B]\n\
             Services:\n  (none)\n\
             Actions:\n  (none)\n\
             Members: base, robot\n"
        );
    }

    #[test]
    fn json_names_the_realm_and_everything_listed() {
        let l = listing();
        let v: serde_json::Value = serde_json::from_str(
            &serde_json::to_string(&JsonListing {
                realm: "warehouse",
                listing: &l,
            })
            .unwrap(),
        )
        .unwrap();
        assert_eq!(v["realm"], "warehouse");
        assert_eq!(v["topics"][0]["name"], "/chatter");
        assert_eq!(v["topics"][0]["offered_by"][0]["qos"][0]["depth"], 10);
        assert_eq!(v["topics"][0]["imported_by"][0]["member"], "base");
        assert_eq!(v["services"], serde_json::json!([]));
    }
}
