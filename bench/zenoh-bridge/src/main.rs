//! roam-zenoh-bridge: the Zenoh ROS 2 bridge as roam's performance lab runs it.
//!
//! A zenoh runtime with the `zenoh-plugin-ros2dds` plugin linked in statically, built the way
//! eclipse-zenoh's `zenoh-bridge-ros2dds` binary does it, with a small CLI of our own:
//! explicit endpoints only (multicast scouting off by default), a DDS domain, and a shared
//! TLS directory so that QUIC (and TLS) links between two bridges on one machine just work.
//! Prints "ready" on stdout once the runtime and the plugin are started; logs go to stderr.

use std::{
    fs,
    io::Write,
    net::{IpAddr, Ipv4Addr, Ipv6Addr},
    path::{Path, PathBuf},
    process::ExitCode,
};

use clap::{Parser, ValueEnum};
use zenoh::{
    config::Config,
    internal::{plugins::PluginsManager, runtime::RuntimeBuilder},
};
use zenoh_plugin_trait::Plugin;

const ABOUT: &str = "\
Zenoh ROS 2 bridge (zenoh + zenoh-plugin-ros2dds, statically linked) for roam's performance lab.

Bridges the ROS 2 topics, services and actions of one DDS domain over zenoh links to other \
bridges. Only ROS 2 endpoints announced on the `ros_discovery_info` topic are routed (that is how \
the ros2dds plugin discovers ROS nodes). CycloneDDS settings come from $CYCLONEDDS_URI as usual \
(the plugin prepends its own discovery defaults; the value you give wins). Prints \"ready\" on \
stdout once started; logs go to stderr (level from $RUST_LOG, default z=info).

Example, TCP:
  roam-zenoh-bridge --domain 51 --listen tcp/127.0.0.1:40101
  roam-zenoh-bridge --domain 52 --connect tcp/127.0.0.1:40101
Example, QUIC (both sides share the TLS directory; the first one to start fills it):
  roam-zenoh-bridge --domain 51 --listen quic/127.0.0.1:40101 --tls-dir /tmp/zb-tls
  roam-zenoh-bridge --domain 52 --connect quic/127.0.0.1:40101 --tls-dir /tmp/zb-tls";

#[derive(Parser, Debug)]
#[command(name = "roam-zenoh-bridge", version, about = ABOUT, long_about = ABOUT)]
struct Args {
    /// DDS domain (ROS_DOMAIN_ID) the bridge joins. Default: $ROS_DOMAIN_ID, else 0.
    #[arg(short, long, value_name = "N", env = "ROS_DOMAIN_ID")]
    domain: Option<u32>,

    /// Zenoh endpoint to listen on, e.g. tcp/127.0.0.1:40101 or quic/127.0.0.1:40101.
    /// Repeatable. Default: none (unlike zenohd, no implicit tcp/[::]:7447).
    #[arg(short, long, value_name = "ENDPOINT")]
    listen: Vec<String>,

    /// Zenoh endpoint to connect to, e.g. tcp/127.0.0.1:40101. Repeatable.
    #[arg(short = 'e', long, value_name = "ENDPOINT")]
    connect: Vec<String>,

    /// Zenoh session mode (zenoh-bridge-ros2dds defaults to router too).
    #[arg(short, long, value_enum, default_value_t = Mode::Router)]
    mode: Mode,

    /// ROS 2 namespace of the bridge's own node (zenoh_bridge_ros2dds); also prefixes the
    /// zenoh key expressions of routed topics. Default: "/".
    #[arg(short, long, value_name = "NS")]
    namespace: Option<String>,

    /// Disable zenoh's UDP multicast scouting (the default: the bridge only uses the
    /// --listen/--connect endpoints). Accepted for compatibility with zenoh-bridge-ros2dds.
    #[arg(long, conflicts_with = "multicast_scouting")]
    no_multicast_scouting: bool,

    /// Enable zenoh's UDP multicast scouting (224.0.0.224:7446) so bridges find each other
    /// without endpoints. Off by default.
    #[arg(long)]
    multicast_scouting: bool,

    /// Directory with the TLS material for quic/ and tls/ endpoints: ca.pem (root CA the
    /// connecting side trusts), server.pem and server-key.pem (certificate for localhost,
    /// 127.0.0.1 and ::1, signed by that CA). Missing files are generated at startup, so
    /// two bridges given the same directory trust each other. Required with quic/ or tls/.
    #[arg(long, value_name = "DIR")]
    tls_dir: Option<PathBuf>,

    /// Mutual TLS on tls/ and quic/ links: each side also presents the certificate of
    /// --tls-dir and accepts only peers whose certificate the CA signed (zenoh's
    /// `transport/link/tls/enable_mtls`), as a deployment that authenticates its bridges runs.
    #[arg(long, requires = "tls_dir")]
    mtls: bool,

    /// Generate the TLS material in DIR (as --tls-dir would, keeping what is already
    /// there), print DIR and exit.
    #[arg(long, value_name = "DIR", exclusive = true)]
    gen_tls: Option<PathBuf>,

    /// ROS 2 distribution the plugin assumes for `ros_discovery_info` (sets $ROS_DISTRO).
    /// "humble" means 24-byte GIDs; iron, jazzy and later 16. Default: $ROS_DISTRO, else
    /// the plugin assumes "iron".
    #[arg(long, value_name = "DISTRO")]
    ros_distro: Option<String>,

    /// Extra zenoh configuration file (json5, zenohd/zenoh-bridge-ros2dds format, e.g. for
    /// plugins/ros2dds/allow). Command-line flags override it.
    #[arg(short, long, value_name = "FILE")]
    config: Option<PathBuf>,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum Mode {
    Peer,
    Client,
    Router,
}

impl Mode {
    fn as_str(self) -> &'static str {
        match self {
            Mode::Peer => "peer",
            Mode::Client => "client",
            Mode::Router => "router",
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();

    if let Some(dir) = &args.gen_tls {
        return match ensure_tls_dir(dir) {
            Ok(()) => {
                println!("{}", dir.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("roam-zenoh-bridge: {e}");
                ExitCode::from(2)
            }
        };
    }

    // The plugin reads ROS_DISTRO once (lazily) from the environment: set it before any thread.
    if let Some(distro) = &args.ros_distro {
        std::env::set_var("ROS_DISTRO", distro);
    }

    let config = match build_config(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("roam-zenoh-bridge: {e}");
            return ExitCode::from(2);
        }
    };

    init_logging();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("roam-zenoh-bridge: cannot start tokio: {e}");
            return ExitCode::FAILURE;
        }
    };
    rt.block_on(run(config))
}

/// Logs to stderr, so that stdout carries only "ready".
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("z=info"));
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_thread_names(true)
        .finish();
    // The plugin tries to install zenoh's own subscriber (stdout) too; the first one wins.
    let _ = tracing::subscriber::set_global_default(subscriber);
}

fn json(v: impl serde::Serialize) -> String {
    serde_json::to_string(&v).expect("serialisable")
}

fn set(config: &mut Config, key: &str, value: String) -> Result<(), String> {
    config
        .insert_json5(key, &value)
        .map_err(|e| format!("config {key} = {value}: {e}"))
}

fn build_config(args: &Args) -> Result<Config, String> {
    let mut config = match &args.config {
        Some(path) => Config::from_file(path).map_err(|e| format!("{}: {e}", path.display()))?,
        None => Config::default(),
    };

    set(&mut config, "mode", json(args.mode.as_str()))?;
    // Explicit, possibly empty: a router left without listen endpoints would bind tcp/[::]:7447.
    set(&mut config, "listen/endpoints", json(&args.listen))?;
    set(&mut config, "connect/endpoints", json(&args.connect))?;
    set(
        &mut config,
        "scouting/multicast/enabled",
        json(args.multicast_scouting),
    )?;
    // No gossip either: a bridge that learned its peer's own locators would connect to them
    // directly and bypass whatever sits on the configured path (the lab's WAN relay).
    set(&mut config, "scouting/gossip/enabled", json(false))?;

    // As zenoh-bridge-ros2dds: timestamps on publications (the plugin's PublicationCache for
    // TRANSIENT_LOCAL topics needs them), admin space on, plugin loading on.
    set(&mut config, "timestamping/enabled", json(true))?;
    set(&mut config, "adminspace/enabled", json(true))?;
    set(&mut config, "plugins_loading/enabled", json(true))?;

    // The plugin's own section must exist for the runtime to start it.
    let domain = args.domain.unwrap_or(0);
    set(&mut config, "plugins/ros2dds/domain", json(domain))?;
    if let Some(ns) = &args.namespace {
        set(&mut config, "plugins/ros2dds/namespace", json(ns))?;
    }

    let needs_tls = args
        .listen
        .iter()
        .chain(&args.connect)
        .any(|e| e.starts_with("quic/") || e.starts_with("tls/"));
    match (&args.tls_dir, needs_tls) {
        (Some(dir), _) => {
            ensure_tls_dir(dir)?;
            let dir = fs::canonicalize(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            let path = |f: &str| json(dir.join(f).to_string_lossy());
            set(
                &mut config,
                "transport/link/tls/root_ca_certificate",
                path(CA_PEM),
            )?;
            set(
                &mut config,
                "transport/link/tls/listen_certificate",
                path(SERVER_PEM),
            )?;
            set(
                &mut config,
                "transport/link/tls/listen_private_key",
                path(SERVER_KEY_PEM),
            )?;
            if args.mtls {
                set(&mut config, "transport/link/tls/enable_mtls", json(true))?;
                set(
                    &mut config,
                    "transport/link/tls/connect_certificate",
                    path(SERVER_PEM),
                )?;
                set(
                    &mut config,
                    "transport/link/tls/connect_private_key",
                    path(SERVER_KEY_PEM),
                )?;
            }
        }
        (None, true) => {
            return Err("quic/ and tls/ endpoints need --tls-dir DIR (shared by both sides)".into())
        }
        (None, false) => {}
    }
    Ok(config)
}

async fn run(config: Config) -> ExitCode {
    tracing::info!(
        "roam-zenoh-bridge: zenoh-plugin-ros2dds {}",
        zenoh_plugin_ros2dds::ROS2Plugin::PLUGIN_LONG_VERSION
    );

    let mut plugins = PluginsManager::static_plugins_only();
    plugins.declare_static_plugin::<zenoh_plugin_ros2dds::ROS2Plugin, &str>("ros2dds", true);

    let mut runtime = match RuntimeBuilder::new(config)
        .plugins_manager(plugins)
        .build()
        .await
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("roam-zenoh-bridge: cannot build the zenoh runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = runtime.start().await {
        eprintln!("roam-zenoh-bridge: cannot start the zenoh runtime: {e}");
        return ExitCode::FAILURE;
    }

    println!("ready");
    let _ = std::io::stdout().flush();

    wait_for_stop().await;
    tracing::info!("roam-zenoh-bridge: stopping");
    // Exit without closing the runtime: zenoh 1.10.2's Runtime::close() while the ros2dds plugin
    // still holds liveliness tokens panics in the router (resource.rs unwrap, then an abort in a
    // destructor). zenoh-bridge-ros2dds never closes either; it is simply killed. exit() still
    // runs the C atexit handlers, so CycloneDDS gets to say goodbye to its peers.
    drop(runtime);
    std::process::exit(0)
}

async fn wait_for_stop() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

const CA_PEM: &str = "ca.pem";
const SERVER_PEM: &str = "server.pem";
const SERVER_KEY_PEM: &str = "server-key.pem";

/// Makes sure `dir` holds a CA and a server certificate signed by it. Generates all three
/// files when any is missing, into a scratch directory renamed into place, so that two bridges
/// started together on an empty directory agree on one CA.
fn ensure_tls_dir(dir: &Path) -> Result<(), String> {
    let complete = |d: &Path| {
        [CA_PEM, SERVER_PEM, SERVER_KEY_PEM]
            .iter()
            .all(|f| d.join(f).is_file())
    };
    if complete(dir) {
        return Ok(());
    }
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    let scratch = parent.join(format!(
        ".{}.tmp{}",
        dir.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    ));
    fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let (ca, cert, key) = generate_tls().map_err(|e| format!("generating TLS material: {e}"))?;
    for (name, pem) in [(CA_PEM, ca), (SERVER_PEM, cert), (SERVER_KEY_PEM, key)] {
        fs::write(scratch.join(name), pem).map_err(|e| format!("{}: {e}", scratch.display()))?;
    }
    // rename() onto a missing or empty directory succeeds; onto a filled one it fails, and then
    // another process won the race: use its files.
    let _ = fs::remove_dir(dir); // only removes it if empty
    match fs::rename(&scratch, dir) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = fs::remove_dir_all(&scratch);
            if complete(dir) {
                Ok(())
            } else {
                Err(format!(
                    "{}: incomplete TLS directory and cannot fill it: {e}",
                    dir.display()
                ))
            }
        }
    }
}

/// A self-signed CA and a server certificate it signs, valid for localhost, 127.0.0.1 and ::1.
fn generate_tls() -> Result<(String, String, String), rcgen::Error> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
        KeyUsagePurpose, SanType,
    };

    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "roam-zenoh-bridge lab CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = ca_params.self_signed(&ca_key)?;

    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(vec!["localhost".to_string()])?;
    params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    params
        .subject_alt_names
        .push(SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)));
    params
        .subject_alt_names
        .push(SanType::IpAddress(IpAddr::V6(Ipv6Addr::LOCALHOST)));
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let cert = params.signed_by(&key, &ca, &ca_key)?;

    Ok((ca.pem(), cert.pem(), key.serialize_pem()))
}
