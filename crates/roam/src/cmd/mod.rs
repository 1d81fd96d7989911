//! The `roam` subcommands. Each file holds one command; this one holds the argument types.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub mod child;
pub mod connect;
pub mod dashboard;
pub mod demo;
pub mod demo_ros;
pub mod endpoint;
pub mod fleet;
pub mod gateway;
pub mod json;
pub mod mqtt;
pub mod name;
pub mod pki;
pub mod proxy;
pub mod realm;
pub mod record;
pub mod router;
pub mod signals;
pub mod top;
pub mod topics;

/// roam: secure global connectivity for ROS 2.
///
/// Routers forward sealed envelopes by opaque 256-bit names; only members of a topic's realm
/// can name, read or write it. Logs go to stderr (set RUST_LOG=debug for more).
#[derive(Debug, Parser)]
#[command(name = "roam", version, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a router: accept links, dial peers, forward envelopes by name.
    Router(router::RouterArgs),
    /// Run a ROS 2 proxy: a DDS participant with its own edge router that exports and imports
    /// the topics its configuration names.
    Proxy(proxy::ProxyArgs),
    /// Manage the deployment's certificate authority and identities.
    #[command(subcommand)]
    Pki(pki::PkiCommand),
    /// Create and manage realm files (the shared secret of a trust group), and start a
    /// realm's next epoch (re-key it while it runs).
    #[command(subcommand)]
    Realm(realm::RealmCommand),
    /// Remove a member from the whole fleet (revoke it, re-key its realms without it), or
    /// show each member's epoch and whether it answers.
    #[command(subcommand)]
    Fleet(fleet::FleetCommand),
    /// Print the 256-bit name (64 hex digits) of a topic in a realm.
    Name(name::NameArgs),
    /// Publish messages on a topic through a router (stdin lines, or generated payloads).
    Pub(endpoint::PubArgs),
    /// Subscribe to a topic through a router and print one line per message.
    Sub(endpoint::SubArgs),
    /// List a realm's topics with their types (like `ros2 topic list -t`), services and
    /// actions, and who offers and imports each, from its directory.
    Topics(topics::TopicsArgs),
    /// Record realm topics to an MCAP file (ros2msg schemas, CDR messages), readable by
    /// Foxglove, the mcap tools and rosbags; no ROS install needed.
    Record(record::RecordArgs),
    /// Show every topic of a realm live (rate, bandwidth, sizes, ages, drops per member),
    /// and each member's CPU, memory and links, from the metrics members seal to the realm.
    Top(top::TopArgs),
    /// Serve a realm's live dashboard (topology, links, every topic with sparklines) to a
    /// browser, from the metrics members seal to the realm.
    Dashboard(dashboard::DashboardArgs),
    /// Run a gateway: programs outside ROS reach the realm's topics, services and actions
    /// through rosbridge v2 (roslibpy, roslibjs), Foxglove WebSocket and gRPC doors, over TLS if
    /// asked, with tokens or client certificates and allow lists.
    Gateway(gateway::GatewayArgs),
    /// Run an MQTT bridge in place of mqtt_client: its parameter file, its topics and
    /// payloads on the broker (CDR with type messages, primitive, JSON), on one DDS domain.
    Mqtt(mqtt::MqttArgs),
    /// Run the demo: two isolated ROS 2 networks exchange a topic through proxies and a router
    /// (with --routing-only: three routers in a chain, a publisher and a subscriber).
    Demo(demo::DemoArgs),
    /// Internal to `roam demo`: run PROGRAM so that it dies with process PARENT.
    #[command(hide = true)]
    ChildOf(child::ChildOfArgs),
}

impl Cli {
    /// How many async worker threads to start, given `TOKIO_WORKER_THREADS` (`env`): the
    /// command's `--worker-threads` first, then its file's `worker_threads:`, then the
    /// variable (None: tokio reads it), then the command's own default, where it knows better
    /// than one per core.
    ///
    /// A proxy and a router run on one by default. Their work per message is a chain of
    /// short hand-offs between tasks (QUIC endpoint and connection drivers, stream reader,
    /// routing, lane writer); tokio runs at most three of a chain in a row on one worker and
    /// then wakes a sleeping worker for the next, so with two, every message forwarded cost a
    /// futex wake and a switch to the other worker, which on a small machine shares the core.
    /// In the lab an 8 KiB echo through two proxies took a median 309 µs against 390 µs with a
    /// worker per core, and an 8 B echo through a router 202-246 µs against 255-284 µs with
    /// the router's CPU per round trip 50-67 against 93-105 µs; 1000-byte samples flowed as
    /// fast either way. A router's routing runs on one task whatever the count; more workers
    /// spread only its links' QUIC work, for a router with many busy links on many cores.
    pub fn worker_threads(&self, env: Option<&std::ffi::OsStr>) -> Option<usize> {
        let (flag, file) = match &self.command {
            Command::Proxy(a) => (a.worker_threads, Some(a.config.as_path())),
            Command::Router(a) => (a.worker_threads, a.config.as_deref()),
            _ => return None,
        };
        let asked = flag
            .map(usize::from)
            .or_else(|| file.and_then(roam_config::router::worker_threads_in));
        match (asked, env) {
            (Some(n), _) => Some(n),
            (None, Some(_)) => None,
            (None, None) => Some(1),
        }
    }
}

/// Whether a name stands for a topic or a service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KindArg {
    Topic,
    Service,
}

impl From<KindArg> for roam_proto::Kind {
    fn from(k: KindArg) -> Self {
        match k {
            KindArg::Topic => roam_proto::Kind::Topic,
            KindArg::Service => roam_proto::Kind::Service,
        }
    }
}

/// What identifies a topic inside a realm.
#[derive(Debug, Clone, Args)]
pub struct TopicArgs {
    /// The ROS 2 topic name, e.g. /chatter (a relative name such as chatter is /chatter);
    /// dds:NAME for a raw DDS topic a proxy forwards with `dds_topic:`.
    pub topic: String,
    /// The ROS 2 type name, e.g. std_msgs/msg/String (std_msgs/String is taken as
    /// std_msgs/msg/String; the proxy names topics by the full form); for dds:NAME, the DDS
    /// type name.
    #[arg(long = "type", short = 't', value_name = "TYPE")]
    pub type_name: String,
    /// Realm file (from `roam realm new`).
    #[arg(long, value_name = "FILE")]
    pub realm: PathBuf,
}

/// A topic as the edge layer names it: the realm-side topic and the DDS type name.
pub struct ResolvedTopic {
    pub topic: String,
    pub dds_type: String,
}

impl TopicArgs {
    /// The topic and type in their full form, checked the way the proxy checks them.
    pub fn resolve(&self) -> Result<ResolvedTopic, String> {
        let d = descriptor(&self.topic, &self.type_name, KindArg::Topic, "")?;
        let dds_type = if d.topic.starts_with("dds:") {
            self.type_name.clone()
        } else {
            roam_edge::ros_names::type_to_dds(&d.type_name)
        };
        Ok(ResolvedTopic {
            topic: d.topic,
            dds_type,
        })
    }
}

/// A topic's descriptor from what a user typed, with the name and type checked and written
/// the way the proxy writes them, so the same topic always gets the same name: `chatter` is
/// `/chatter`, `std_msgs/String` is `std_msgs/msg/String`. A note on stderr says so when the
/// spelling changed. `dds:NAME` is a raw DDS topic (a proxy's `dds_topic:`), whose type is
/// its DDS type name.
pub fn descriptor(
    topic: &str,
    type_name: &str,
    kind: KindArg,
    instance: &str,
) -> Result<roam_proto::TopicDescriptor, String> {
    use roam_edge::ros_names::{full_name, full_type, type_from_dds};
    let (topic, type_name) = if let Some(dds) = topic.strip_prefix("dds:") {
        if dds.is_empty() || dds.contains(char::is_whitespace) {
            return Err(format!(
                "{topic:?}: a DDS topic name is non-empty and has no spaces (e.g. dds:DDSPerfRDataKS)"
            ));
        }
        if type_name.is_empty() || type_name.contains(char::is_whitespace) {
            return Err(format!(
                "--type {type_name:?}: a DDS type name is non-empty and has no spaces"
            ));
        }
        (topic.to_string(), type_from_dds(type_name))
    } else {
        let full = full_name(topic).map_err(|e| format!("topic: {e}"))?;
        if full.was_relative {
            eprintln!(
                "note: topic {topic:?} is {} (relative names resolve against /, as for a node without a namespace)",
                full.name
            );
        }
        let ty =
            full_type(type_name, kind == KindArg::Service).map_err(|e| format!("type: {e}"))?;
        if ty != type_name {
            eprintln!("note: type {type_name} is {ty}");
        }
        (full.name, ty)
    };
    Ok(roam_proto::TopicDescriptor {
        topic,
        type_name,
        kind: kind.into(),
        instance: instance.to_string(),
    })
}

/// How a client reaches its router.
#[derive(Debug, Clone, Args)]
pub struct ConnectArgs {
    /// The router to connect to: quic://HOST:PORT, tcp://HOST:PORT, or HOST:PORT (QUIC).
    /// It says when it connects, and why an attempt failed; it retries by itself.
    #[arg(long, value_name = "ADDR")]
    pub connect: String,
    /// PKI directory with ca.pem and this identity's NAME.pem / NAME.key.
    #[arg(long, value_name = "DIR")]
    pub pki: PathBuf,
    /// This program's identity name in the PKI directory.
    #[arg(long, value_name = "NAME")]
    pub id: String,
    /// Largest message this program sends or accepts, in bytes [default: as a router's
    /// link.max_message_bytes, 128 MiB]. A larger message is refused before it is sent;
    /// every hop (routers, proxies, the other end) must allow it too.
    #[arg(long, value_name = "BYTES")]
    pub max_message_bytes: Option<usize>,
}

pub type CmdResult = Result<(), String>;

pub async fn run(cli: Cli) -> CmdResult {
    match cli.command {
        Command::Router(a) => router::run(a).await,
        Command::Proxy(a) => proxy::run(a).await,
        Command::Pki(c) => pki::run(c).await,
        Command::Realm(c) => realm::run(c).await,
        Command::Fleet(c) => fleet::run(c).await,
        Command::Name(a) => name::run(a),
        Command::Pub(a) => endpoint::run_pub(a).await,
        Command::Sub(a) => endpoint::run_sub(a).await,
        Command::Record(a) => record::run(a).await,
        Command::Dashboard(a) => dashboard::run(a).await,
        Command::Top(a) => top::run(a).await,
        Command::Topics(a) => topics::run(a).await,
        Command::Gateway(a) => gateway::run(a).await,
        Command::Mqtt(a) => mqtt::run(a).await,
        Command::Demo(a) => demo::run(a).await,
        Command::ChildOf(a) => child::run(a),
    }
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::Parser;
    use std::ffi::OsStr;

    fn threads(args: &[&str], env: Option<&str>) -> Option<usize> {
        let cli = Cli::try_parse_from(args).expect("arguments parse");
        cli.worker_threads(env.map(OsStr::new))
    }

    #[test]
    fn proxies_and_routers_run_on_one_worker_unless_told() {
        assert_eq!(threads(&["roam", "router"], None), Some(1));
        assert_eq!(threads(&["roam", "proxy", "-c", "p.yaml"], None), Some(1));
        // The variable is tokio's to read; the flag wins over it.
        assert_eq!(threads(&["roam", "router"], Some("4")), None);
        let flag = ["roam", "router", "--worker-threads", "3"];
        assert_eq!(threads(&flag, Some("4")), Some(3));
        let flag = ["roam", "proxy", "-c", "p.yaml", "--worker-threads", "2"];
        assert_eq!(threads(&flag, None), Some(2));
        // Other commands keep a worker per core.
        assert_eq!(threads(&["roam", "pki", "init", "--dir", "d"], None), None);
    }

    #[test]
    fn a_file_asks_for_workers_below_the_flag_and_above_the_variable() {
        let dir = std::env::temp_dir().join(format!("roam-cli-threads-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch directory");
        let file = dir.join("r.yaml");
        std::fs::write(&file, "id: r1\nworker_threads: 4\n").expect("write the file");
        let f = file.to_str().expect("a UTF-8 path");
        assert_eq!(threads(&["roam", "router", "-c", f], None), Some(4));
        assert_eq!(threads(&["roam", "router", "-c", f], Some("2")), Some(4));
        assert_eq!(threads(&["roam", "proxy", "-c", f], None), Some(4));
        let flag = ["roam", "router", "-c", f, "--worker-threads", "3"];
        assert_eq!(threads(&flag, None), Some(3));
        std::fs::remove_dir_all(&dir).expect("remove the scratch directory");
    }

    #[test]
    fn zero_worker_threads_is_refused() {
        let err = Cli::try_parse_from(["roam", "router", "--worker-threads", "0"]);
        assert!(err.is_err());
    }
}
