//! `allow:`/`deny:` entries of a proxy's file: regexes over local ROS names, per kind of
//! endpoint, as the Zenoh ROS 2 bridge's `allow`/`deny` have them.
//!
//! ```yaml
//! exports:
//!   - allow: ['^/camera/.*']                  # a list: the side's default kind
//!     realm: warehouse                        #   (publishers here)
//!   - allow: {publishers: ['^/tf$', '^/odom$']}
//!     deny: {publishers: ['^/camera/debug']}
//!     realm: warehouse
//! imports:
//!   - allow: {subscribers: ['^/cmd_vel$']}    # or a list: subscribers
//!     realm: warehouse
//! ```
//!
//! An export pattern exports every topic a local publisher writes whose name matches; an
//! import pattern imports, from the realm, every topic a local subscriber reads whose name
//! matches (realm-side under the same name, in the proxy's namespace), once the first such
//! subscriber appears. Services and actions are named one by one (`service:`, `action:`):
//! the kinds for their servers and clients are recognised and refused with that advice.

use std::collections::BTreeMap;

use regex::Regex;
use serde::Deserialize;

use crate::config_doc::{ConfigError, Doc, FieldPath};

/// What `allow:` or `deny:` says: a list for the side's default kind, or lists per kind.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Patterns {
    List(Vec<String>),
    Kinds(BTreeMap<String, Vec<String>>),
}

/// Which list of entries the patterns are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Exports,
    Imports,
}

impl Side {
    /// The kind of endpoint whose topics the side's patterns select.
    fn kind(self) -> &'static str {
        match self {
            Side::Exports => "publishers",
            Side::Imports => "subscribers",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Side::Exports => "exports",
            Side::Imports => "imports",
        }
    }
}

/// The Zenoh bridge's kinds that name services' and actions' servers and clients.
const CALL_KINDS: [&str; 4] = [
    "service_servers",
    "action_servers",
    "service_clients",
    "action_clients",
];

/// Topics selected by regexes over their local names: any of `allow` and none of `deny`.
#[derive(Debug, Clone)]
pub struct TopicPatterns {
    pub allow: Vec<Regex>,
    pub deny: Vec<Regex>,
    pub realm: String,
}

impl TopicPatterns {
    pub fn matches(&self, local: &str) -> bool {
        self.allow.iter().any(|r| r.is_match(local)) && !self.deny.iter().any(|r| r.is_match(local))
    }

    /// Checks and compiles an entry's `allow`/`deny` (at `entry`, in `side`).
    pub fn parse(
        doc: &Doc,
        entry: &FieldPath,
        side: Side,
        allow: Option<&Patterns>,
        deny: Option<&Patterns>,
        realm: &str,
    ) -> Result<Self, ConfigError> {
        let allow = regexes(doc, &entry.clone().key("allow"), side, allow)?;
        let deny = regexes(doc, &entry.clone().key("deny"), side, deny)?;
        if allow.is_empty() {
            return Err(doc.err(
                &entry
                    .clone()
                    .key(if deny.is_empty() { "allow" } else { "deny" }),
                format!(
                    "deny without allow {} nothing; add allow: ['.*']",
                    side.key()
                ),
            ));
        }
        Ok(TopicPatterns {
            allow,
            deny,
            realm: realm.to_string(),
        })
    }
}

/// The regexes of one `allow:` or `deny:` (at `at`), for the side's topic kind.
fn regexes(
    doc: &Doc,
    at: &FieldPath,
    side: Side,
    p: Option<&Patterns>,
) -> Result<Vec<Regex>, ConfigError> {
    let (list, at) = match p {
        None => return Ok(Vec::new()),
        Some(Patterns::List(l)) => (l, at.clone()),
        Some(Patterns::Kinds(kinds)) => {
            if let Some(kind) = kinds.keys().find(|k| *k != side.kind()) {
                return Err(doc.err(&at.clone().key(kind), wrong_kind(kind, side)));
            }
            match kinds.get(side.kind()) {
                Some(l) => (l, at.clone().key(side.kind())),
                None => return Ok(Vec::new()),
            }
        }
    };
    list.iter()
        .enumerate()
        .map(|(j, p)| {
            Regex::new(p)
                .map_err(|e| doc.err(&at.clone().index(j), format!("bad regex {p:?}: {e}")))
        })
        .collect()
}

/// Why a kind cannot be in `side`'s patterns.
fn wrong_kind(kind: &str, side: Side) -> String {
    let other = match side {
        Side::Exports => Side::Imports,
        Side::Imports => Side::Exports,
    };
    if kind == other.kind() {
        return format!(
            "`{kind}` belongs in `{}:` (the topics this network's {kind} use)",
            other.key()
        );
    }
    match CALL_KINDS.contains(&kind) {
        true => format!(
            "patterns for `{kind}` are not supported: name each service or action in its own entry (`service:`, `action:`)"
        ),
        false => format!(
            "unknown kind `{kind}`: in `{}:` patterns select `{}` (or give a list)",
            side.key(),
            side.kind()
        ),
    }
}
