//! The systems under test, started fresh for every run the way a user starts them:
//! - native: source and sink in one DDS domain, nothing between them;
//! - roam: DDS domain A - proxy - router (- router) - proxy - DDS domain B, payloads sealed
//!   or in clear text (authenticated) to show what encryption costs; or proxy to proxy (no
//!   router: proxy A's edge router listens, proxy B dials it), the same two processes as
//!   two Zenoh bridges;
//! - zenoh: DDS domain A - Zenoh ROS 2 bridge - (TCP or QUIC) - bridge - DDS domain B.
//!
//! A wide-area path puts `roam-wan-relay` (delay, jitter, loss) between the two sides: between
//! proxy A and the first router, or between the two Zenoh bridges.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;

use roam_bench::procs::Proc;

/// Ports the lab listens on (UDP and TCP, 127.0.0.1): below the kernel's ephemeral range
/// (32768+), where any socket bound to port 0 (a DDS participant's, say) could take them, and
/// in the gap between the DDS ports of domains 99 and 100.
const ROUTER1_PORT: u16 = 32271;
const ROUTER2_PORT: u16 = 32272;
const RELAY_PORT: u16 = 32280;
const ZENOH_PORT: u16 = 32290;

/// DDS domains: each kind of system has its own pair, so nothing lingers between kinds.
const NATIVE_DOMAIN: u32 = 60;
const ROAM_DOMAINS: (u32, u32) = (61, 62);
const ZENOH_DOMAINS: (u32, u32) = (63, 64);
/// Native Fast DDS (source and sink on Fast DDS in one domain). roam's rows with Fast DDS nodes
/// use roam's domains: their proxies are started fresh for every run.
const FASTDDS_NATIVE_DOMAIN: u32 = 65;

/// The DDS implementation of the lab's load generators (the ROS 2 nodes of a run): roam's
/// proxies are CycloneDDS either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Vendor {
    /// `roam-loadgen` (CycloneDDS, as rmw_cyclonedds): every row unless marked otherwise.
    #[serde(rename = "cyclonedds")]
    CycloneDds,
    /// `roam-loadgen-fastdds` (Fast DDS 2.9, as rmw_fastrtps; bench/fastdds).
    #[serde(rename = "fastdds")]
    FastDds,
}

impl Vendor {
    /// The row label of `system` with these nodes: CycloneDDS rows keep the system's label.
    pub fn label(self, system: System) -> String {
        match (self, system) {
            (Vendor::CycloneDds, s) => s.label(),
            (Vendor::FastDds, System::Native) => "native Fast DDS".into(),
            (Vendor::FastDds, s) => format!("{}, Fast DDS nodes", s.label()),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "system", rename_all = "snake_case")]
pub enum System {
    Native,
    Roam {
        routers: u8,
        encrypt: bool,
        links: Links,
    },
    Zenoh {
        link: ZenohLink,
    },
    /// roam proxy to proxy (QUIC, sealed) where side A runs two proxies: the second exports
    /// only the topics matching `topics` (a regex), the first everything else. A deployment
    /// that gives a heavy keep-all stream its own process, and so its own DDS receive thread
    /// (docs/operations.md): the stream then cannot hold up the other topics inside
    /// CycloneDDS. `what` names those topics in the row's label. With `pair`, side B runs
    /// two proxies too, split the same way: the two streams then share no process at all.
    RoamSecondProxy {
        topics: &'static str,
        what: &'static str,
        pair: bool,
    },
}

/// How the two Zenoh bridges are linked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ZenohLink {
    /// Plain TCP: nothing encrypted or authenticated (zenoh's default endpoint).
    Tcp,
    /// TCP with TLS, both bridges presenting certificates of one CA (`enable_mtls`): what a
    /// deployment that authenticates its bridges runs, and what every roam link does.
    TlsMutual,
    /// QUIC (TLS inside), server certificates only.
    Quic,
}

impl System {
    pub fn label(self) -> String {
        match self {
            System::Native => "native DDS".into(),
            System::Roam {
                routers,
                encrypt,
                links,
            } => format!(
                "roam, {}{}{}",
                match routers {
                    0 => "proxy to proxy".to_string(),
                    1 => "1 router".to_string(),
                    n => format!("{n} routers"),
                },
                if encrypt { "" } else { ", clear text" },
                match links {
                    Links::Quic => "",
                    Links::QuicCubic => ", QUIC Cubic",
                    Links::QuicBbr => ", QUIC BBR",
                    Links::QuicNoFec => ", QUIC without FEC",
                    Links::Tcp => ", TCP links",
                }
            ),
            System::Zenoh { link } => format!(
                "zenoh bridge, {}",
                match link {
                    ZenohLink::Tcp => "TCP",
                    ZenohLink::TlsMutual => "mutual TLS",
                    ZenohLink::Quic => "QUIC",
                }
            ),
            System::RoamSecondProxy { what, pair, .. } => format!(
                "roam, proxy to proxy, {what} by a second proxy{}",
                if pair { " pair" } else { "" }
            ),
        }
    }

    /// The default roam system: one router, sealed.
    pub const ROAM: System = System::Roam {
        routers: 1,
        encrypt: true,
        links: Links::Quic,
    };

    /// roam with as many processes as the Zenoh bridge: proxy to proxy over QUIC, sealed.
    pub const ROAM_P2P: System = System::Roam {
        routers: 0,
        encrypt: true,
        links: Links::Quic,
    };
}

/// How roam's proxies and routers are linked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Links {
    /// QUIC with roam's defaults (no `link:` options: the tolerant Cubic controller).
    Quic,
    /// QUIC with quinn's plain Cubic (`link.congestion: cubic`), roam's default before.
    QuicCubic,
    /// QUIC with BBR (`link.congestion: bbr`).
    QuicBbr,
    /// QUIC with roam's defaults but no forward error correction (`link.fec: false`), to
    /// show what repairs do on a lossy path.
    QuicNoFec,
    /// TCP+TLS.
    Tcp,
}

/// An emulated wide-area path.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Wan {
    pub label: &'static str,
    pub delay_ms: f64,
    pub jitter_ms: f64,
    pub loss: f64,
    /// Datagrams leave in arrival order (a cellular link's in-order delivery): jitter then
    /// delays but never reorders.
    pub keep_order: bool,
}

impl Wan {
    /// Seed 003's 35 ms path (E6, E12).
    pub const PATH_35MS: Wan = Wan {
        label: "35 ms",
        delay_ms: 35.0,
        jitter_ms: 0.0,
        loss: 0.0,
        keep_order: false,
    };
    /// The same with 1% random loss.
    pub const PATH_35MS_1PCT_LOSS: Wan = Wan {
        label: "35 ms, 1% loss",
        delay_ms: 35.0,
        jitter_ms: 0.0,
        loss: 0.01,
        keep_order: false,
    };
}

/// What the lab runs: where the programs are, and a scratch directory.
pub struct Lab {
    pub roam: PathBuf,
    pub loadgen: PathBuf,
    pub relay: PathBuf,
    pub zenoh: Option<PathBuf>,
    /// `roam-loadgen-fastdds`, or why there is none (then the Fast DDS rows are left out).
    pub fastdds: Result<PathBuf, String>,
    pub dir: PathBuf,
    pki: PathBuf,
    realm: PathBuf,
}

impl Lab {
    /// Finds the programs next to this one, builds the Fast DDS load generator (unless
    /// `fastdds` is false) and makes a CA, identities and a realm.
    pub fn prepare(zenoh: Option<PathBuf>, fastdds: bool) -> Result<Lab, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let bin = exe.parent().ok_or("no program directory")?;
        let find = |name: &str| -> Result<PathBuf, String> {
            let p = bin.join(name);
            p.exists().then_some(p.clone()).ok_or_else(|| {
                format!(
                    "{} not found: build it first (cargo build --release -p roam -p roam-bench)",
                    p.display()
                )
            })
        };
        let dir = std::env::temp_dir().join(format!("roam-lab-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let lab = Lab {
            roam: find("roam")?,
            loadgen: find("roam-loadgen")?,
            relay: find("roam-wan-relay")?,
            zenoh,
            fastdds: if fastdds {
                super::fastdds::build()
            } else {
                Err("left out (--fastdds-off)".into())
            },
            pki: dir.join("pki"),
            realm: dir.join("lab.realm"),
            dir,
        };
        let pki = lab.pki.to_string_lossy().to_string();
        lab.roam_ok(&["pki", "init", "--dir", &pki])?;
        for id in ["proxy-a", "proxy-a2", "proxy-b", "proxy-b2", "r1", "r2"] {
            lab.roam_ok(&["pki", "issue", id, "--dir", &pki, "--role", "router"])?;
        }
        lab.roam_ok(&["realm", "new", "lab", "--out", &lab.realm.to_string_lossy()])?;
        Ok(lab)
    }

    fn roam_ok(&self, args: &[&str]) -> Result<(), String> {
        roam_bench::procs::roam_ok(&self.roam, args)
    }

    /// The load generator program for `nodes`.
    pub fn loadgen(&self, nodes: Vendor) -> Result<&PathBuf, String> {
        match nodes {
            Vendor::CycloneDds => Ok(&self.loadgen),
            Vendor::FastDds => self
                .fastdds
                .as_ref()
                .map_err(|e| format!("no Fast DDS load generator: {e}")),
        }
    }

    /// Starts `system` for traffic on `topic` (and `topic/echo` back) between `nodes`; a
    /// `dds:NAME` topic is a plain DDS one (roam forwards it with `dds_topic:` entries).
    pub fn start(
        &self,
        system: System,
        nodes: Vendor,
        topic: &str,
        wan: Option<Wan>,
    ) -> Result<Running, String> {
        let started = Instant::now();
        let mut procs = Vec::new();
        let domains = match system {
            System::Native if nodes == Vendor::FastDds => {
                (FASTDDS_NATIVE_DOMAIN, FASTDDS_NATIVE_DOMAIN)
            }
            System::Native => (NATIVE_DOMAIN, NATIVE_DOMAIN),
            System::Roam {
                routers,
                encrypt,
                links,
            } => {
                self.start_roam(&mut procs, (routers, encrypt, links), topic, wan)?;
                ROAM_DOMAINS
            }
            System::Zenoh { link } => {
                self.start_zenoh(&mut procs, link, wan)?;
                ZENOH_DOMAINS
            }
            System::RoamSecondProxy { topics, pair, .. } => {
                self.start_second_proxy(&mut procs, topic, (topics, pair), wan)?;
                ROAM_DOMAINS
            }
        };
        Ok(Running {
            procs,
            domain_a: domains.0,
            domain_b: domains.1,
            started,
            relay_stats: wan.map(|_| self.relay_stats_file()),
        })
    }

    /// Where the relay of the running system writes its counters when stopped.
    fn relay_stats_file(&self) -> PathBuf {
        self.dir.join("relay-stats.json")
    }

    /// Starts the relay between the sides: `target` behind RELAY_PORT.
    fn relay(
        &self,
        procs: &mut Vec<Proc>,
        udp: bool,
        target: u16,
        wan: Wan,
    ) -> Result<u16, String> {
        Ok(self.relays(procs, udp, &[target], wan)?[0])
    }

    /// One relay process for several targets: the i-th behind RELAY_PORT + i, each flow with
    /// its own delay line (as connections over one path). Returns the ports to dial.
    fn relays(
        &self,
        procs: &mut Vec<Proc>,
        udp: bool,
        targets: &[u16],
        wan: Wan,
    ) -> Result<Vec<u16>, String> {
        let ports: Vec<u16> = (0..targets.len() as u16).map(|i| RELAY_PORT + i).collect();
        let mut args = Vec::new();
        for (port, target) in ports.iter().zip(targets) {
            args.push(if udp { "--udp" } else { "--tcp" }.to_string());
            args.push(format!("127.0.0.1:{port}=127.0.0.1:{target}"));
        }
        args.extend([
            "--delay-ms".into(),
            wan.delay_ms.to_string(),
            "--jitter-ms".into(),
            wan.jitter_ms.to_string(),
            "--loss".into(),
            wan.loss.to_string(),
            "--seed".into(),
            "7".into(),
        ]);
        if wan.keep_order {
            args.push("--keep-order".into());
        }
        // Its counters, written when it is stopped: what it dropped, apart from the loss model.
        let stats = self.relay_stats_file();
        let _ = std::fs::remove_file(&stats);
        args.extend(["--stats-json".into(), stats.to_string_lossy().into_owned()]);
        let p = Proc::start("wan-relay", &self.relay, &args)?;
        p.wait_line(Duration::from_secs(10), |l| l == "ready")?;
        procs.push(p);
        Ok(ports)
    }

    fn start_roam(
        &self,
        procs: &mut Vec<Proc>,
        (routers, encrypt, links): (u8, bool, Links),
        topic: &str,
        wan: Option<Wan>,
    ) -> Result<(), String> {
        // A TCP-link variant listens on both and dials TCP (through the relay's TCP side).
        let tcp = links == Links::Tcp;
        let scheme = if tcp { "tcp://" } else { "" };
        // None: the shipped default, no option given.
        let variant = match links {
            Links::QuicBbr => Some("congestion: bbr"),
            Links::QuicCubic => Some("congestion: cubic"),
            Links::QuicNoFec => Some("fec: false"),
            Links::Quic | Links::Tcp => None,
        };
        // ROAM_LAB_LINK="max_udp_payload_bytes: 9000, ...": `link:` options for every roam
        // process of the run, to compare settings with one build.
        let extra = std::env::var("ROAM_LAB_LINK")
            .ok()
            .filter(|l| !l.trim().is_empty());
        let link = match (variant, extra.as_deref()) {
            (Some(v), Some(e)) => Some(format!("{v}, {e}")),
            (v, e) => v.or(e).map(str::to_string),
        };
        let congestion = link.as_deref();
        let pki = self.pki.to_string_lossy().to_string();
        let router = |id: &str, port: u16, connect: Option<u16>| -> Result<Proc, String> {
            let mut args: Vec<String> = [
                "router",
                "--id",
                id,
                "--pki",
                &pki,
                "--status-interval",
                "0",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            match links {
                Links::QuicBbr => args.extend(["--congestion".into(), "bbr".into()]),
                Links::QuicCubic => args.extend(["--congestion".into(), "cubic".into()]),
                Links::QuicNoFec => args.push("--no-fec".into()),
                Links::Quic | Links::Tcp => {}
            }
            if let Some(e) = &extra {
                let path = self.dir.join(format!("{id}.yaml"));
                std::fs::write(&path, format!("link: {{{e}}}\n")).map_err(|e| e.to_string())?;
                args.extend(["-c".into(), path.to_string_lossy().into()]);
            }
            args.extend(["--listen".into(), format!("127.0.0.1:{port}")]);
            if tcp {
                args.extend(["--listen-tcp".into(), format!("127.0.0.1:{port}")]);
            }
            if let Some(c) = connect {
                args.extend(["--connect".into(), format!("{scheme}127.0.0.1:{c}")]);
            }
            let metrics = self.metrics_file(id)?;
            args.extend(["--metrics-file".into(), metrics.to_string_lossy().into()]);
            let mut p = Proc::start(id, &self.roam, &args)?;
            p.metrics_file = Some(metrics);
            p.wait_line(Duration::from_secs(10), |l| l.starts_with("listening"))?;
            Ok(p)
        };
        // A pattern (`re:`, E12 and E13) names the data topics; the echo topics have theirs.
        let echo = if topic.starts_with("re:") {
            super::flows::ECHO_PATTERN.to_string()
        } else {
            format!("{topic}/echo")
        };
        let mut a = self.proxy_yaml(
            "proxy-a",
            ROAM_DOMAINS.0,
            (encrypt, congestion),
            topic,
            &echo,
        );
        let mut b = self.proxy_yaml(
            "proxy-b",
            ROAM_DOMAINS.1,
            (encrypt, congestion),
            &echo,
            topic,
        );
        if routers == 0 {
            // Proxy to proxy: B's edge router listens (as the cloud side would), A dials it
            // (through the relay on a wide-area path), as proxy A dials router 1 otherwise.
            if tcp {
                return Err("proxy to proxy runs over QUIC only (a proxy listens on QUIC)".into());
            }
            b.push_str(&format!("listen: 127.0.0.1:{ROUTER1_PORT}\n"));
            let a_port = match wan {
                Some(w) => self.relay(procs, true, ROUTER1_PORT, w)?,
                None => ROUTER1_PORT,
            };
            a.push_str(&format!("upstream: [127.0.0.1:{a_port}]\n"));
            let b = self.start_proxy("proxy-b", b)?;
            b.wait_line(Duration::from_secs(10), |l| l.starts_with("listening"))?;
            procs.push(b);
            procs.push(self.start_proxy("proxy-a", a)?);
            return Ok(());
        }
        procs.push(router("r1", ROUTER1_PORT, None)?);
        let b_port = if routers > 1 {
            procs.push(router("r2", ROUTER2_PORT, Some(ROUTER1_PORT))?);
            ROUTER2_PORT
        } else {
            ROUTER1_PORT
        };
        let a_port = match wan {
            Some(w) => self.relay(procs, !tcp, ROUTER1_PORT, w)?,
            None => ROUTER1_PORT,
        };
        a.push_str(&format!("upstream: [{scheme}127.0.0.1:{a_port}]\n"));
        b.push_str(&format!("upstream: [{scheme}127.0.0.1:{b_port}]\n"));
        procs.push(self.start_proxy("proxy-a", a)?);
        procs.push(self.start_proxy("proxy-b", b)?);
        Ok(())
    }

    /// Proxy to proxy with two proxies on side A: `proxy-a2` exports the topics matching
    /// `heavy`, `proxy-a` the rest of `topic` (a `re:` pattern) and imports the echoes. Both
    /// dial B (through the relay on a wide-area path: one flow each, as two connections
    /// over one path). With `pair`, `proxy-b2` imports the heavy topics (and `proxy-a2`
    /// dials it), `proxy-b` the rest.
    fn start_second_proxy(
        &self,
        procs: &mut Vec<Proc>,
        topic: &str,
        (heavy, pair): (&str, bool),
        wan: Option<Wan>,
    ) -> Result<(), String> {
        let Some(all) = topic.strip_prefix("re:") else {
            return Err("a second proxy splits a pattern's topics: give a re: pattern".into());
        };
        // proxy_yaml's entry for the pattern, with the heavy topics denied.
        let allow = format!("allow: ['{all}']");
        let deny_heavy = |yaml: String| -> Result<String, String> {
            if !yaml.contains(&allow) {
                return Err(format!("no `{allow}` entry to add a deny to"));
            }
            Ok(yaml.replacen(&allow, &format!("{allow}\n    deny: ['{heavy}']"), 1))
        };
        let echo = super::flows::ECHO_PATTERN;
        let sealed = (true, None);
        let heavy_only = |id: &str, domain: u32, side: &str| {
            format!(
                "id: {id}\npki: {}\n\
                 dds: {{domain: {domain}, interfaces: [lo], peers: [127.0.0.1]}}\n\
                 realms: {{lab: {}}}\n\
                 {side}:\n  - allow: ['{heavy}']\n    realm: lab\n",
                self.pki.display(),
                self.realm.display(),
            )
        };
        let a = deny_heavy(self.proxy_yaml("proxy-a", ROAM_DOMAINS.0, sealed, topic, echo))?;
        let a2 = heavy_only("proxy-a2", ROAM_DOMAINS.0, "exports");
        let mut b = self.proxy_yaml("proxy-b", ROAM_DOMAINS.1, sealed, echo, topic);
        let mut listeners = vec![ROUTER1_PORT];
        if pair {
            b = deny_heavy(b)?;
            let mut b2 = heavy_only("proxy-b2", ROAM_DOMAINS.1, "imports");
            b2.push_str(&format!("listen: 127.0.0.1:{ROUTER2_PORT}\n"));
            let b2 = self.start_proxy("proxy-b2", b2)?;
            b2.wait_line(Duration::from_secs(10), |l| l.starts_with("listening"))?;
            procs.push(b2);
            listeners.push(ROUTER2_PORT);
        }
        b.push_str(&format!("listen: 127.0.0.1:{ROUTER1_PORT}\n"));
        let b = self.start_proxy("proxy-b", b)?;
        b.wait_line(Duration::from_secs(10), |l| l.starts_with("listening"))?;
        procs.push(b);
        let ports = match wan {
            Some(w) => self.relays(procs, true, &listeners, w)?,
            None => listeners,
        };
        // proxy-a2 dials the last listener: proxy-b2 when there is one.
        let dial = [
            (ports[0], "proxy-a", a),
            (ports[ports.len() - 1], "proxy-a2", a2),
        ];
        for (port, id, mut yaml) in dial {
            yaml.push_str(&format!("upstream: [127.0.0.1:{port}]\n"));
            procs.push(self.start_proxy(id, yaml)?);
        }
        Ok(())
    }

    /// Starts `roam proxy` with the configuration `yaml` (plus its metrics file).
    fn start_proxy(&self, id: &str, yaml: String) -> Result<Proc, String> {
        let path = self.dir.join(format!("{id}.yaml"));
        let metrics = self.metrics_file(id)?;
        let yaml = format!("{yaml}metrics_file: {}\n", metrics.display());
        std::fs::write(&path, yaml).map_err(|e| e.to_string())?;
        let mut p = Proc::start(
            id,
            &self.roam,
            &["proxy".into(), "-c".into(), path.to_string_lossy().into()],
        )?;
        p.metrics_file = Some(metrics);
        Ok(p)
    }

    /// Where roam process `id` keeps its metrics snapshot; a previous run's is removed, so
    /// what the lab reads is this run's.
    fn metrics_file(&self, id: &str) -> Result<PathBuf, String> {
        let path = self.dir.join(format!("{id}.metrics.json"));
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(format!("{}: {e}", path.display()))
            }
            _ => Ok(path),
        }
    }

    fn proxy_yaml(
        &self,
        id: &str,
        domain: u32,
        (encrypt, link): (bool, Option<&str>),
        export: &str,
        import: &str,
    ) -> String {
        format!(
            "id: {id}\npki: {}\n\
             dds: {{domain: {domain}, interfaces: [lo], peers: [127.0.0.1]}}\n\
             realms: {{lab: {}}}\nencrypt_payloads: {encrypt}\n\
             {}\
             exports:\n  - {}\n    realm: lab\n\
             imports:\n  - {}\n    realm: lab\n",
            self.pki.display(),
            self.realm.display(),
            link.map_or(String::new(), |l| format!("link: {{{l}}}\n")),
            entry(export),
            entry(import),
        )
    }

    fn start_zenoh(
        &self,
        procs: &mut Vec<Proc>,
        link: ZenohLink,
        wan: Option<Wan>,
    ) -> Result<(), String> {
        let quic = link == ZenohLink::Quic;
        let exe = self
            .zenoh
            .as_deref()
            .ok_or("the Zenoh bridge is not built (bench/zenoh-bridge/build.sh)")?;
        let proto = match link {
            ZenohLink::Tcp => "tcp",
            ZenohLink::TlsMutual => "tls",
            ZenohLink::Quic => "quic",
        };
        let tls = self.dir.join("zenoh-tls");
        let bridge =
            |domain: u32, listen: Option<u16>, connect: Option<u16>| -> Result<Proc, String> {
                let mut args = vec!["--domain".to_string(), domain.to_string()];
                if let Some(p) = listen {
                    args.extend(["--listen".into(), format!("{proto}/127.0.0.1:{p}")]);
                }
                if let Some(p) = connect {
                    args.extend(["--connect".into(), format!("{proto}/127.0.0.1:{p}")]);
                }
                if link != ZenohLink::Tcp {
                    args.extend(["--tls-dir".into(), tls.to_string_lossy().into()]);
                }
                if link == ZenohLink::TlsMutual {
                    args.push("--mtls".into());
                }
                let p = Proc::start(&format!("zenoh-{domain}"), exe, &args)?;
                p.wait_line(Duration::from_secs(20), |l| l == "ready")?;
                Ok(p)
            };
        procs.push(bridge(ZENOH_DOMAINS.1, Some(ZENOH_PORT), None)?);
        let port = match wan {
            Some(w) => self.relay(procs, quic, ZENOH_PORT, w)?,
            None => ZENOH_PORT,
        };
        procs.push(bridge(ZENOH_DOMAINS.0, None, Some(port))?);
        Ok(())
    }
}

/// A configuration entry for `name`: a ROS 2 topic, or with `dds:` a plain DDS topic
/// (ddsperf's), forwarded under its DDS name; with `re:` every topic whose name matches
/// the regex (`allow:`: the local publishers' topics in `exports:`, subscribers' in
/// `imports:`).
fn entry(name: &str) -> String {
    if let Some(re) = name.strip_prefix("re:") {
        return format!("allow: ['{re}']");
    }
    match name.strip_prefix("dds:") {
        Some(dds) => format!("dds_topic: {dds}"),
        None => format!("topic: {name}"),
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A started system: its processes (stopped on drop) and where to attach source and sink.
pub struct Running {
    pub procs: Vec<Proc>,
    pub domain_a: u32,
    pub domain_b: u32,
    pub started: Instant,
    /// The relay's counters file, on a wide-area path (read it after [`Running::stop`]).
    pub relay_stats: Option<PathBuf>,
}

impl Running {
    /// Stops every process: SIGTERM to all at once (one `kill`), so each roam process takes
    /// its final snapshot while its links are still up, then waits for each. Returns what
    /// roam's processes measured at their hops, from their metrics files.
    pub fn stop(self) -> Vec<super::hops::Hop> {
        let pids: Vec<String> = self.procs.iter().map(|p| p.pid().to_string()).collect();
        if !pids.is_empty() {
            let _ = std::process::Command::new("kill").args(&pids).status();
        }
        let mut hops = Vec::new();
        for mut p in self.procs {
            p.stop(Duration::from_secs(3));
            let Some(path) = &p.metrics_file else {
                continue;
            };
            // Written at start and replaced whole at a clean exit: a process that had to be
            // killed leaves its first snapshot, and the report shows its hops as unmeasured.
            match roam_edge::metrics::MetricsFile::read(path) {
                Ok(s) => hops.extend(super::hops::from_snapshot(&p.name, &s)),
                Err(e) => eprintln!("    {}: {e}", p.name),
            }
        }
        hops
    }
}
