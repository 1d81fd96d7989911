//! The walk through mqtt_client's parameter tree: each section's keys, defaults and rules,
//! every mistake located by its path ([`super::ParamsError`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_yaml_ng::{Mapping, Value};

use super::*;

/// Walks the parameter tree, recording where it is (for errors) and what it warns about.
pub(super) struct Walk<'a> {
    pub(super) path: Vec<PathSeg>,
    pub(super) warnings: Vec<String>,
    base: &'a Path,
}

impl<'a> Walk<'a> {
    pub(super) fn new(base: &'a Path) -> Self {
        Walk {
            path: Vec::new(),
            warnings: Vec::new(),
            base,
        }
    }

    pub(super) fn err(&self, key: &str, message: impl Into<String>) -> ParamsError {
        let mut path = self.path.clone();
        if !key.is_empty() {
            path.push(PathSeg::Key(key.into()));
        }
        ParamsError {
            path,
            message: message.into(),
        }
    }

    pub(super) fn map(&self, v: &Value) -> Result<Mapping, ParamsError> {
        match v {
            Value::Mapping(m) => Ok(m.clone()),
            Value::Null => Ok(Mapping::new()),
            _ => Err(self.err("", "expected a mapping")),
        }
    }

    /// Warns about keys the schema does not have: mqtt_client ignores them silently, so a
    /// user's file may carry some, but a typo must not go unnoticed.
    pub(super) fn known(&mut self, m: &Mapping, keys: &[&str]) -> Result<(), ParamsError> {
        for k in m.keys() {
            let name = key_text(k);
            if !keys.contains(&name.as_str()) {
                let mut path = self.path.clone();
                path.push(PathSeg::Key(name));
                self.warnings.push(format!(
                    "{}: unknown parameter, ignored (expected one of: {})",
                    show_path(&path),
                    keys.join(", ")
                ));
            }
        }
        Ok(())
    }

    fn string(&self, m: &Mapping, key: &str) -> Result<Option<String>, ParamsError> {
        match m.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(Value::Bool(b)) => Ok(Some(b.to_string())),
            Some(_) => Err(self.err(key, "expected a string")),
        }
    }

    fn boolean(&self, m: &Mapping, key: &str, default: bool) -> Result<bool, ParamsError> {
        match m.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(self.err(key, "expected true or false")),
        }
    }

    fn int(&self, m: &Mapping, key: &str, default: u64, max: u64) -> Result<u64, ParamsError> {
        match m.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Number(n)) => match n.as_u64() {
                Some(v) if v <= max => Ok(v),
                _ => Err(self.err(key, format!("expected a whole number from 0 to {max}"))),
            },
            Some(_) => Err(self.err(key, "expected a number")),
        }
    }

    fn qos(&self, m: &Mapping, key: &str) -> Result<MqttQos, ParamsError> {
        Ok(match self.int(m, key, 0, 2)? {
            0 => MqttQos::AtMostOnce,
            1 => MqttQos::AtLeastOnce,
            _ => MqttQos::ExactlyOnce,
        })
    }

    fn file(&self, m: &Mapping, key: &str) -> Result<Option<PathBuf>, ParamsError> {
        Ok(self
            .string(m, key)?
            .filter(|s| !s.is_empty())
            .map(|s| self.base.join(s)))
    }

    fn enter<T>(
        &mut self,
        key: &str,
        f: impl FnOnce(&mut Self) -> Result<T, ParamsError>,
    ) -> Result<T, ParamsError> {
        self.path.push(PathSeg::Key(key.into()));
        let r = f(self);
        self.path.pop();
        r
    }

    pub(super) fn broker(&mut self, v: Option<&Value>) -> Result<Broker, ParamsError> {
        self.enter("broker", |w| {
            let m = v.map(|v| w.map(v)).transpose()?.unwrap_or_default();
            w.known(&m, &["host", "port", "user", "pass", "tls"])?;
            let tls = match m.get("tls") {
                Some(t) => w.enter("tls", |w| {
                    let t = w.map(t)?;
                    w.known(&t, &["enabled", "ca_certificate"])?;
                    Ok(match w.boolean(&t, "enabled", false)? {
                        true => Some(BrokerTls {
                            ca_certificate: w.file(&t, "ca_certificate")?.unwrap_or_else(|| {
                                PathBuf::from("/etc/ssl/certs/ca-certificates.crt")
                            }),
                        }),
                        false => None,
                    })
                })?,
                None => None,
            };
            let host = w.string(&m, "host")?.unwrap_or_else(|| "localhost".into());
            if host.is_empty() {
                return Err(w.err("host", "must not be empty"));
            }
            Ok(Broker {
                host,
                port: w.int(&m, "port", 1883, 65535)? as u16,
                user: w.string(&m, "user")?,
                pass: w.string(&m, "pass")?.unwrap_or_default(),
                tls,
            })
        })
    }

    pub(super) fn client(&mut self, v: Option<&Value>, tls: bool) -> Result<Client, ParamsError> {
        self.enter("client", |w| {
            let m = v.map(|v| w.map(v)).transpose()?.unwrap_or_default();
            w.known(
                &m,
                &[
                    "id",
                    "buffer",
                    "last_will",
                    "clean_session",
                    "keep_alive_interval",
                    "max_inflight",
                    "tls",
                    "mqtt_version",
                ],
            )?;
            let id = w.string(&m, "id")?.unwrap_or_default();
            let buffer_size = match m.get("buffer") {
                Some(b) => w.enter("buffer", |w| {
                    let b = w.map(b)?;
                    // mqtt_client reads only these two (an `enabled` as in some of its examples is
                    // ignored there, so it gets the unknown key's warning here too).
                    w.known(&b, &["size", "directory"])?;
                    if b.contains_key("directory") {
                        w.warnings.push(
                            "client.buffer.directory is not used: roam buffers in memory".into(),
                        );
                    }
                    w.int(&b, "size", 0, 1 << 20)
                })? as usize,
                None => 0,
            };
            let buffer_size = if buffer_size > 0 && id.is_empty() {
                w.warnings.push(
                    "client.buffer needs a client.id (as in mqtt_client): nothing is buffered"
                        .into(),
                );
                0
            } else {
                buffer_size
            };
            let last_will = match m.get("last_will") {
                Some(l) => w.enter("last_will", |w| {
                    let l = w.map(l)?;
                    w.known(&l, &["topic", "message", "qos", "retained"])?;
                    Ok(match w.string(&l, "topic")? {
                        Some(topic) => Some(LastWill {
                            topic,
                            message: w.string(&l, "message")?.unwrap_or_else(|| "offline".into()),
                            qos: w.qos(&l, "qos")?,
                            retained: w.boolean(&l, "retained", false)?,
                        }),
                        None => None,
                    })
                })?,
                None => None,
            };
            let keep_alive = match m.get("keep_alive_interval") {
                None | Some(Value::Null) => Duration::from_secs(60),
                Some(Value::Number(n)) => match n.as_f64() {
                    Some(s) if (1.0..=65535.0).contains(&s) => Duration::from_secs_f64(s),
                    _ => {
                        return Err(
                            w.err("keep_alive_interval", "expected seconds from 1 to 65535")
                        )
                    }
                },
                Some(_) => return Err(w.err("keep_alive_interval", "expected seconds")),
            };
            let client_tls = match m.get("tls") {
                Some(t) => w.enter("tls", |w| {
                    let t = w.map(t)?;
                    w.known(
                        &t,
                        &[
                            "certificate",
                            "key",
                            "password",
                            "version",
                            "verify",
                            "alpn_protos",
                            "server_cert_auth",
                        ],
                    )?;
                    if !tls && !t.is_empty() {
                        w.warnings.push(
                            "client.tls is ignored: broker.tls.enabled is false (as in mqtt_client)"
                                .into(),
                        );
                    }
                    for unused in ["password", "version", "verify"] {
                        if t.contains_key(unused) {
                            w.warnings.push(format!(
                                "client.tls.{unused} is not used: roam speaks TLS 1.2 and 1.3 and always verifies unless server_cert_auth is false; keys are unencrypted PEM"
                            ));
                        }
                    }
                    let alpn = match t.get("alpn_protos") {
                        None | Some(Value::Null) => Vec::new(),
                        Some(Value::Sequence(s)) => s
                            .iter()
                            .map(|p| p.as_str().map(str::to_string))
                            .collect::<Option<Vec<_>>>()
                            .ok_or_else(|| w.err("alpn_protos", "expected a list of strings"))?,
                        Some(_) => return Err(w.err("alpn_protos", "expected a list of strings")),
                    };
                    let c = ClientTls {
                        certificate: w.file(&t, "certificate")?,
                        key: w.file(&t, "key")?,
                        server_cert_auth: w.boolean(&t, "server_cert_auth", true)?,
                        alpn_protos: alpn,
                    };
                    if c.certificate.is_some() != c.key.is_some() {
                        return Err(w.err("key", "certificate and key go together"));
                    }
                    Ok(c)
                })?,
                None => ClientTls {
                    certificate: None,
                    key: None,
                    server_cert_auth: true,
                    alpn_protos: Vec::new(),
                },
            };
            let mqtt_version = match w.string(&m, "mqtt_version")?.as_deref() {
                None | Some("3.1.1") | Some("311") | Some("4") => MqttVersion::V311,
                Some("5") | Some("5.0") => MqttVersion::V5,
                Some(other) => {
                    return Err(w.err(
                        "mqtt_version",
                        format!("`{other}`: expected 3.1.1 or 5"),
                    ))
                }
            };
            Ok(Client {
                id,
                buffer_size,
                last_will,
                clean_session: w.boolean(&m, "clean_session", true)?,
                keep_alive,
                max_inflight: w.int(&m, "max_inflight", 65535, 65535)?.max(1) as u16,
                tls: client_tls,
                mqtt_version,
            })
        })
    }

    /// The names listed under `list_key`, each with its sub-mapping (the entry).
    fn entries(
        &mut self,
        m: &Mapping,
        list_key: &str,
    ) -> Result<Vec<(String, Mapping)>, ParamsError> {
        let names: Vec<String> = match m.get(list_key) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Sequence(s)) => {
                let mut out = Vec::new();
                for (i, v) in s.iter().enumerate() {
                    match v.as_str() {
                        Some(n) if !n.is_empty() => out.push(n.to_string()),
                        _ => {
                            let mut path = self.path.clone();
                            path.push(PathSeg::Key(list_key.into()));
                            path.push(PathSeg::Index(i));
                            return Err(ParamsError {
                                path,
                                message: "expected a topic name".into(),
                            });
                        }
                    }
                }
                out
            }
            Some(_) => return Err(self.err(list_key, "expected a list of topic names")),
        };
        for k in m.keys() {
            let k = key_text(k);
            if k != list_key && !names.contains(&k) {
                return Err(self.err(
                    &k,
                    format!("`{k}` is configured but not listed in {list_key}"),
                ));
            }
        }
        let mut out = Vec::new();
        for (i, n) in names.iter().enumerate() {
            if names[..i].contains(n) {
                let mut path = self.path.clone();
                path.push(PathSeg::Key(list_key.into()));
                path.push(PathSeg::Index(i));
                return Err(ParamsError {
                    path,
                    message: format!("`{n}` is listed twice"),
                });
            }
            let entry = match m.get(n.as_str()) {
                Some(v) => self.enter(n, |w| w.map(v))?,
                None => {
                    return Err(self.err(
                        n,
                        format!("`{n}` is listed in {list_key} but has no settings"),
                    ))
                }
            };
            out.push((n.clone(), entry));
        }
        Ok(out)
    }

    fn ros_qos(
        &mut self,
        adv: &Mapping,
        auto_allowed: bool,
    ) -> Result<(Reliability, Durability), ParamsError> {
        let Some(q) = adv.get("qos") else {
            let d = if auto_allowed {
                (Reliability::Auto, Durability::Auto)
            } else {
                (Reliability::SystemDefault, Durability::SystemDefault)
            };
            return Ok(d);
        };
        self.enter("qos", |w| {
            let q = w.map(q)?;
            w.known(&q, &["reliability", "durability"])?;
            let auto = |w: &Self, key: &str| {
                if auto_allowed {
                    Ok(())
                } else {
                    Err(w.err(key, "`auto` is for ros2mqtt entries only"))
                }
            };
            let reliability = match w.string(&q, "reliability")?.as_deref() {
                None => {
                    if auto_allowed {
                        Reliability::Auto
                    } else {
                        Reliability::SystemDefault
                    }
                }
                Some("auto") => {
                    auto(w, "reliability")?;
                    Reliability::Auto
                }
                Some("system_default") => Reliability::SystemDefault,
                Some("reliable") => Reliability::Reliable,
                Some("best_effort") => Reliability::BestEffort,
                Some(o) => {
                    return Err(w.err(
                        "reliability",
                        format!("`{o}`: expected auto, system_default, reliable or best_effort"),
                    ))
                }
            };
            let durability = match w.string(&q, "durability")?.as_deref() {
                None => {
                    if auto_allowed {
                        Durability::Auto
                    } else {
                        Durability::SystemDefault
                    }
                }
                Some("auto") => {
                    auto(w, "durability")?;
                    Durability::Auto
                }
                Some("system_default") => Durability::SystemDefault,
                Some("volatile") => Durability::Volatile,
                Some("transient_local") => Durability::TransientLocal,
                Some(o) => {
                    return Err(w.err(
                        "durability",
                        format!(
                            "`{o}`: expected auto, system_default, volatile or transient_local"
                        ),
                    ))
                }
            };
            Ok((reliability, durability))
        })
    }

    pub(super) fn ros2mqtt(&mut self, v: Option<&Value>) -> Result<Vec<Ros2Mqtt>, ParamsError> {
        let Some(v) = v else { return Ok(Vec::new()) };
        self.enter("ros2mqtt", |w| {
            let m = w.map(v)?;
            let mut out = Vec::new();
            for (ros_topic, e) in w.entries(&m, "ros_topics")? {
                let entry = w.enter(&ros_topic.clone(), |w| {
                    w.known(
                        &e,
                        &[
                            "mqtt_topic",
                            "primitive",
                            "json",
                            "ros_type",
                            "inject_timestamp",
                            "advanced",
                            "realm",
                        ],
                    )?;
                    let mqtt_topic = w
                        .string(&e, "mqtt_topic")?
                        .filter(|t| !t.is_empty())
                        .ok_or_else(|| w.err("mqtt_topic", "required"))?;
                    check_mqtt_topic(&mqtt_topic).map_err(|m| w.err("mqtt_topic", m))?;
                    let primitive = w.boolean(&e, "primitive", false)?;
                    let mut json = w.boolean(&e, "json", false)?;
                    if primitive && json {
                        w.warnings.push(format!(
                            "primitive ROS topic '{ros_topic}' will not be published as json string"
                        ));
                        json = false;
                    }
                    let ros_type = w.string(&e, "ros_type")?.filter(|t| !t.is_empty());
                    if json && ros_type.is_none() {
                        return Err(w.err(
                            "ros_type",
                            "required with json: true (as in mqtt_client)",
                        ));
                    }
                    let mut inject_timestamp = w.boolean(&e, "inject_timestamp", false)?;
                    if inject_timestamp && (primitive || json) {
                        w.warnings.push(format!(
                            "timestamp will not be injected into {} messages on ROS topic '{ros_topic}'",
                            if primitive { "primitive" } else { "json string" }
                        ));
                        inject_timestamp = false;
                    }
                    let adv = e.get("advanced").map(|a| w.enter("advanced", |w| w.map(a)));
                    let adv = adv.transpose()?.unwrap_or_default();
                    let (queue_size, reliability, durability, mqtt_qos, retained) =
                        w.enter("advanced", |w| {
                            w.known(&adv, &["ros", "mqtt"])?;
                            let ros = adv.get("ros").map(|r| w.enter("ros", |w| w.map(r)));
                            let ros = ros.transpose()?.unwrap_or_default();
                            let (queue_size, rel, dur) = w.enter("ros", |w| {
                                w.known(&ros, &["queue_size", "qos"])?;
                                let q = w.int(&ros, "queue_size", 1, 1 << 20)?.max(1) as u32;
                                let (r, d) = w.ros_qos(&ros, true)?;
                                Ok((q, r, d))
                            })?;
                            let mq = adv.get("mqtt").map(|r| w.enter("mqtt", |w| w.map(r)));
                            let mq = mq.transpose()?.unwrap_or_default();
                            let (qos, retained) = w.enter("mqtt", |w| {
                                w.known(&mq, &["qos", "retained"])?;
                                Ok((w.qos(&mq, "qos")?, w.boolean(&mq, "retained", false)?))
                            })?;
                            Ok((queue_size, rel, dur, qos, retained))
                        })?;
                    Ok(Ros2Mqtt {
                        ros_topic: ros_topic.clone(),
                        mqtt_topic,
                        primitive,
                        json,
                        ros_type,
                        inject_timestamp,
                        queue_size,
                        reliability,
                        durability,
                        mqtt_qos,
                        retained,
                        realm: w.string(&e, "realm")?,
                    })
                })?;
                out.push(entry);
            }
            Ok(out)
        })
    }

    pub(super) fn mqtt2ros(&mut self, v: Option<&Value>) -> Result<Vec<Mqtt2Ros>, ParamsError> {
        let Some(v) = v else { return Ok(Vec::new()) };
        self.enter("mqtt2ros", |w| {
            let m = w.map(v)?;
            let mut out = Vec::new();
            for (mqtt_topic, e) in w.entries(&m, "mqtt_topics")? {
                check_mqtt_topic(&mqtt_topic).map_err(|msg| w.err(&mqtt_topic, msg))?;
                let entry = w.enter(&mqtt_topic.clone(), |w| {
                    w.known(
                        &e,
                        &[
                            "ros_topic",
                            "primitive",
                            "json",
                            "ros_type",
                            "advanced",
                            "realm",
                        ],
                    )?;
                    let ros_topic = w
                        .string(&e, "ros_topic")?
                        .filter(|t| !t.is_empty())
                        .ok_or_else(|| w.err("ros_topic", "required"))?;
                    let primitive = w.boolean(&e, "primitive", false)?;
                    let mut json = w.boolean(&e, "json", false)?;
                    if primitive && json {
                        w.warnings.push(format!(
                            "primitive MQTT topic '{mqtt_topic}' will not be parsed as json string"
                        ));
                        json = false;
                    }
                    let ros_type = w.string(&e, "ros_type")?.filter(|t| !t.is_empty());
                    if json && ros_type.is_none() {
                        return Err(
                            w.err("ros_type", "required with json: true (as in mqtt_client)")
                        );
                    }
                    let adv = e.get("advanced").map(|a| w.enter("advanced", |w| w.map(a)));
                    let adv = adv.transpose()?.unwrap_or_default();
                    let (mqtt_qos, queue_size, latched, reliability, durability) =
                        w.enter("advanced", |w| {
                            w.known(&adv, &["ros", "mqtt"])?;
                            let mq = adv.get("mqtt").map(|r| w.enter("mqtt", |w| w.map(r)));
                            let mq = mq.transpose()?.unwrap_or_default();
                            let qos = w.enter("mqtt", |w| {
                                w.known(&mq, &["qos"])?;
                                w.qos(&mq, "qos")
                            })?;
                            let ros = adv.get("ros").map(|r| w.enter("ros", |w| w.map(r)));
                            let ros = ros.transpose()?.unwrap_or_default();
                            let (q, latched, r, d) = w.enter("ros", |w| {
                                w.known(&ros, &["queue_size", "latched", "qos"])?;
                                let q = w.int(&ros, "queue_size", 1, 1 << 20)?.max(1) as u32;
                                let latched = w.boolean(&ros, "latched", false)?;
                                let (r, d) = w.ros_qos(&ros, false)?;
                                Ok((q, latched, r, d))
                            })?;
                            Ok((qos, q, latched, r, d))
                        })?;
                    Ok(Mqtt2Ros {
                        mqtt_topic: mqtt_topic.clone(),
                        ros_topic,
                        primitive,
                        json,
                        ros_type,
                        mqtt_qos,
                        queue_size,
                        latched,
                        reliability,
                        durability,
                        realm: w.string(&e, "realm")?,
                    })
                })?;
                out.push(entry);
            }
            Ok(out)
        })
    }
}

/// A topic the bridge may publish or subscribe: no wildcards (an entry is one topic, as in
/// mqtt_client), no NUL, within MQTT's length limit.
fn check_mqtt_topic(t: &str) -> Result<(), String> {
    if t.contains(['+', '#']) {
        return Err(format!("`{t}`: wildcards (+, #) cannot name one topic"));
    }
    if t.contains('\0') {
        return Err("a topic cannot contain NUL".into());
    }
    if t.len() > 65535 {
        return Err("longer than MQTT allows (65535 bytes)".into());
    }
    Ok(())
}

fn key_text(k: &Value) -> String {
    match k {
        Value::String(s) => s.clone(),
        other => serde_yaml_ng::to_string(other)
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
    }
}
