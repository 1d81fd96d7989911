//! The `roam` subcommands. Each file holds one command; this one holds the argument types.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub mod demo;
pub mod demo_ros;
pub mod endpoint;
pub mod name;
pub mod pki;
pub mod proxy;
pub mod realm;
pub mod router;

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
    /// Create and manage realm files (the shared secret of a trust group).
    #[command(subcommand)]
    Realm(realm::RealmCommand),
    /// Print the 256-bit name (64 hex digits) of a topic in a realm.
    Name(name::NameArgs),
    /// Publish messages on a topic through a router (stdin lines, or generated payloads).
    Pub(endpoint::PubArgs),
    /// Subscribe to a topic through a router and print one line per message.
    Sub(endpoint::SubArgs),
    /// Run the demo: two isolated ROS 2 networks exchange a topic through proxies and a router
    /// (with --routing-only: three routers in a chain, a publisher and a subscriber).
    Demo(demo::DemoArgs),
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
    /// The ROS 2 topic name, e.g. /chatter.
    pub topic: String,
    /// The ROS 2 type name, e.g. std_msgs/msg/String (must match on both sides).
    #[arg(long = "type", short = 't', value_name = "TYPE")]
    pub type_name: String,
    /// Realm file (from `roam realm new`).
    #[arg(long, value_name = "FILE")]
    pub realm: PathBuf,
    /// Instance tag, to run the same topic separately per deployment (e.g. per robot).
    #[arg(long, default_value = "")]
    pub instance: String,
    /// Whether the name is a topic or a service.
    #[arg(long, value_enum, default_value_t = KindArg::Topic)]
    pub kind: KindArg,
}

impl TopicArgs {
    pub fn descriptor(&self) -> roam_proto::TopicDescriptor {
        roam_proto::TopicDescriptor {
            topic: self.topic.clone(),
            type_name: self.type_name.clone(),
            kind: self.kind.into(),
            instance: self.instance.clone(),
        }
    }
}

/// How a client reaches its router.
#[derive(Debug, Clone, Args)]
pub struct ConnectArgs {
    /// The router to connect to: quic://HOST:PORT, tcp://HOST:PORT, or HOST:PORT (QUIC).
    #[arg(long, value_name = "ADDR")]
    pub connect: String,
    /// PKI directory with ca.pem and this identity's NAME.pem / NAME.key.
    #[arg(long, value_name = "DIR")]
    pub pki: PathBuf,
    /// This program's identity name in the PKI directory.
    #[arg(long, value_name = "NAME")]
    pub id: String,
}

pub type CmdResult = Result<(), String>;

pub async fn run(cli: Cli) -> CmdResult {
    match cli.command {
        Command::Router(a) => router::run(a).await,
        Command::Proxy(a) => proxy::run(a).await,
        Command::Pki(c) => pki::run(c),
        Command::Realm(c) => realm::run(c),
        Command::Name(a) => name::run(a),
        Command::Pub(a) => endpoint::run_pub(a).await,
        Command::Sub(a) => endpoint::run_sub(a).await,
        Command::Demo(a) => demo::run(a).await,
    }
}
