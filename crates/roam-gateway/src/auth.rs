//! Who a client is and what it may do: bearer tokens listed in the gateway's configuration,
//! each with an identity, an optional expiry, and allow/deny patterns for what the identity
//! may subscribe to, publish and call. Pure: the caller passes the current time.
//!
//! Patterns are globs over ROS names: `*` matches within one name segment (`/robot/*` is
//! `/robot/odom`, not `/robot/arm/joint`), `**` across segments (`/robot/**`), `?` one
//! character. A name is allowed when an `allow` pattern matches it and no `deny` pattern
//! does; an empty `allow` allows nothing, so a token grants only what it lists.

use std::sync::Arc;

use globset::{GlobSet, GlobSetBuilder};
use ring::digest::{digest, SHA256};

/// What a client asks to do with a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Subscribe,
    Publish,
    /// Call a service (or an action).
    Call,
}

impl Action {
    pub fn verb(self) -> &'static str {
        match self {
            Action::Subscribe => "subscribe to",
            Action::Publish => "publish on",
            Action::Call => "call",
        }
    }
}

/// A pattern that is not a glob.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("pattern {pattern:?}: {why}")]
pub struct PatternError {
    pub pattern: String,
    pub why: String,
}

/// Allow and deny patterns for one action.
#[derive(Debug, Clone)]
pub struct Rule {
    allow: GlobSet,
    deny: GlobSet,
    /// Whether it allows every name (`**` or `/**` allowed, nothing denied).
    every_name: bool,
}

impl Rule {
    /// Allows what matches one of `allow` and none of `deny`.
    pub fn new(allow: &[String], deny: &[String]) -> Result<Rule, PatternError> {
        Ok(Rule {
            allow: globs(allow)?,
            deny: globs(deny)?,
            every_name: deny.is_empty() && allow.iter().any(|p| p == "**" || p == "/**"),
        })
    }

    /// Whether it allows every name there is.
    pub fn every_name(&self) -> bool {
        self.every_name
    }

    /// Everything (a gateway without authentication).
    pub fn everything() -> Rule {
        Rule::new(&["**".to_string()], &[]).unwrap_or_else(|_| Rule {
            allow: GlobSet::empty(),
            deny: GlobSet::empty(),
            every_name: false,
        })
    }

    pub fn allows(&self, name: &str) -> bool {
        self.allow.is_match(name) && !self.deny.is_match(name)
    }
}

fn globs(patterns: &[String]) -> Result<GlobSet, PatternError> {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        let glob = globset::GlobBuilder::new(p)
            .literal_separator(true)
            .build()
            .map_err(|e| PatternError {
                pattern: p.clone(),
                why: e.kind().to_string(),
            })?;
        b.add(glob);
    }
    b.build().map_err(|e| PatternError {
        pattern: patterns.join(", "),
        why: e.to_string(),
    })
}

/// What an identity may do.
#[derive(Debug, Clone)]
pub struct Permissions {
    pub subscribe: Rule,
    pub publish: Rule,
    pub call: Rule,
}

impl Permissions {
    pub fn everything() -> Permissions {
        Permissions {
            subscribe: Rule::everything(),
            publish: Rule::everything(),
            call: Rule::everything(),
        }
    }

    /// Whether every action is allowed on every name.
    pub fn unrestricted(&self) -> bool {
        self.subscribe.every_name() && self.publish.every_name() && self.call.every_name()
    }

    pub fn allows(&self, action: Action, name: &str) -> bool {
        match action {
            Action::Subscribe => self.subscribe.allows(name),
            Action::Publish => self.publish.allows(name),
            Action::Call => self.call.allows(name),
        }
    }
}

/// An authenticated client: its identity and what it may do, until when.
#[derive(Debug, Clone)]
pub struct Identity {
    pub name: String,
    pub permissions: Permissions,
    /// Unix seconds after which the token no longer admits anything.
    pub expires: Option<i64>,
}

impl Identity {
    /// The identity of every client of a gateway without authentication.
    pub fn anonymous() -> Identity {
        Identity {
            name: "anonymous".into(),
            permissions: Permissions::everything(),
            expires: None,
        }
    }

    /// Whether it may do `action` on `name` at `now` (Unix seconds).
    pub fn check(&self, action: Action, name: &str, now: i64) -> Result<(), Refused> {
        if let Some(at) = self.expires.filter(|at| now >= *at) {
            return Err(Refused::Expired {
                identity: self.name.clone(),
                at,
            });
        }
        if self.permissions.allows(action, name) {
            Ok(())
        } else {
            Err(Refused::NotAllowed {
                identity: self.name.clone(),
                action,
                name: name.to_string(),
            })
        }
    }
}

/// Why a client is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("not authenticated: this gateway requires a token (the `auth` op, an `Authorization: Bearer` header or `?token=` on the WebSocket URL)")]
    Unauthenticated,
    #[error("unknown token")]
    UnknownToken,
    #[error("the client certificate of {name:?} is valid but not listed in this gateway's `auth.certificates`")]
    UnknownCertificate { name: String },
    #[error("the token of {identity} expired at {}", unix_text(*at))]
    Expired { identity: String, at: i64 },
    #[error("{identity} may not {} {name}", action.verb())]
    NotAllowed {
        identity: String,
        action: Action,
        name: String,
    },
}

fn unix_text(at: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(at)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| format!("{at} (Unix seconds)"))
}

/// One token of the configuration.
#[derive(Debug, Clone)]
pub struct TokenEntry {
    pub token: String,
    pub identity: Identity,
}

/// The tokens a gateway accepts. Tokens are kept as SHA-256 digests and compared as such, so
/// the comparison's time says nothing about a token's bytes.
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    entries: Vec<([u8; 32], Arc<Identity>)>,
    /// Identities admitted by a verified client certificate of that name.
    certificates: Vec<Arc<Identity>>,
}

fn sha256(s: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(digest(&SHA256, s.as_bytes()).as_ref());
    out
}

impl Tokens {
    pub fn new(entries: Vec<TokenEntry>) -> Tokens {
        Tokens {
            entries: entries
                .into_iter()
                .map(|e| (sha256(&e.token), Arc::new(e.identity)))
                .collect(),
            certificates: Vec::new(),
        }
    }

    /// Also admits clients whose verified certificate names one of `identities`.
    pub fn with_certificates(mut self, identities: Vec<Identity>) -> Tokens {
        self.certificates = identities.into_iter().map(Arc::new).collect();
        self
    }

    /// The identity a verified client certificate named `name` stands for (the certificate's
    /// own validity period, checked by the TLS handshake, is its expiry).
    pub fn certificate(&self, name: &str) -> Result<Arc<Identity>, Refused> {
        self.certificates
            .iter()
            .find(|id| id.name == name)
            .cloned()
            .ok_or_else(|| Refused::UnknownCertificate {
                name: name.to_string(),
            })
    }

    /// The identity a token stands for at `now` (Unix seconds).
    pub fn authenticate(&self, token: &str, now: i64) -> Result<Arc<Identity>, Refused> {
        let d = sha256(token);
        let id = self
            .entries
            .iter()
            .find(|(h, _)| *h == d)
            .map(|(_, id)| id.clone())
            .ok_or(Refused::UnknownToken)?;
        match id.expires {
            Some(at) if now >= at => Err(Refused::Expired {
                identity: id.name.clone(),
                at,
            }),
            _ => Ok(id),
        }
    }
}

/// A token's `expires:` that is not an RFC 3339 time.
#[derive(Debug, thiserror::Error)]
#[error("{text:?} is not an RFC 3339 time such as 2027-01-31T12:00:00Z: {source}")]
pub struct ExpiryError {
    text: String,
    source: time::error::Parse,
}

/// Parses an RFC 3339 time (`2027-01-31T12:00:00Z`) into Unix seconds.
pub fn parse_expiry(s: &str) -> Result<i64, ExpiryError> {
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .map(|t| t.unix_timestamp())
        .map_err(|source| ExpiryError {
            text: s.to_owned(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn patterns_match_ros_names_segment_by_segment_and_deny_wins() {
        let r = Rule::new(
            &v(&["/robot/*", "/sensors/**", "/chatter"]),
            &v(&["/sensors/secret/**"]),
        )
        .unwrap();
        assert!(r.allows("/chatter"));
        assert!(r.allows("/robot/odom"));
        assert!(!r.allows("/robot/arm/joint"));
        assert!(r.allows("/sensors/lidar/points"));
        assert!(!r.allows("/sensors/secret/key"));
        assert!(!r.allows("/chatter2"));
        assert!(!Rule::new(&[], &[]).unwrap().allows("/chatter"));
        assert!(Rule::everything().allows("/a/b/c"));
        let e = Rule::new(&v(&["/a/[b"]), &[]).unwrap_err();
        assert!(e.to_string().contains("/a/[b"), "{e}");
    }

    #[test]
    fn tokens_admit_their_identity_until_they_expire() {
        let exp = parse_expiry("2027-01-01T00:00:00Z").unwrap();
        let id = |name: &str, expires| Identity {
            name: name.into(),
            permissions: Permissions {
                subscribe: Rule::new(&v(&["/chatter"]), &[]).unwrap(),
                publish: Rule::new(&[], &[]).unwrap(),
                call: Rule::new(&v(&["/add_two_ints"]), &[]).unwrap(),
            },
            expires,
        };
        let t = Tokens::new(vec![
            TokenEntry {
                token: "good".into(),
                identity: id("dash", Some(exp)),
            },
            TokenEntry {
                token: "forever".into(),
                identity: id("ops", None),
            },
        ]);
        let dash = t.authenticate("good", exp - 1).unwrap();
        assert_eq!(dash.name, "dash");
        assert!(dash.check(Action::Subscribe, "/chatter", exp - 1).is_ok());
        assert_eq!(
            dash.check(Action::Publish, "/chatter", exp - 1),
            Err(Refused::NotAllowed {
                identity: "dash".into(),
                action: Action::Publish,
                name: "/chatter".into()
            })
        );
        let e = dash.check(Action::Subscribe, "/chatter", exp).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the token of dash expired at 2027-01-01T00:00:00Z"
        );
        assert!(matches!(
            t.authenticate("good", exp),
            Err(Refused::Expired { .. })
        ));
        assert_eq!(t.authenticate("bad", 0).unwrap_err(), Refused::UnknownToken);
        assert!(t.authenticate("forever", i64::MAX).is_ok());
        assert!(parse_expiry("tomorrow").is_err());
        let t = t.with_certificates(vec![id("robot-7", None)]);
        assert_eq!(t.certificate("robot-7").unwrap().name, "robot-7");
        assert_eq!(
            t.certificate("dash").unwrap_err(),
            Refused::UnknownCertificate {
                name: "dash".into()
            }
        );
    }
}
