//! The proxy's YAML configuration (`roam proxy -c robot.yaml`).
//!
//! ```yaml
//! id: robot-7                    # identity in the PKI directory (router or client role)
//! pki: /etc/roam/pki
//! upstream:                      # routers the proxy's edge router keeps links to
//!   - quic://cloud.example.com:7447
//! listen: 0.0.0.0:7447           # optional: let other routers/clients link to this one
//! namespace: /robot7             # optional: prefixes every realm-side topic and service name
//!                                # (exports' and imports'); local names stay as they are
//! dds:
//!   domain: 0
//!   interfaces: [eth0]           # network interfaces DDS may use (default: Cyclone's choice)
//!   peers: [192.168.1.20]        # unicast discovery peers (default: multicast)
//!   # config_xml: "<CycloneDDS>...</CycloneDDS>"   # full CycloneDDS config instead
//!   ros_distro: jazzy            # humble: 24-byte GIDs in ros_discovery_info and no type
//!                                # hashes on import writers (later: 16 bytes, hashes)
//!   receive_buffer_bytes: 8388608  # UDP receive buffer for large messages (default 8 MiB)
//!   bulk_types: [sensor_msgs/msg/Image]  # read by a second DDS participant, so they never
//!                                # hold other topics (default: images, point clouds, maps;
//!                                # [] for none; docs/operations.md "Bulk topics")
//! realms:
//!   warehouse: /etc/roam/warehouse.realm
//! exports:                       # local topics that leave this network
//!   - topic: /chatter
//!     realm: warehouse
//!     as: /robot7/chatter        # optional: its name inside the realm
//!   - allow: ['^/camera/.*']     # or every local topic matching a regex ...
//!     deny: ['^/camera/debug']   # ... except these (or per kind: publishers,
//!     realm: warehouse           # service_servers, action_servers; docs/operations.md)
//!   - service: /add_two_ints     # a service this network serves
//!     realm: warehouse
//!     convention: auto           # where local endpoints carry a call's identity: auto (by
//!                                # DDS vendor), cyclonedds or fastdds (docs/services.md)
//!   - action: /fibonacci         # a ROS 2 action served here: its three services and two
//!     realm: warehouse           # topics as one entry (docs/actions.md)
//! sign: true                     # sign every envelope with this identity's key (signed
//!                                # mode; default: when a realm file says require_signed)
//! encrypt_payloads: true         # false: exported payloads in clear text, still
//!                                # authenticated (public data; measuring encryption's cost)
//! resend_window_s: 10            # how long exported reliable KEEP_ALL topics keep sent
//!                                # messages for subscribers that missed them (an export
//!                                # entry may give its own; docs/operations.md "Failures")
//! status_interval_s: 30          # per-topic and per-link status lines (0: only at exit)
//! msg_paths: [/opt/my_ws/src/my_msgs]   # optional: where message definitions are, besides
//!                                # AMENT_PREFIX_PATH (announced with the topics, so members
//!                                # without a ROS install can read them as JSON)
//! metrics_file: /run/roam/robot-7.json  # optional: the latest metrics snapshot (JSON),
//!                                # replaced at start, every status interval and at exit
//! metrics_listen: 127.0.0.1:9464 # optional: serve GET /metrics to Prometheus (no TLS:
//!                                # keep it on loopback or a trusted network)
//! worker_threads: 1              # async worker threads (default 1; docs/operations.md
//!                                # "Threads"); --worker-threads overrides it
//! rules: /etc/roam/robot-7.rules # optional: Filter/Monitor/Display rules on what the
//!                                # proxy exports and imports (docs/rules.md); SIGHUP
//!                                # reloads them
//! imports:                       # realm topics that appear in this network
//!   - topic: /robot7/chatter
//!     realm: warehouse
//!     as: /chatter               # optional: local name
//!   - allow: {subscribers: ['^/fleet/']}  # or every topic a local subscriber reads that
//!     realm: warehouse           # matches (a list, or per kind: subscribers,
//!                                # service_clients, action_clients; docs/operations.md)
//!   - service: /add_two_ints
//!     realm: warehouse
//!   - action: /fibonacci         # an action whose server is elsewhere in the realm
//!     realm: warehouse
//! link:                          # the edge router's links (fields as in a router's `link:`)
//!   congestion: tolerant         # QUIC: tolerant (default), cubic, new_reno, bbr
//! dashboard:                     # optional: the realm's live dashboard, served here (HTTP,
//!   listen: 127.0.0.1:8080       #   no authentication: loopback or a trusted network)
//!   realm: warehouse
//! gateway:                       # optional: doors for programs outside ROS, on this proxy
//!   realm: warehouse             #   into this realm (sections as in `roam gateway`'s file,
//!   rosbridge: {listen: 0.0.0.0:9090}  # docs/gateway.md; only the doors listed open)
//!   grpc: {listen: 0.0.0.0:50051}
//!   foxglove: {listen: 0.0.0.0:8765}
//!   auth: {tokens: [...]}
//!   tls: {cert: web.pem, key: web.key}
//! mqtt:                          # optional: an MQTT bridge (docs/mqtt.md): mqtt_client's
//!   params: mqtt_client.yaml     #   parameter file as it is, or its keys inline here
//!   node_name: mqtt_client       #   ~/latencies/<topic> lives under /<node_name>
//! ```
//!
//! Everything not exported stays private. Every mistake names the file, the line and the
//! field, and says what would be valid: syntax and types, unknown realms, bad regexes, bad
//! names (relative names such as `chatter` are taken as `/chatter`, as everywhere in roam),
//! a topic exported or imported twice, two topics merged into one name, addresses without a
//! port, a domain out of range, link values that cannot work, malformed `config_xml`; and,
//! when the file is loaded, missing PKI or realm files and interfaces this machine lacks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use super::config_file::{DashboardFile, DdsFile, ExportFile, ImportFile, ProxyFile};
use super::dds_config::{check_xml, MAX_DOMAIN, RECEIVE_BUFFER_BYTES};
pub use super::entries::{action_parts, Mapping, What};
use super::entries::{
    check_entry_name, check_name, entry_mappings, in_namespace, kind_word, single, Entry,
};
use super::patterns::{Pattern, Side};
use super::resend_window::{self, ResendWindows};
use roam_config::addr::{check_host_port, check_peer, Use};
use roam_config::doc::{ConfigError, Doc, FieldPath, LoadError};
use roam_config::gateway::doors::Doors;
use roam_gateway::tls::TlsSettings;

/// `convention:` belongs to services and actions only.
fn check_convention(
    doc: &Doc,
    entry_kind: Entry,
    c: Option<super::convention::Setting>,
    entry: &FieldPath,
) -> Result<super::convention::Setting, ConfigError> {
    match (entry_kind, c) {
        (Entry::One(What::Service) | Entry::Action, c) => Ok(c.unwrap_or_default()),
        (_, None) => Ok(super::convention::Setting::Auto),
        (_, Some(_)) => Err(doc.err(
            &entry.clone().key("convention"),
            "`convention` applies to services and actions only (where a call's identity travels)",
        )),
    }
}

/// Export every local topic, service or action (by the pattern's kind) matching `allow` and
/// none of `deny`, under its own name.
pub type PatternExport = Pattern;
/// Import every topic, service or action a local subscriber or client uses that matches
/// `allow` and none of `deny`.
pub type PatternImport = Pattern;

/// The validated configuration.
#[derive(Debug)]
pub struct ProxyConfig {
    pub id: String,
    pub pki: PathBuf,
    pub upstream: Vec<String>,
    pub listen: Option<String>,
    /// `namespace:`, normalised (`/robot7`); `None` when unset or `/`.
    pub namespace: Option<String>,
    pub dds: DdsFile,
    pub realms: BTreeMap<String, PathBuf>,
    pub exports: Vec<Mapping>,
    pub pattern_exports: Vec<PatternExport>,
    /// How long each export keeps sent messages for subscribers that missed them.
    pub resend_windows: ResendWindows,
    pub imports: Vec<Mapping>,
    pub pattern_imports: Vec<PatternImport>,
    pub link: roam_config::link::LinkFile,
    pub encrypt_payloads: bool,
    /// `sign:` as written; unset means "when a realm requires it" (decided at start, once
    /// the realm files are read).
    pub sign: Option<bool>,
    /// Seconds between status lines; 0: only at shutdown.
    pub status_interval_s: u64,
    /// Where to keep the latest metrics snapshot.
    pub metrics_file: Option<PathBuf>,
    /// Where to serve `GET /metrics`, if anywhere (checked as an address; resolved at start).
    pub metrics_listen: Option<String>,
    pub msg_paths: Vec<PathBuf>,
    /// The rules file, if any.
    pub rules: Option<PathBuf>,
    /// Gateway doors on this proxy's edge, if any.
    pub gateway: Option<EmbeddedGateway>,
    /// The dashboard: its address and realm, if any.
    pub dashboard: Option<(std::net::SocketAddr, String)>,
    /// The MQTT bridge, if any.
    pub mqtt: Option<roam_config::mqtt::MqttSection>,
}

/// A proxy's gateway doors: into which realm, and how (see `roam gateway`).
#[derive(Debug)]
pub struct EmbeddedGateway {
    /// The key of `realms:` the doors lead into.
    pub realm: String,
    pub doors: Doors,
    /// The TLS files `doors.tls` names, read by [`ProxyConfig::load`].
    pub tls: Option<TlsSettings>,
}

impl ProxyConfig {
    /// Reads, parses and checks a proxy's file, including what it names on this machine:
    /// the PKI files, the realm files and the network interfaces.
    pub fn load(path: &Path) -> Result<Self, LoadError> {
        let text = LoadError::read(path)?;
        let origin = path.display().to_string();
        let doc = Doc::new(&text, &origin);
        let mut cfg = Self::parse_doc(&doc)?;
        cfg.check_machine(&doc)?;
        if let Some(g) = &mut cfg.gateway {
            g.tls = g
                .doors
                .tls
                .as_ref()
                .map(|t| t.load(&doc, &cfg.pki, &cfg.id))
                .transpose()?;
        }
        Ok(cfg)
    }

    /// Parses and checks the text alone: no file is read but the MQTT bridge's parameter
    /// file, when the `mqtt:` section names one (`params: FILE`).
    pub fn parse(text: &str, origin: &str) -> Result<Self, ConfigError> {
        Self::parse_doc(&Doc::new(text, origin))
    }

    fn parse_doc(doc: &Doc) -> Result<Self, ConfigError> {
        let f: ProxyFile = doc.parse()?;
        let field = FieldPath::new;
        roam_pki::validate_name(&f.id).map_err(|e| doc.err(&field("id"), e.to_string()))?;
        roam_config::router::check_worker_threads(f.worker_threads, doc)?;
        for (i, u) in f.upstream.iter().enumerate() {
            check_peer(u).map_err(|e| doc.err(&field("upstream").index(i), e.to_string()))?;
        }
        if let Some(l) = &f.listen {
            check_host_port(l, Use::Listen)
                .map_err(|e| doc.err(&field("listen"), e.to_string()))?;
        }
        if let Some(l) = &f.metrics_listen {
            check_host_port(l, Use::Listen)
                .map_err(|e| doc.err(&field("metrics_listen"), e.to_string()))?;
        }
        let namespace = match &f.namespace {
            Some(n) => check_name(What::Topic, n)
                .map_err(|m| doc.err(&field("namespace"), format!("not a ROS namespace: {m}")))?,
            None => "/".to_string(),
        };
        let in_realm = |what: What, name: String| in_namespace(&namespace, what, name);
        check_dds(&f.dds, doc)?;
        f.link
            .apply(roam_net::link::LinkConfig::default())
            .map_err(|e| e.located(doc))?;
        let realm_ok = |realm: &str, at: &FieldPath| {
            if f.realms.contains_key(realm) {
                Ok(())
            } else {
                let known = f.realms.keys().cloned().collect::<Vec<_>>().join(", ");
                Err(doc.err(
                    at,
                    format!("unknown realm {realm:?} (realms: {known}; add it under `realms:`)"),
                ))
            }
        };
        let mut exports: Vec<(usize, Mapping)> = Vec::new();
        let mut pattern_exports = Vec::new();
        let mut resend_windows =
            ResendWindows::new(doc, &field("resend_window_s"), f.resend_window_s)?;
        for (i, e) in f.exports.iter().enumerate() {
            let entry = field("exports").index(i);
            realm_ok(&e.realm, &entry.clone().key("realm"))?;
            let window_at = entry.clone().key("resend_window_s");
            let window = resend_window::check(doc, &window_at, e.resend_window_s)?;
            let patterns = e.allow.is_some() || e.deny.is_some();
            let named = [&e.topic, &e.service, &e.dds_topic, &e.action]
                .iter()
                .any(|n| n.is_some());
            match (single(&e.topic, &e.service, &e.dds_topic, &e.action), patterns) {
                (Some((kind, t, key)), false) => {
                    let local = check_entry_name(kind, t)
                        .map_err(|m| doc.err(&entry.clone().key(key), m))?;
                    let remote = match &e.rename {
                        Some(r) => check_entry_name(kind, r)
                            .map_err(|m| doc.err(&entry.clone().key("as"), m))?,
                        None => local.clone(),
                    };
                    let convention = check_convention(doc, kind, e.convention, &entry)?;
                    if let Some(w) = window {
                        if !matches!(kind, Entry::One(What::Topic | What::DdsTopic)) {
                            return Err(doc.err(&window_at, "`resend_window_s` applies to topics (a service's or an action's calls are answered, not resent)"));
                        }
                        resend_windows.named(&local, w);
                    }
                    for m in entry_mappings(kind, &local, &remote, &e.realm, convention, &in_realm) {
                        check_export_unique(doc, &exports, i, &m, e.rename.is_some(), key)?;
                        exports.push((i, m));
                    }
                }
                (None, true) if !named => {
                    if e.rename.is_some() {
                        return Err(doc.err(&entry.key("as"), "`as` renames one topic; it cannot apply to allow/deny patterns: give each topic its own entry"));
                    }
                    if e.convention.is_some() {
                        return Err(doc.err(&entry.key("convention"), PATTERN_CONVENTION));
                    }
                    let (allow, deny) = (e.allow.as_ref(), e.deny.as_ref());
                    let p = Pattern::parse(doc, &entry, Side::Exports, allow, deny, &e.realm)?;
                    if let Some(w) = window {
                        resend_windows.patterns(&p, w);
                    }
                    pattern_exports.extend(p);
                }
                _ => {
                    return Err(doc.err(
                        &entry,
                        "expected exactly one of `topic`, `service`, `action`, `dds_topic`, or `allow`/`deny` patterns",
                    ))
                }
            }
        }
        let mut imports: Vec<(usize, Mapping)> = Vec::new();
        let mut pattern_imports = Vec::new();
        for (i, m) in f.imports.iter().enumerate() {
            let entry = field("imports").index(i);
            realm_ok(&m.realm, &entry.clone().key("realm"))?;
            let named = single(&m.topic, &m.service, &m.dds_topic, &m.action);
            let patterns = m.allow.is_some() || m.deny.is_some();
            if named.is_none() && patterns {
                if m.rename.is_some() {
                    return Err(doc.err(&entry.key("as"), "allow/deny patterns import topics, services and actions under their own names: give one that needs another its own entry"));
                }
                if m.convention.is_some() {
                    return Err(doc.err(&entry.key("convention"), PATTERN_CONVENTION));
                }
                let (allow, deny) = (m.allow.as_ref(), m.deny.as_ref());
                let p = Pattern::parse(doc, &entry, Side::Imports, allow, deny, &m.realm)?;
                pattern_imports.extend(p);
                continue;
            }
            let (Some((kind, remote, key)), false) = (named, patterns) else {
                return Err(doc.err(
                    &entry,
                    "expected exactly one of `topic`, `service`, `action`, `dds_topic`, or `allow`/`deny` patterns",
                ));
            };
            let named =
                check_entry_name(kind, remote).map_err(|e| doc.err(&entry.clone().key(key), e))?;
            let local = match &m.rename {
                Some(r) => {
                    check_entry_name(kind, r).map_err(|e| doc.err(&entry.clone().key("as"), e))?
                }
                None => named.clone(),
            };
            let convention = check_convention(doc, kind, m.convention, &entry)?;
            for mapping in entry_mappings(kind, &local, &named, &m.realm, convention, &in_realm) {
                check_import_unique(doc, &imports, i, &mapping, m.rename.is_some(), key)?;
                // Importing a name we also export under the same local name would loop it back.
                if let Some((j, _)) = exports.iter().find(|(_, e)| {
                    e.what == mapping.what && e.local == mapping.local && e.realm == mapping.realm
                }) {
                    let at = entry.key(if m.rename.is_some() { "as" } else { key });
                    return Err(doc.err(&at, format!(
                        "{} is also exported by exports[{j}] in realm {}: it would loop back; import it under another local name (`as`)",
                        mapping.local, mapping.realm
                    )));
                }
                imports.push((i, mapping));
            }
        }
        let gateway = match f.gateway {
            Some(g) => {
                realm_ok(&g.realm, &field("gateway").key("realm"))?;
                let (realm, doors) = g.check(doc, &f.pki)?;
                Some(EmbeddedGateway {
                    realm,
                    doors,
                    tls: None,
                })
            }
            None => None,
        };
        let dashboard = match &f.dashboard {
            Some(d) => {
                let at = field("dashboard");
                realm_ok(&d.realm, &at.clone().key("realm"))?;
                check_host_port(&d.listen, Use::Listen)
                    .map_err(|e| doc.err(&at.clone().key("listen"), e.to_string()))?;
                let addr = d.listen.parse().map_err(|_| {
                    doc.err(
                        &at.key("listen"),
                        format!(
                            "{:?} is not an IP address and port (e.g. 127.0.0.1:8080)",
                            d.listen
                        ),
                    )
                })?;
                Some((addr, d.realm.clone()))
            }
            None => None,
        };
        let base = std::path::Path::new(doc.origin)
            .parent()
            .unwrap_or(std::path::Path::new("."));
        let mqtt = f
            .mqtt
            .as_ref()
            .map(|v| roam_config::mqtt::MqttSection::from_section(v, doc, base))
            .transpose()?;
        if let Some(m) = &mqtt {
            let p = &m.params;
            let named = p
                .ros2mqtt
                .iter()
                .map(|e| (&e.realm, "ros2mqtt", &e.ros_topic));
            let named = named.chain(
                p.mqtt2ros
                    .iter()
                    .map(|e| (&e.realm, "mqtt2ros", &e.mqtt_topic)),
            );
            for (realm, dir, key) in named {
                if let Some(r) = realm {
                    let at = field("mqtt").key("bridge").key(dir).key(key).key("realm");
                    realm_ok(r, &at)?;
                }
            }
        }
        if f.exports.is_empty() && f.imports.is_empty() && gateway.is_none() && mqtt.is_none() {
            return Err(doc.whole("nothing to do: add `exports`, `imports`, `gateway` or `mqtt`"));
        }
        Ok(Self {
            id: f.id,
            pki: f.pki,
            upstream: f.upstream,
            listen: f.listen,
            namespace: (namespace != "/").then_some(namespace),
            dds: f.dds,
            realms: f.realms,
            exports: exports.into_iter().map(|(_, m)| m).collect(),
            pattern_exports,
            resend_windows,
            imports: imports.into_iter().map(|(_, m)| m).collect(),
            pattern_imports,
            link: f.link,
            encrypt_payloads: f.encrypt_payloads,
            sign: f.sign,
            status_interval_s: f.status_interval_s.unwrap_or(30),
            metrics_file: f.metrics_file,
            metrics_listen: f.metrics_listen,
            msg_paths: f.msg_paths,
            rules: f.rules,
            gateway,
            dashboard,
            mqtt,
        })
    }

    /// Checks what the file names on this machine: the identity's files in the PKI
    /// directory, every realm file, and the network interfaces DDS should use.
    fn check_machine(&self, doc: &Doc) -> Result<(), ConfigError> {
        roam_pki::check_files(&self.pki, &self.id)
            .map_err(|e| doc.err(&FieldPath::new("pki"), e.to_string()))?;
        for (name, path) in &self.realms {
            roam_edge::realm::load(path)
                .map_err(|e| doc.err(&FieldPath::new("realms").key(name), e))?;
        }
        for (i, path) in self.msg_paths.iter().enumerate() {
            roam_edge::definitions::check_msg_path(path)
                .map_err(|e| doc.err(&FieldPath::new("msg_paths").index(i), e.to_string()))?;
        }
        if let Some(path) = &self.rules {
            roam_config::rules::load_file(path)
                .map_err(|e| doc.err(&FieldPath::new("rules"), e.to_string()))?;
        }
        if !self.dds.interfaces.is_empty() {
            let here = roam_config::host::interface_names()
                .map_err(|e| doc.err(&FieldPath::new("dds.interfaces"), e.to_string()))?;
            for (i, name) in self.dds.interfaces.iter().enumerate() {
                roam_config::host::check_interface(name, &here).map_err(|e| {
                    doc.err(&FieldPath::new("dds.interfaces").index(i), e.to_string())
                })?;
            }
        }
        Ok(())
    }
}

/// Why pattern entries take no `convention:`.
const PATTERN_CONVENTION: &str = "`convention` is `auto` for the services and actions patterns select: give one that needs another its own entry";

/// The `dds:` section: domain, interfaces, buffer and XML.
fn check_dds(d: &DdsFile, doc: &Doc) -> Result<(), ConfigError> {
    let at = |k: &str| FieldPath::new("dds").key(k);
    if d.domain > MAX_DOMAIN {
        return Err(doc.err(
            &at("domain"),
            format!(
                "{} is out of range: DDS domains are 0 to {MAX_DOMAIN} (ROS_DOMAIN_ID; the DDSI port of a higher domain exceeds 65535)",
                d.domain
            ),
        ));
    }
    for (i, name) in d.interfaces.iter().enumerate() {
        if name.trim().is_empty() {
            return Err(doc.err(
                &at("interfaces").index(i),
                "an empty interface name; give one that `ip link` lists, e.g. eth0",
            ));
        }
    }
    if d.receive_buffer_bytes == Some(0) {
        return Err(doc.err(
            &at("receive_buffer_bytes"),
            format!("0 is not a usable buffer; give the size in bytes (default {RECEIVE_BUFFER_BYTES}; the kernel caps it)"),
        ));
    }
    if let Some(d) = &d.ros_distro {
        const KNOWN: [&str; 5] = ["humble", "iron", "jazzy", "kilted", "rolling"];
        if !KNOWN.contains(&d.as_str()) {
            return Err(doc.err(
                &at("ros_distro"),
                format!(
                    "unknown distribution {d:?} (expected one of {})",
                    KNOWN.join(", ")
                ),
            ));
        }
    }
    for (i, t) in d.bulk_types.iter().flatten().enumerate() {
        if let Err(e) = roam_msg::TypeName::parse(t) {
            return Err(doc.err(
                &at("bulk_types").index(i),
                format!("{t:?} is not a ROS message type ({e}); write it as pkg/msg/Type, e.g. sensor_msgs/msg/Image"),
            ));
        }
    }
    if let Some(x) = &d.config_xml {
        check_xml(x).map_err(|e| doc.err(&at("config_xml"), e.to_string()))?;
        let ignored: Vec<&str> = [
            ("interfaces", !d.interfaces.is_empty()),
            ("peers", !d.peers.is_empty()),
            ("receive_buffer_bytes", d.receive_buffer_bytes.is_some()),
        ]
        .iter()
        .filter(|(_, set)| *set)
        .map(|(k, _)| *k)
        .collect();
        if !ignored.is_empty() {
            return Err(doc.err(
                &at("config_xml"),
                format!(
                    "config_xml replaces the configuration roam writes from dds.{}: put those settings in the XML, or remove config_xml",
                    ignored.join(", dds.")
                ),
            ));
        }
    }
    Ok(())
}

/// The key that gave an entry's realm-side name: `as` if there is one, else the name's own.
fn name_key(renamed: bool, key: &'static str) -> &'static str {
    if renamed {
        "as"
    } else {
        key
    }
}

/// A local topic is exported once, and two exports never share one realm name (their
/// messages would merge into one topic).
fn check_export_unique(
    doc: &Doc,
    earlier: &[(usize, Mapping)],
    i: usize,
    m: &Mapping,
    renamed: bool,
    key: &'static str,
) -> Result<(), ConfigError> {
    let entry = FieldPath::new("exports").index(i);
    for (j, e) in earlier {
        if e.what == m.what && e.local == m.local {
            return Err(doc.err(
                &entry.key(key),
                format!(
                    "{} {} is already exported by exports[{j}] (into realm {}); export each {} once",
                    kind_word(m.what), m.local, e.realm, kind_word(m.what)
                ),
            ));
        }
        if e.what == m.what && e.realm == m.realm && e.remote == m.remote {
            return Err(doc.err(
                &entry.key(name_key(renamed, key)),
                format!(
                    "{:?} is already the realm name of exports[{j}] ({}); two {}s cannot share one realm name: give each its own `as`",
                    m.remote, e.local, kind_word(m.what)
                ),
            ));
        }
    }
    Ok(())
}

/// A realm topic is imported once, and two imports never land on one local name.
fn check_import_unique(
    doc: &Doc,
    earlier: &[(usize, Mapping)],
    i: usize,
    m: &Mapping,
    renamed: bool,
    key: &'static str,
) -> Result<(), ConfigError> {
    let entry = FieldPath::new("imports").index(i);
    for (j, e) in earlier {
        if e.what == m.what && e.realm == m.realm && e.remote == m.remote {
            return Err(doc.err(
                &entry.key(key),
                format!(
                    "{} {} of realm {} is already imported by imports[{j}]; import each {} once",
                    kind_word(m.what),
                    m.remote,
                    m.realm,
                    kind_word(m.what)
                ),
            ));
        }
        if e.what == m.what && e.local == m.local {
            return Err(doc.err(
                &entry.key(name_key(renamed, key)),
                format!(
                    "{:?} is already the local name of imports[{j}] ({}); two realm {}s cannot share one local name: give each its own `as`",
                    m.local, e.remote, kind_word(m.what)
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
