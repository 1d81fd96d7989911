//! The proxy's YAML configuration (`roam proxy -c robot.yaml`).
//!
//! ```yaml
//! id: robot-7                    # identity in the PKI directory (router or client role)
//! pki: /etc/roam/pki
//! upstream:                      # routers the proxy's edge router keeps links to
//!   - quic://cloud.example.com:7447
//! listen: 0.0.0.0:7447           # optional: let other routers/clients link to this one
//! dds:
//!   domain: 0
//!   interfaces: [eth0]           # network interfaces DDS may use (default: Cyclone's choice)
//!   peers: [192.168.1.20]        # unicast discovery peers (default: multicast)
//!   # config_xml: "<CycloneDDS>...</CycloneDDS>"   # full CycloneDDS config instead
//!   ros_distro: jazzy            # humble uses 24-byte GIDs in ros_discovery_info
//!   receive_buffer_bytes: 8388608  # UDP receive buffer for large messages (default 8 MiB)
//! realms:
//!   warehouse: /etc/roam/warehouse.realm
//! exports:                       # local topics that leave this network
//!   - topic: /chatter
//!     realm: warehouse
//!     as: /robot7/chatter        # optional: its name inside the realm
//!   - allow: ['^/camera/.*']     # or every local topic matching a regex ...
//!     deny: ['^/camera/debug']   # ... except these
//!     realm: warehouse
//!   - service: /add_two_ints     # a service this network serves
//!     realm: warehouse
//! encrypt_payloads: true         # false: exported payloads in clear text, still
//!                                # authenticated (public data; measuring encryption's cost)
//! status_interval_s: 30          # per-topic and per-link status lines (0: only at exit)
//! imports:                       # realm topics that appear in this network
//!   - topic: /robot7/chatter
//!     realm: warehouse
//!     as: /chatter               # optional: local name
//!   - service: /add_two_ints
//!     realm: warehouse
//! link:                          # the edge router's links (fields as in a router's `link:`)
//!   congestion: bbr              # QUIC: cubic (default), new_reno, bbr
//! ```
//!
//! Everything not exported stays private. Syntax and type mistakes are reported with the line
//! and column; semantic ones (unknown realm, bad regex, bad topic name) with the entry and, where
//! the value appears in the file, its line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use regex::Regex;
use serde::Deserialize;

use super::ros_names::check_ros_name;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxyFile {
    pub id: String,
    pub pki: PathBuf,
    #[serde(default)]
    pub upstream: Vec<String>,
    pub listen: Option<String>,
    #[serde(default)]
    pub dds: DdsFile,
    pub realms: BTreeMap<String, PathBuf>,
    #[serde(default)]
    pub exports: Vec<ExportFile>,
    #[serde(default)]
    pub imports: Vec<ImportFile>,
    /// false: exported payloads travel in clear text, still authenticated (routers can read
    /// but not forge or replay them). For public data, and to measure what encryption costs.
    #[serde(default = "yes")]
    pub encrypt_payloads: bool,
    #[serde(default)]
    pub link: crate::config::LinkFile,
    /// Seconds between status lines (per topic: samples, ages at this hop; per link); 0:
    /// only at shutdown.
    pub status_interval_s: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DdsFile {
    #[serde(default)]
    pub domain: u32,
    #[serde(default)]
    pub interfaces: Vec<String>,
    #[serde(default)]
    pub peers: Vec<String>,
    pub config_xml: Option<String>,
    /// The ROS 2 distribution of this network's nodes, for the GID width in
    /// `ros_discovery_info`: `humble` (24 bytes) or later (`iron`, `jazzy`, ...: 16 bytes).
    pub ros_distro: Option<String>,
    /// The UDP receive buffer the proxy's participant asks for (bytes; the kernel caps it at
    /// net.core.rmem_max). Part of the configuration roam writes from `interfaces`/`peers`.
    pub receive_buffer_bytes: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportFile {
    pub topic: Option<String>,
    pub service: Option<String>,
    /// A raw DDS topic (not a ROS 2 one), e.g. `DDSPerfRDataKS`.
    pub dds_topic: Option<String>,
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
    pub realm: String,
    #[serde(rename = "as")]
    pub rename: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportFile {
    pub topic: Option<String>,
    pub service: Option<String>,
    pub dds_topic: Option<String>,
    pub realm: String,
    #[serde(rename = "as")]
    pub rename: Option<String>,
}

/// Whether an export or import is a topic or a service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    Topic,
    Service,
    /// A DDS topic outside the ROS 2 naming conventions, forwarded under its own name.
    DdsTopic,
}

/// The one name an export or import entry gives, and what kind it is.
fn single<'a>(
    topic: &'a Option<String>,
    service: &'a Option<String>,
    dds: &'a Option<String>,
) -> Option<(What, &'a String)> {
    match (topic, service, dds) {
        (Some(t), None, None) => Some((What::Topic, t)),
        (None, Some(s), None) => Some((What::Service, s)),
        (None, None, Some(d)) => Some((What::DdsTopic, d)),
        _ => None,
    }
}

/// Checks a name by its kind: ROS names for topics and services; any non-empty DDS topic
/// name without spaces for raw DDS topics.
fn check_name(what: What, n: &str) -> Result<(), String> {
    match what {
        What::DdsTopic if n.is_empty() || n.chars().any(char::is_whitespace) => {
            Err(format!("{n:?} is not a DDS topic name"))
        }
        What::DdsTopic => Ok(()),
        _ => check_ros_name(n),
    }
}

/// One exact export or import: `local` name here, `remote` name inside `realm`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub what: What,
    pub local: String,
    pub remote: String,
    pub realm: String,
}

/// Export every local topic matching `allow` and none of `deny`, under its own name.
#[derive(Debug, Clone)]
pub struct PatternExport {
    pub allow: Vec<Regex>,
    pub deny: Vec<Regex>,
    pub realm: String,
}

/// The validated configuration.
#[derive(Debug)]
pub struct ProxyConfig {
    pub id: String,
    pub pki: PathBuf,
    pub upstream: Vec<String>,
    pub listen: Option<String>,
    pub dds: DdsFile,
    pub realms: BTreeMap<String, PathBuf>,
    pub exports: Vec<Mapping>,
    pub pattern_exports: Vec<PatternExport>,
    pub imports: Vec<Mapping>,
    pub link: crate::config::LinkFile,
    pub encrypt_payloads: bool,
    /// Seconds between status lines; 0: only at shutdown.
    pub status_interval_s: u64,
}

fn yes() -> bool {
    true
}

impl ProxyConfig {
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Self::parse(&text, &path.display().to_string())
    }

    pub fn parse(text: &str, origin: &str) -> Result<Self, String> {
        let f: ProxyFile = crate::config::parse(text, origin)?;
        let at = |value: &str, what: String| match line_of(text, value) {
            Some(line) => format!("{origin}: line {line}: {what}"),
            None => format!("{origin}: {what}"),
        };
        let realm_ok = |realm: &str, entry: &str| {
            if f.realms.contains_key(realm) {
                Ok(())
            } else {
                let known = f.realms.keys().cloned().collect::<Vec<_>>().join(", ");
                Err(at(
                    realm,
                    format!("{entry}: unknown realm {realm:?} (realms: {known})"),
                ))
            }
        };
        if let Some(d) = &f.dds.ros_distro {
            const KNOWN: [&str; 5] = ["humble", "iron", "jazzy", "kilted", "rolling"];
            if !KNOWN.contains(&d.as_str()) {
                return Err(at(
                    d,
                    format!(
                        "dds.ros_distro: unknown distribution {d:?} (expected one of {})",
                        KNOWN.join(", ")
                    ),
                ));
            }
        }
        let mut exports = Vec::new();
        let mut pattern_exports = Vec::new();
        for (i, e) in f.exports.iter().enumerate() {
            let entry = format!("exports[{i}]");
            realm_ok(&e.realm, &entry)?;
            let patterns = !e.allow.is_empty() || !e.deny.is_empty();
            let named = [&e.topic, &e.service, &e.dds_topic]
                .iter()
                .any(|n| n.is_some());
            match (single(&e.topic, &e.service, &e.dds_topic), patterns) {
                (Some((what, t)), false) => {
                    let remote = e.rename.clone().unwrap_or_else(|| t.clone());
                    for n in [t, &remote] {
                        check_name(what, n).map_err(|m| at(n, format!("{entry}: {m}")))?;
                    }
                    exports.push(Mapping { what, local: t.clone(), remote, realm: e.realm.clone() });
                }
                (None, true) if !named => {
                    if e.rename.is_some() {
                        return Err(format!("{origin}: {entry}: `as` renames one topic; it cannot apply to allow/deny patterns"));
                    }
                    if e.allow.is_empty() {
                        return Err(format!("{origin}: {entry}: deny without allow exports nothing; add allow: ['.*']"));
                    }
                    let compile = |list: &[String]| -> Result<Vec<Regex>, String> {
                        list.iter()
                            .map(|p| Regex::new(p).map_err(|err| at(p, format!("{entry}: bad regex {p:?}: {err}"))))
                            .collect()
                    };
                    pattern_exports.push(PatternExport { allow: compile(&e.allow)?, deny: compile(&e.deny)?, realm: e.realm.clone() });
                }
                _ => {
                    return Err(format!(
                        "{origin}: {entry}: expected exactly one of `topic`, `service`, `dds_topic`, or `allow`/`deny` patterns"
                    ))
                }
            }
        }
        let mut imports = Vec::new();
        for (i, m) in f.imports.iter().enumerate() {
            let entry = format!("imports[{i}]");
            realm_ok(&m.realm, &entry)?;
            let Some((what, remote)) = single(&m.topic, &m.service, &m.dds_topic) else {
                return Err(format!(
                    "{origin}: {entry}: expected exactly one of `topic`, `service` or `dds_topic`"
                ));
            };
            let local = m.rename.clone().unwrap_or_else(|| remote.clone());
            for n in [remote, &local] {
                check_name(what, n).map_err(|e| at(n, format!("{entry}: {e}")))?;
            }
            imports.push(Mapping {
                what,
                local,
                remote: remote.clone(),
                realm: m.realm.clone(),
            });
        }
        // Importing a name we also export under the same local name would loop it back.
        for imp in &imports {
            if exports
                .iter()
                .any(|e| e.what == imp.what && e.local == imp.local && e.realm == imp.realm)
            {
                return Err(format!(
                    "{origin}: {} is both exported and imported in realm {}: it would loop",
                    imp.local, imp.realm
                ));
            }
        }
        if f.exports.is_empty() && f.imports.is_empty() {
            return Err(format!(
                "{origin}: nothing to do: add `exports` or `imports`"
            ));
        }
        Ok(Self {
            id: f.id,
            pki: f.pki,
            upstream: f.upstream,
            listen: f.listen,
            dds: f.dds,
            realms: f.realms,
            exports,
            pattern_exports,
            imports,
            link: f.link,
            encrypt_payloads: f.encrypt_payloads,
            status_interval_s: f.status_interval_s.unwrap_or(30),
        })
    }

    /// The realm and realm-side name a local topic is exported under, if any. Exact entries
    /// win over patterns; topics this proxy imports are never exported back.
    pub fn export_of(&self, local_topic: &str) -> Option<(String, String)> {
        if let Some(m) = self
            .exports
            .iter()
            .find(|m| m.what == What::Topic && m.local == local_topic)
        {
            return Some((m.realm.clone(), m.remote.clone()));
        }
        if self
            .imports
            .iter()
            .any(|m| m.what == What::Topic && m.local == local_topic)
        {
            return None;
        }
        self.pattern_exports
            .iter()
            .find(|p| {
                p.allow.iter().any(|r| r.is_match(local_topic))
                    && !p.deny.iter().any(|r| r.is_match(local_topic))
            })
            .map(|p| (p.realm.clone(), local_topic.to_string()))
    }
}

/// The 1-based line where `needle` first appears in `text`.
fn line_of(text: &str, needle: &str) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    text.lines().position(|l| l.contains(needle)).map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "\
id: robot-7
pki: ./pki
upstream: [quic://127.0.0.1:7447]
dds: {domain: 3, interfaces: [lo], peers: [127.0.0.1]}
realms: {warehouse: ./w.realm}
exports:
  - topic: /chatter
    realm: warehouse
    as: /robot7/chatter
  - allow: ['^/camera/.*']
    deny: ['^/camera/debug']
    realm: warehouse
  - service: /add_two_ints
    realm: warehouse
imports:
  - topic: /cloud/plan
    realm: warehouse
    as: /plan
";

    #[test]
    fn a_full_file_parses_and_maps() {
        let c = ProxyConfig::parse(GOOD, "robot.yaml").unwrap();
        assert_eq!(c.dds.domain, 3);
        assert_eq!(
            c.export_of("/chatter"),
            Some(("warehouse".into(), "/robot7/chatter".into()))
        );
        assert_eq!(
            c.export_of("/camera/front"),
            Some(("warehouse".into(), "/camera/front".into()))
        );
        assert_eq!(c.export_of("/camera/debug"), None);
        assert_eq!(
            c.export_of("/private/map"),
            None,
            "unlisted topics stay private"
        );
        assert_eq!(c.exports[1].what, What::Service);
        assert_eq!(c.imports[0].local, "/plan");
        assert_eq!(c.imports[0].remote, "/cloud/plan");
    }

    #[test]
    fn mistakes_say_where_and_what() {
        let e = ProxyConfig::parse(
            &GOOD.replace(
                "realm: warehouse\n    as: /robot7",
                "realm: wharehouse\n    as: /robot7",
            ),
            "r.yaml",
        )
        .unwrap_err();
        assert!(
            e.starts_with("r.yaml: line 8: exports[0]: unknown realm \"wharehouse\""),
            "{e}"
        );
        let e = ProxyConfig::parse(&GOOD.replace("'^/camera/.*'", "'^/camera/(.*'"), "r.yaml")
            .unwrap_err();
        assert!(e.contains("line 10") && e.contains("bad regex"), "{e}");
        let e = ProxyConfig::parse(&GOOD.replace("as: /plan", "as: plan"), "r.yaml").unwrap_err();
        assert!(e.contains("imports[0]") && e.contains("absolute"), "{e}");
        let e =
            ProxyConfig::parse(&GOOD.replace("domain: 3", "domain: three"), "r.yaml").unwrap_err();
        assert!(e.starts_with("r.yaml: line 4"), "{e}");
        let e = ProxyConfig::parse(
            &GOOD.replace(
                "  - service: /add_two_ints\n",
                "  - service: /add_two_ints\n    topic: /x\n",
            ),
            "r.yaml",
        )
        .unwrap_err();
        assert!(e.contains("exactly one of"), "{e}");
        let e = ProxyConfig::parse("id: x\npki: p\nrealms: {}\n", "r.yaml").unwrap_err();
        assert!(e.contains("nothing to do"), "{e}");
    }

    #[test]
    fn an_imported_topic_is_never_exported_back() {
        let text = GOOD
            .replace("'^/camera/.*'", "'.*'")
            .replace("deny: ['^/camera/debug']", "deny: []");
        let c = ProxyConfig::parse(&text, "r.yaml").unwrap();
        assert_eq!(c.export_of("/plan"), None);
        assert!(c.export_of("/anything").is_some());
        let looped = GOOD
            .replace("topic: /cloud/plan", "topic: /robot7/chatter")
            .replace("as: /plan", "as: /chatter");
        assert!(ProxyConfig::parse(&looped, "r.yaml")
            .unwrap_err()
            .contains("loop"));
    }
}
