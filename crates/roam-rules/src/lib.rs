//! The rule language of seed 001 (ROS-FM), for roam's proxies and gateways.
//!
//! ```text
//! Filter: TOPIC == "/cmd_vel" && NODE == "/teleop";      # bind /cmd_vel to its publisher
//! Filter: TOPIC == "/scan" && Limit 10;                   # at most 10 messages/s
//! Filter: TOPIC == "/map" && FIELD(header.frame_id) == "map" && Copy "/map_copy";
//! Monitor: TOPIC MATCHES "^/camera/" && Count && Max;
//! Display: TOPIC == "/chatter" && Count && Average;
//! ```
//!
//! - [`Rules::parse`]: text -> rules; errors carry the line and column and what was expected
//!   ([`ParseError`]). The grammar is in [`parser`].
//! - [`Engine`]: the rules and their state. [`Engine::evaluate`] takes one [`Message`] (what
//!   the caller knows about it), a [`Content`] (the caller decodes fields on demand) and the
//!   current time, and returns a [`Verdict`]: pass or drop (with its [`DropCause`]), and the
//!   Copy and Log effects for the caller to carry out. Figures ([`Engine::figures`]) and drop
//!   counts ([`Engine::drops`]) are read as snapshots.
//!
//! Semantics (docs/rules.md has the operator's view): Filter is default-deny for a topic that
//! has a Filter rule (one whose TOPIC conditions hold for it) and default-allow for others;
//! a message passes when a Filter rule matches it, no matching rule says Drop and every
//! matching Limit has a token. A Filter rule with NODE or PEER binds its topic to those
//! senders: a message that would match but for them is dropped as [`DropCause::Spoofed`].
//!
//! No I/O, no async, no clock, no DDS: the proxy supplies topic, node and fields.

mod ast;
mod bucket;
mod engine;
mod error;
mod lexer;
pub mod parser;

pub use ast::{Action, Condition, Module, Operand, Rule, Test};
pub use bucket::TokenBucket;
pub use engine::{Content, DropCause, Drops, Engine, Figure, Message, NoContent, Verdict};
pub use error::{ErrorKind, ParseError};

/// A parsed rules file.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    rules: Vec<Rule>,
}

impl Rules {
    /// Parses a rules file (at most [`parser::MAX_TEXT`] bytes).
    pub fn parse(text: &str) -> Result<Rules, ParseError> {
        Ok(Rules {
            rules: parser::parse(text)?,
        })
    }

    /// The rules, in file order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The first rule with this action (callers refuse actions they cannot carry out).
    pub fn find_action(&self, name: &str) -> Option<&Rule> {
        self.rules
            .iter()
            .find(|r| r.actions.iter().any(|a| a.name() == name))
    }
}
