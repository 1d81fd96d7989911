//! `roam record`: realm topics into an MCAP file (like `ros2 bag record -s mcap`), from any
//! machine linked to the realm: no DDS and no ROS install needed. Each topic's type comes from
//! the realm's directory (or `TOPIC:TYPE`), its definition from this machine or from the
//! member that announces it; the file holds them as `ros2msg` schemas (see
//! [`roam_edge::recording`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use roam_edge::directory::DirectoryView;
use roam_edge::ros_names::type_to_dds;
use roam_edge::{Edge, Event, Realm, SubscriberOptions, TopicRef};
use tokio::sync::mpsc;

use super::connect::{client_config, client_edge, ClientEdge};
use super::{CmdResult, ConnectArgs};
use roam_edge::recording::{HoldLimits, Recorder, Sample};

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Topics to record: /NAME (its type from the realm's directory) or /NAME:pkg/msg/Type.
    pub topics: Vec<String>,
    /// Record every topic the realm's directory lists, and those that appear later.
    #[arg(long)]
    pub all: bool,
    /// The MCAP file to write (replaced if it exists).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// Realm file (from `roam realm new`).
    #[arg(long, value_name = "FILE")]
    pub realm: PathBuf,
    #[command(flatten)]
    pub conn: ConnectArgs,
    /// Stop after this many seconds (default: until Ctrl-C or SIGTERM).
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// Stop after this many messages in all.
    #[arg(long)]
    pub count: Option<u64>,
    #[command(flatten)]
    pub definitions: super::json::DefinitionArgs,
}

/// What topic tasks hand the writer.
enum Item {
    Definition {
        topic: String,
        dds_type: String,
        text: String,
    },
    Message {
        topic: String,
        dds_type: String,
        log: u64,
        publish: u64,
        cdr: Vec<u8>,
    },
}

/// How often the directory is looked at for topics (with `--all`, or types not yet listed).
const LOOK_EVERY: Duration = Duration::from_millis(500);

pub async fn run(a: RecordArgs) -> CmdResult {
    let mut stop = super::signals::Stop::install()?;
    if a.topics.is_empty() && !a.all {
        return Err("name the topics to record (/NAME or /NAME:pkg/msg/Type), or --all".into());
    }
    let mut wanted = Vec::new();
    for t in &a.topics {
        let (name, ty) = match t.split_once(':') {
            Some((n, ty)) => (n, Some(ty)),
            None => (t.as_str(), None),
        };
        let name = roam_edge::ros_names::full_name(name)
            .map_err(|e| format!("{t}: {e}"))?
            .name;
        let ty = ty
            .map(|ty| roam_edge::ros_names::full_type(ty, false).map_err(|e| format!("{t}: {e}")))
            .transpose()?
            .map(|ty| type_to_dds(&ty));
        wanted.push((name, ty));
    }
    let realm = Arc::new(roam_edge::realm::load(&a.realm)?);
    let source = a.definitions.source()?;
    let file = std::fs::File::create(&a.output)
        .map_err(|e| format!("cannot create {}: {e}", a.output.display()))?;
    let limits = HoldLimits {
        wait: a.definitions.wait(),
        ..HoldLimits::default()
    };
    let mut recorder = Recorder::new(std::io::BufWriter::new(file), limits)
        .map_err(|e| format!("{}: {e}", a.output.display()))?;
    let ClientEdge { edge, .. } = client_edge(
        client_config(&a.conn)?,
        &a.conn.id,
        "recording through",
        None,
    )?;
    let view = edge.directory_view(realm.clone()).await;

    let (tx, mut rx) = mpsc::channel::<Item>(1024);
    let mut started: std::collections::HashMap<String, tokio::task::JoinHandle<()>> =
        Default::default();
    let deadline = a
        .duration
        .map(|s| tokio::time::Instant::now() + Duration::from_secs_f64(s.clamp(0.0, 1e9)));
    let mut look = tokio::time::interval(LOOK_EVERY);
    let mut total = 0u64;
    let why = 'run: loop {
        tokio::select! {
            _ = look.tick() => {
                for (topic, dds_type) in to_start(&wanted, a.all, &view) {
                    if started.contains_key(&topic) {
                        continue;
                    }
                    eprintln!("recording {topic} ({})", roam_edge::ros_names::type_from_dds(&dds_type));
                    if let Some((_, text)) = super::json::local_codec(&source, &dds_type).await {
                        if let Err(e) = recorder.definition(&topic, &dds_type, &text) {
                            break 'run e.to_string();
                        }
                    }
                    let task = tokio::spawn(follow(edge.clone(), realm.clone(), topic.clone(), dds_type, tx.clone()));
                    started.insert(topic, task);
                }
                match recorder.expire(Instant::now()) {
                    Ok(gone) => for g in gone {
                        eprintln!(
                            "{}: no definition of {} within {:?} (none on this machine, none announced): recording it without a schema ({} messages so far)",
                            g.topic, g.dds_type, limits.wait, g.messages
                        );
                    },
                    Err(e) => break e.to_string(),
                }
            }
            item = rx.recv() => {
                let Some(item) = item else { break "the client session ended".to_string() };
                let r = match item {
                    Item::Definition { topic, dds_type, text } => recorder.definition(&topic, &dds_type, &text),
                    Item::Message { topic, dds_type, log, publish, cdr } => {
                        total += 1;
                        recorder.message(&topic, &dds_type, Sample { log_time_ns: log, publish_time_ns: publish, cdr: &cdr }, Instant::now())
                    }
                };
                if let Err(e) = r {
                    break e.to_string();
                }
                if a.count.is_some_and(|n| total >= n) {
                    break String::new();
                }
            }
            _ = async { match deadline { Some(d) => tokio::time::sleep_until(d).await, None => std::future::pending().await } } => {
                break String::new();
            }
            sig = stop.wait() => {
                eprintln!("{sig}: stopping");
                break String::new();
            }
        }
    };
    for (_, t) in started {
        t.abort();
    }
    let stats = recorder
        .finish()
        .map_err(|e| format!("{}: {e}", a.output.display()))?;
    eprintln!(
        "recorded {} messages ({} bytes) to {}{}",
        stats.messages,
        stats.bytes,
        a.output.display(),
        if stats.dropped_waiting > 0 {
            format!(
                "; {} dropped while waiting for a definition",
                stats.dropped_waiting
            )
        } else {
            String::new()
        }
    );
    if why.is_empty() {
        Ok(())
    } else {
        Err(why)
    }
}

/// The topics to follow now, with their DDS types: the named ones whose type is known (given,
/// or listed: the directory lists ROS names, `pkg/msg/Type`), and with `all` every listed
/// topic.
fn to_start(
    wanted: &[(String, Option<String>)],
    all: bool,
    view: &DirectoryView,
) -> Vec<(String, String)> {
    let listing = view.listing();
    let listed = |name: &str| {
        listing
            .topics
            .iter()
            .find(|t| t.name == name)
            .and_then(|t| t.types.first().map(|ty| type_to_dds(ty)))
    };
    let mut out: Vec<(String, String)> = wanted
        .iter()
        .filter_map(|(name, ty)| Some((name.clone(), ty.clone().or_else(|| listed(name))?)))
        .collect();
    if all {
        for t in &listing.topics {
            if let Some(ty) = t.types.first() {
                if !out.iter().any(|(n, _)| *n == t.name) {
                    out.push((t.name.clone(), type_to_dds(ty)));
                }
            }
        }
    }
    out
}

/// Follows one topic: its definition when announced, and every message.
async fn follow(
    edge: Edge,
    realm: Arc<Realm>,
    topic: String,
    dds_type: String,
    tx: mpsc::Sender<Item>,
) {
    let options = SubscriberOptions {
        dds_type: Some(dds_type.clone()),
        ..SubscriberOptions::default()
    };
    let mut sub = edge
        .subscriber(&TopicRef::new(realm, topic.clone()), options)
        .await;
    let mut told = false;
    loop {
        let mut buf = Vec::new();
        let Some(ev) = sub.recv(&mut buf).await else {
            return;
        };
        if !told {
            if let Some(text) = sub.definition(&dds_type) {
                told = true;
                let item = Item::Definition {
                    topic: topic.clone(),
                    dds_type: dds_type.clone(),
                    text: text.to_string(),
                };
                if tx.send(item).await.is_err() {
                    return;
                }
            }
        }
        if let Event::Message(r) = ev {
            if r.kind != roam_edge::PayloadKind::Data {
                continue;
            }
            let item = Item::Message {
                topic: topic.clone(),
                dds_type: dds_type.clone(),
                log: unix_ns(),
                // The publisher's source timestamp when the envelope carries one (a DDS
                // sample's, as rosbag2 records it), else the sealer's send time.
                publish: r
                    .source_time_ns
                    .unwrap_or_else(|| r.header.send_time_us.saturating_mul(1000)),
                cdr: buf,
            };
            if tx.send(item).await.is_err() {
                return;
            }
        }
    }
}

fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}
