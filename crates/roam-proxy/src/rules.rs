//! The proxy's rules (`rules:` in its file, docs/rules.md): loading, reloading on SIGHUP,
//! and evaluating them on what the proxy exports and imports.
//!
//! The language and its evaluator are `roam_rules` (pure); this file gives it what only the
//! proxy knows: the ROS topic and type, the publishing node (from `ros_discovery_info`,
//! [`super::nodes`]), the realm, the peer, fields decoded with the type's definition, and
//! the clock. One engine serves every topic of the proxy, behind a mutex (the evaluation is
//! a few string comparisons per rule; decoding happens only for rules that use FIELD or
//! MESSAGE).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use roam_config::rules::{load_file, RulesFileError};
use roam_msg::MessageType;
use roam_rules::{Content, Engine, Message, Module, Rules, Verdict};
use tokio::sync::watch;
use tracing::{info, warn};

use super::rules_log::{LogFiles, LogMessage};

/// Messages larger than this are not decoded for FIELD or MESSAGE (those conditions then do
/// not hold): rules must not turn an image into megabytes of JSON per frame.
pub const MAX_DECODED: usize = 1 << 20;

/// The proxy's rules and their state, shared by every export and import.
pub struct ProxyRules {
    path: Option<PathBuf>,
    engine: Mutex<Engine>,
    /// False while there are no rules: the hot path skips the lock.
    active: AtomicBool,
    /// Whether a rule names a sender (NODE or PEER): else the export does not look them up.
    reads_sender: AtomicBool,
    /// Bumped on every reload, so exports prepare the publishers of new Copy targets.
    generation: watch::Sender<u64>,
    /// The files of `Log` actions.
    logs: LogFiles,
}

/// Whether any rule has a NODE or PEER condition.
fn names_sender(rules: &Rules) -> bool {
    rules.rules().iter().any(|r| r.binds_sender())
}

/// The files the `Log` actions of `rules` name.
fn log_files(rules: &Rules) -> Vec<String> {
    rules
        .rules()
        .iter()
        .flat_map(|r| r.actions.iter())
        .filter_map(|a| match a {
            roam_rules::Action::Log(f) => Some(f.clone()),
            _ => None,
        })
        .collect()
}

impl ProxyRules {
    /// The rules of `path`, or none.
    pub fn load(path: Option<&Path>) -> Result<Arc<ProxyRules>, RulesFileError> {
        let rules = match path {
            Some(p) => load_file(p)?,
            None => Rules::default(),
        };
        let active = !rules.rules().is_empty();
        let rules_arc = Arc::new(rules);
        let rules = &*rules_arc;
        if let Some(p) = path {
            info!(target: "roam::rules", file = %p.display(), rules = rules.rules().len(), "rules loaded");
        }
        Ok(Arc::new(ProxyRules {
            path: path.map(Path::to_path_buf),
            engine: Mutex::new(Engine::new(rules_arc.clone())),
            active: AtomicBool::new(active),
            reads_sender: AtomicBool::new(names_sender(&rules_arc)),
            generation: watch::Sender::new(0),
            logs: LogFiles::new(
                path.and_then(Path::parent)
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new(".")),
            ),
        }))
    }

    fn engine(&self) -> MutexGuard<'_, Engine> {
        self.engine.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether any rule is in force: without one, callers skip even gathering what the
    /// rules would look at (a lock and an allocation per message on the hot path).
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    /// Whether a rule names a sender (NODE or PEER): without one, the writer's node and
    /// participant need not be looked up per message.
    pub fn reads_sender(&self) -> bool {
        self.reads_sender.load(Ordering::Relaxed)
    }

    /// Whether the proxy has a rules file (then SIGHUP reloads it).
    pub fn has_file(&self) -> bool {
        self.path.is_some()
    }

    /// Reads the file again. A file that does not load leaves the current rules in force
    /// (the error, with its line and column, is logged). The new rules start with fresh
    /// Limit buckets and figures; the old figures are logged first.
    pub fn reload(&self) {
        let Some(path) = &self.path else {
            info!(target: "roam::rules", "SIGHUP: no rules file configured");
            return;
        };
        match load_file(path) {
            Ok(rules) => {
                self.log_figures(true);
                let n = rules.rules().len();
                self.logs.retain(&log_files(&rules));
                let mut e = self.engine();
                self.reads_sender
                    .store(names_sender(&rules), Ordering::Relaxed);
                *e = Engine::new(Arc::new(rules));
                self.active.store(n > 0, Ordering::Relaxed);
                drop(e);
                self.generation.send_modify(|g| *g += 1);
                info!(target: "roam::rules", file = %path.display(), rules = n, "rules reloaded");
            }
            Err(e) => {
                warn!(target: "roam::rules", "rules not reloaded, the previous ones stay in force: {e}")
            }
        }
    }

    /// Follows reloads (the value changes on each).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Copy targets that can apply to `topic` under the current rules.
    pub fn copy_targets(&self, topic: &str) -> Vec<String> {
        if !self.active.load(Ordering::Relaxed) {
            return Vec::new();
        }
        self.engine().copy_targets(topic)
    }

    /// Evaluates the rules on one message, and hands it to the files of matching `Log`
    /// actions. `schema`: the type's definition, if known, for FIELD and MESSAGE; `definition`
    /// its ros2msg text (the schema of a Log file); `source_time_ns`: its publisher's source
    /// timestamp, when known (a Log file's publish time).
    pub fn evaluate(
        &self,
        m: &Message,
        schema: Option<&MessageType>,
        definition: Option<&str>,
        cdr: &[u8],
        source_time_ns: Option<u64>,
    ) -> Verdict {
        if !self.active.load(Ordering::Relaxed) {
            return Verdict::default();
        }
        let mut content = Decoded {
            schema,
            cdr,
            value: None,
        };
        let v = self.engine().evaluate(m, &mut content, Instant::now());
        if !v.logs.is_empty() {
            let msg = LogMessage {
                topic: m.topic,
                dds_type: m.type_name,
                definition,
                cdr,
                source_time_ns,
            };
            self.logs.write(&v.logs, &msg);
        }
        v
    }

    /// Finishes the Log files (the proxy stops).
    pub fn finish_logs(&self) {
        self.logs.finish_all();
    }

    /// Logs drops by cause and the figures of Display rules (and, with `all`, of Monitor
    /// rules too: at reload and at exit).
    pub fn log_figures(&self, all: bool) {
        if !self.active.load(Ordering::Relaxed) {
            return;
        }
        let e = self.engine();
        let d = e.drops();
        info!(target: "roam::rules", filtered = d.filtered, denied = d.denied, limited = d.limited, spoofed = d.spoofed, "rule drops");
        for f in e.figures(Instant::now()) {
            if !all && f.module != Module::Display {
                continue;
            }
            info!(
                target: "roam::rules",
                line = f.line,
                rule = %f.rule,
                count = ?f.count,
                average_bytes_per_s = ?f.average_bytes_per_s.map(|a| a.round()),
                max_bytes = ?f.max_bytes,
                min_bytes = ?f.min_bytes,
                "{}",
                f.module.name().to_lowercase()
            );
        }
    }
}

/// A gateway's doors ask the same rules about what their clients publish and receive: NODE
/// is unknown there, PEER is the client's identity for what it publishes.
impl roam_gateway::rules::MessageRules for ProxyRules {
    fn passes(
        &self,
        m: &roam_gateway::rules::RuledMessage<'_>,
        schema: Option<&MessageType>,
        cdr: &[u8],
    ) -> bool {
        if !self.is_active() {
            return true;
        }
        let ty = ros_type(m.dds_type);
        let msg = Message {
            topic: m.topic,
            type_name: &ty,
            node: None,
            realm: m.realm,
            peer: m.peer,
            size: cdr.len(),
        };
        self.evaluate(&msg, schema, None, cdr, None).passes()
    }
}

/// The ROS name of a DDS type (`std_msgs::msg::dds_::String_` -> `std_msgs/msg/String`);
/// the DDS name itself for non-ROS types.
pub fn ros_type(dds_type: &str) -> String {
    roam_msg::TypeName::from_dds(dds_type)
        .map(|t| t.full())
        .unwrap_or_else(|_| dds_type.to_string())
}

/// A message decoded on first use, with its definition.
struct Decoded<'a> {
    schema: Option<&'a MessageType>,
    cdr: &'a [u8],
    value: Option<Option<serde_json::Value>>,
}

impl Decoded<'_> {
    fn value(&mut self) -> Option<&serde_json::Value> {
        let (schema, cdr) = (self.schema, self.cdr);
        self.value
            .get_or_insert_with(|| {
                let ty = schema?;
                if cdr.len() > MAX_DECODED {
                    return None;
                }
                roam_msg::json::cdr_to_value(ty, cdr).ok()
            })
            .as_ref()
    }
}

impl Content for Decoded<'_> {
    fn field(&mut self, path: &str) -> Option<String> {
        let mut v = self.value()?;
        for seg in path.split('.') {
            v = match v {
                serde_json::Value::Object(m) => m.get(seg)?,
                serde_json::Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    }

    fn message(&mut self) -> Option<String> {
        self.value().map(|v| v.to_string())
    }
}
