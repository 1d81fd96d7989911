//! `allow:`/`deny:` entries of a proxy's file: regexes over local ROS names, per kind of
//! endpoint, as the Zenoh ROS 2 bridge's `allow`/`deny` have them.
//!
//! ```yaml
//! exports:
//!   - allow: ['^/camera/.*']                  # a list: the side's default kind
//!     realm: warehouse                        #   (publishers here)
//!   - allow: {publishers: ['^/tf$', '^/odom$'], service_servers: ['^/map/'],
//!             action_servers: ['^/navigate']}
//!     deny: {publishers: ['^/camera/debug']}
//!     realm: warehouse
//! imports:
//!   - allow: {subscribers: ['^/cmd_vel$'],    # or a list: subscribers
//!             service_clients: ['.*'], action_clients: ['^/dock$']}
//!     realm: warehouse
//! ```
//!
//! An export pattern exports every topic a local publisher writes whose name matches, every
//! service a local server serves (`service_servers`) and every action a local action server
//! serves (`action_servers`); an import pattern imports, from the realm, every topic a local
//! subscriber reads, every service a local client calls (`service_clients`) and every action
//! a local action client uses (`action_clients`) whose name matches, once the first such
//! endpoint appears. Realm-side names are the local ones, in the proxy's namespace; a
//! service or action matched is forwarded as its own `service:` or `action:` entry would
//! forward it (convention `auto`). Service kinds never select an action's parts
//! (`<action>/_action/...`): the action kinds do.

use std::collections::BTreeMap;

use regex::Regex;
use serde::Deserialize;

use roam_config::doc::{ConfigError, Doc, FieldPath};

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
    fn key(self) -> &'static str {
        match self {
            Side::Exports => "exports",
            Side::Imports => "imports",
        }
    }

    /// The kinds a side's patterns may name, the default (a plain list's) first.
    fn kinds(self) -> [Kind; 3] {
        match self {
            Side::Exports => [Kind::Publishers, Kind::ServiceServers, Kind::ActionServers],
            Side::Imports => [Kind::Subscribers, Kind::ServiceClients, Kind::ActionClients],
        }
    }
}

/// The kinds of endpoint the Zenoh bridge's patterns name: which local endpoints make a
/// matching name cross.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Publishers,
    Subscribers,
    ServiceServers,
    ServiceClients,
    ActionServers,
    ActionClients,
}

impl Kind {
    const ALL: [Kind; 6] = [
        Kind::Publishers,
        Kind::Subscribers,
        Kind::ServiceServers,
        Kind::ServiceClients,
        Kind::ActionServers,
        Kind::ActionClients,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Kind::Publishers => "publishers",
            Kind::Subscribers => "subscribers",
            Kind::ServiceServers => "service_servers",
            Kind::ServiceClients => "service_clients",
            Kind::ActionServers => "action_servers",
            Kind::ActionClients => "action_clients",
        }
    }

    pub fn side(self) -> Side {
        match self {
            Kind::Publishers | Kind::ServiceServers | Kind::ActionServers => Side::Exports,
            _ => Side::Imports,
        }
    }

    /// What the kind's patterns select, for messages.
    fn selects(self) -> &'static str {
        match self {
            Kind::Publishers => "the topics this network's publishers write",
            Kind::Subscribers => "the topics this network's subscribers read",
            Kind::ServiceServers => "the services this network's servers serve",
            Kind::ServiceClients => "the services this network's clients call",
            Kind::ActionServers => "the actions this network's action servers serve",
            Kind::ActionClients => "the actions this network's action clients use",
        }
    }

    fn from_key(key: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.key() == key)
    }
}

/// Names of one kind selected by regexes over their local names: any of `allow` and none of
/// `deny`.
#[derive(Debug, Clone)]
pub struct Pattern {
    pub kind: Kind,
    pub allow: Vec<Regex>,
    pub deny: Vec<Regex>,
    pub realm: String,
}

impl Pattern {
    pub fn matches(&self, local: &str) -> bool {
        self.allow.iter().any(|r| r.is_match(local)) && !self.deny.iter().any(|r| r.is_match(local))
    }

    /// Checks and compiles an entry's `allow`/`deny` (at `entry`, in `side`): one pattern
    /// per kind it allows.
    pub fn parse(
        doc: &Doc,
        entry: &FieldPath,
        side: Side,
        allow: Option<&Patterns>,
        deny: Option<&Patterns>,
        realm: &str,
    ) -> Result<Vec<Self>, ConfigError> {
        let (allow_at, deny_at) = (entry.clone().key("allow"), entry.clone().key("deny"));
        let allow = regexes(doc, &allow_at, side, allow)?;
        let deny = regexes(doc, &deny_at, side, deny)?;
        if allow.iter().all(|(_, r, _)| r.is_empty()) {
            let nothing_denied = deny.iter().all(|(_, r, _)| r.is_empty());
            return Err(doc.err(
                if nothing_denied { &allow_at } else { &deny_at },
                format!(
                    "deny without allow {} nothing; add allow: ['.*']",
                    side.key()
                ),
            ));
        }
        let mut patterns = Vec::new();
        for kind in side.kinds() {
            let of = |l: &[(Kind, Vec<Regex>, FieldPath)]| {
                l.iter()
                    .find(|(k, _, _)| *k == kind)
                    .map(|(_, r, at)| (r.clone(), at.clone()))
            };
            match (of(&allow), of(&deny)) {
                (Some((allow, _)), deny) if !allow.is_empty() => patterns.push(Pattern {
                    kind,
                    allow,
                    deny: deny.map(|d| d.0).unwrap_or_default(),
                    realm: realm.to_string(),
                }),
                (_, Some((deny, at))) if !deny.is_empty() => {
                    return Err(doc.err(
                        &at,
                        format!(
                            "deny without allow selects no {}; add allow: {{{}: ['.*']}}",
                            kind.key(),
                            kind.key()
                        ),
                    ))
                }
                _ => {}
            }
        }
        Ok(patterns)
    }
}

/// The regexes of one `allow:` or `deny:` (at `at`), per kind, each with where it is.
fn regexes(
    doc: &Doc,
    at: &FieldPath,
    side: Side,
    p: Option<&Patterns>,
) -> Result<Vec<(Kind, Vec<Regex>, FieldPath)>, ConfigError> {
    let lists: Vec<(Kind, &Vec<String>, FieldPath)> = match p {
        None => return Ok(Vec::new()),
        Some(Patterns::List(l)) => vec![(side.kinds()[0], l, at.clone())],
        Some(Patterns::Kinds(kinds)) => {
            let mut lists = Vec::new();
            for (key, l) in kinds {
                let at = at.clone().key(key);
                match Kind::from_key(key) {
                    Some(kind) if kind.side() == side => lists.push((kind, l, at)),
                    _ => return Err(doc.err(&at, wrong_kind(key, side))),
                }
            }
            lists
        }
    };
    lists
        .into_iter()
        .map(|(kind, list, at)| {
            let compiled = list
                .iter()
                .enumerate()
                .map(|(j, p)| {
                    Regex::new(p)
                        .map_err(|e| doc.err(&at.clone().index(j), format!("bad regex {p:?}: {e}")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok((kind, compiled, at))
        })
        .collect()
}

/// Why a kind cannot be in `side`'s patterns.
fn wrong_kind(key: &str, side: Side) -> String {
    match Kind::from_key(key) {
        Some(kind) => format!(
            "`{key}` belongs in `{}:` ({})",
            kind.side().key(),
            kind.selects()
        ),
        None => {
            let kinds: Vec<String> = side
                .kinds()
                .iter()
                .map(|k| format!("`{}`", k.key()))
                .collect();
            format!(
                "unknown kind `{key}`: in `{}:` patterns select {} (or give a list: {})",
                side.key(),
                kinds.join(", "),
                side.kinds()[0].key()
            )
        }
    }
}
