//! Evaluating rules on messages: Filter verdicts with their counted causes, Limit buckets,
//! Monitor/Display figures, and the effects (Copy, Log) the caller carries out.
//!
//! Nothing here reads a clock: every call takes `now`, so tests drive time themselves.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use crate::ast::{Action, Module, Operand, Rule};
use crate::bucket::TokenBucket;
use crate::Rules;

/// The message a rule looks at, as the caller knows it.
#[derive(Debug, Clone, Copy)]
pub struct Message<'a> {
    /// The ROS topic name (`/chatter`).
    pub topic: &'a str,
    /// The ROS type name (`std_msgs/msg/String`).
    pub type_name: &'a str,
    /// The publishing node (`/namespace/name`), when known.
    pub node: Option<&'a str>,
    /// The realm it travels in.
    pub realm: &'a str,
    /// Who the caller got it from, when known.
    pub peer: Option<&'a str>,
    /// Its size in bytes (Monitor figures).
    pub size: usize,
}

/// The message's content, decoded on demand by the caller (only rules that use FIELD or
/// MESSAGE ask). `None`: not known (no definition, not decodable, no such field).
pub trait Content {
    /// One field by dotted path, as text (strings as they are, other values as JSON).
    fn field(&mut self, path: &str) -> Option<String>;
    /// The whole message as JSON text.
    fn message(&mut self) -> Option<String>;
}

/// Content for callers that cannot decode: FIELD and MESSAGE are unknown.
pub struct NoContent;

impl Content for NoContent {
    fn field(&mut self, _: &str) -> Option<String> {
        None
    }
    fn message(&mut self) -> Option<String> {
        None
    }
}

/// Why the rules dropped a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropCause {
    /// Its topic has Filter rules and none matched.
    Filtered,
    /// A matching rule says Drop.
    Denied,
    /// A matching rule's Limit was exhausted.
    Limited,
    /// Its topic is bound to publishers (a Filter rule with NODE or PEER) and it came from
    /// another.
    Spoofed,
}

impl DropCause {
    pub const ALL: [DropCause; 4] = [
        DropCause::Filtered,
        DropCause::Denied,
        DropCause::Limited,
        DropCause::Spoofed,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DropCause::Filtered => "filtered",
            DropCause::Denied => "denied",
            DropCause::Limited => "limited",
            DropCause::Spoofed => "spoofed",
        }
    }
}

/// What to do with one message.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Verdict {
    /// `Some`: drop it, for this reason.
    pub drop: Option<DropCause>,
    /// Topics to also send it under (Copy of the matching Filter rules; only when it passes).
    pub copies: Vec<String>,
    /// Files to record it to (Log of the matching Monitor/Display rules).
    pub logs: Vec<String>,
}

impl Verdict {
    pub fn passes(&self) -> bool {
        self.drop.is_none()
    }
}

/// One Monitor or Display rule's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub module: Module,
    /// The rule's line in the file, and its text.
    pub line: usize,
    pub rule: String,
    /// Which figures the rule asked for are those that are `Some`.
    pub count: Option<u64>,
    /// Bytes per second from the first matching message to the snapshot.
    pub average_bytes_per_s: Option<f64>,
    /// Largest and smallest message, bytes (None until one matched).
    pub max_bytes: Option<u64>,
    pub min_bytes: Option<u64>,
}

/// Messages dropped, by cause, since the engine was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Drops {
    pub filtered: u64,
    pub denied: u64,
    pub limited: u64,
    pub spoofed: u64,
}

impl Drops {
    pub fn get(&self, cause: DropCause) -> u64 {
        match cause {
            DropCause::Filtered => self.filtered,
            DropCause::Denied => self.denied,
            DropCause::Limited => self.limited,
            DropCause::Spoofed => self.spoofed,
        }
    }

    fn add(&mut self, cause: DropCause) {
        let c = match cause {
            DropCause::Filtered => &mut self.filtered,
            DropCause::Denied => &mut self.denied,
            DropCause::Limited => &mut self.limited,
            DropCause::Spoofed => &mut self.spoofed,
        };
        *c += 1;
    }
}

#[derive(Debug, Clone, Default)]
struct Accumulator {
    count: u64,
    bytes: u64,
    max: Option<u64>,
    min: Option<u64>,
    first: Option<Instant>,
}

/// The rules that apply to one topic (their TOPIC conditions hold), by module.
#[derive(Debug, Default)]
struct TopicPlan {
    filters: Vec<usize>,
    monitors: Vec<usize>,
}

/// Topics whose plan is kept; past this the cache starts over (bounded memory whatever
/// topic names arrive).
const MAX_CACHED_TOPICS: usize = 4096;

/// Rules and their state: buckets, figures, drop counts.
#[derive(Debug)]
pub struct Engine {
    rules: Arc<Rules>,
    buckets: HashMap<usize, TokenBucket>,
    figures: Vec<Accumulator>,
    plans: HashMap<String, Arc<TopicPlan>>,
    drops: Drops,
}

impl Engine {
    pub fn new(rules: Arc<Rules>) -> Engine {
        let buckets = rules
            .rules()
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.limit().map(|rate| (i, TokenBucket::new(rate))))
            .collect();
        let figures = vec![Accumulator::default(); rules.rules().len()];
        Engine {
            rules,
            buckets,
            figures,
            plans: HashMap::new(),
            drops: Drops::default(),
        }
    }

    pub fn rules(&self) -> &Arc<Rules> {
        &self.rules
    }

    /// Whether the topic has Filter rules (then only what they allow passes).
    pub fn governs(&mut self, topic: &str) -> bool {
        !self.plan(topic).filters.is_empty()
    }

    /// The Copy targets of the Filter rules that can apply to `topic` (what the caller
    /// prepares publishers for).
    pub fn copy_targets(&mut self, topic: &str) -> Vec<String> {
        let plan = self.plan(topic);
        let mut out: Vec<String> = plan
            .filters
            .iter()
            .flat_map(|&i| self.rules.rules()[i].actions.iter())
            .filter_map(|a| match a {
                Action::Copy(t) => Some(t.clone()),
                _ => None,
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    fn plan(&mut self, topic: &str) -> Arc<TopicPlan> {
        if let Some(p) = self.plans.get(topic) {
            return p.clone();
        }
        let mut plan = TopicPlan::default();
        for (i, r) in self.rules.rules().iter().enumerate() {
            if r.covers_topic(topic) {
                match r.module {
                    Module::Filter => plan.filters.push(i),
                    Module::Monitor | Module::Display => plan.monitors.push(i),
                }
            }
        }
        if self.plans.len() >= MAX_CACHED_TOPICS {
            self.plans.clear();
        }
        let plan = Arc::new(plan);
        self.plans.insert(topic.to_string(), plan.clone());
        plan
    }

    /// Evaluates every rule on one message: updates figures, buckets and drop counts, and
    /// says whether it passes and what else to do with it.
    pub fn evaluate(&mut self, m: &Message, content: &mut dyn Content, now: Instant) -> Verdict {
        let plan = self.plan(m.topic);
        let rules = self.rules.clone();
        let mut verdict = Verdict::default();
        // Monitors see every message of their topics, passed or dropped: a spoofing attempt
        // shows in a Count too.
        // The plan holds the rules whose TOPIC conditions hold for this topic: they are not
        // tested again per message (a regex each).
        for &i in &plan.monitors {
            let r = &rules.rules()[i];
            if !matches(r, m, content, Skip::TOPIC) {
                continue;
            }
            let a = &mut self.figures[i];
            let size = m.size as u64;
            a.count += 1;
            a.bytes = a.bytes.saturating_add(size);
            a.max = Some(a.max.map_or(size, |x| x.max(size)));
            a.min = Some(a.min.map_or(size, |x| x.min(size)));
            a.first.get_or_insert(now);
            verdict
                .logs
                .extend(r.actions.iter().filter_map(|a| match a {
                    Action::Log(f) => Some(f.clone()),
                    _ => None,
                }));
        }
        if plan.filters.is_empty() {
            return verdict;
        }
        let matched: Vec<usize> = plan
            .filters
            .iter()
            .copied()
            .filter(|&i| matches(&rules.rules()[i], m, content, Skip::TOPIC))
            .collect();
        let drop = if matched.is_empty() {
            // Bound to its publishers and the rest of the rule held: a sender that may not.
            let spoof = plan.filters.iter().any(|&i| {
                let r = &rules.rules()[i];
                r.binds_sender() && matches(r, m, content, Skip::TOPIC_AND_SENDER)
            });
            Some(if spoof {
                DropCause::Spoofed
            } else {
                DropCause::Filtered
            })
        } else if matched.iter().any(|&i| rules.rules()[i].has(&Action::Drop)) {
            Some(DropCause::Denied)
        } else if !matched.iter().all(|i| {
            let b = self.buckets.get_mut(i);
            b.is_none_or(|b| b.ready(now))
        }) {
            Some(DropCause::Limited)
        } else {
            for i in &matched {
                if let Some(b) = self.buckets.get_mut(i) {
                    b.take();
                }
            }
            None
        };
        match drop {
            Some(cause) => {
                self.drops.add(cause);
                verdict.drop = Some(cause);
            }
            None => {
                for &i in &matched {
                    for a in &rules.rules()[i].actions {
                        if let Action::Copy(t) = a {
                            if !verdict.copies.contains(t) {
                                verdict.copies.push(t.clone());
                            }
                        }
                    }
                }
            }
        }
        verdict
    }

    /// Drops by cause since the engine was made.
    pub fn drops(&self) -> Drops {
        self.drops
    }

    /// The figures of every Monitor and Display rule, in file order.
    pub fn figures(&self, now: Instant) -> Vec<Figure> {
        self.rules
            .rules()
            .iter()
            .zip(&self.figures)
            .filter(|(r, _)| r.module != Module::Filter)
            .map(|(r, a)| {
                let secs = a
                    .first
                    .map(|f| now.saturating_duration_since(f).as_secs_f64());
                Figure {
                    module: r.module,
                    line: r.line,
                    rule: r.text.clone(),
                    count: r.has(&Action::Count).then_some(a.count),
                    average_bytes_per_s: if r.has(&Action::Average) {
                        Some(match secs {
                            Some(s) if s > 0.0 => a.bytes as f64 / s,
                            _ => 0.0,
                        })
                    } else {
                        None
                    },
                    max_bytes: if r.has(&Action::Max) { a.max } else { None },
                    min_bytes: if r.has(&Action::Min) { a.min } else { None },
                }
            })
            .collect()
    }
}

/// Conditions [`matches`] takes as holding.
#[derive(Clone, Copy)]
struct Skip {
    topic: bool,
    sender: bool,
}

impl Skip {
    const TOPIC: Skip = Skip {
        topic: true,
        sender: false,
    };
    const TOPIC_AND_SENDER: Skip = Skip {
        topic: true,
        sender: true,
    };
}

/// Whether every condition of `r` holds, but those `skip` names (TOPIC: already known to
/// hold from the topic's plan; NODE and PEER, to ask whether only the sender is wrong).
/// A condition on something unknown (no node, no decodable field) does not hold, `!=`
/// included: a rule never matches on what it cannot see.
fn matches(r: &Rule, m: &Message, content: &mut dyn Content, skip: Skip) -> bool {
    r.conditions.iter().all(|c| {
        if (skip.sender && c.operand.is_identity()) || (skip.topic && c.operand == Operand::Topic) {
            return true;
        }
        let owned;
        let value: Option<&str> = match &c.operand {
            Operand::Topic => Some(m.topic),
            Operand::Type => Some(m.type_name),
            Operand::Realm => Some(m.realm),
            Operand::Node => m.node,
            Operand::Peer => m.peer,
            Operand::Field(path) => {
                owned = content.field(path);
                owned.as_deref()
            }
            Operand::Message => {
                owned = content.message();
                owned.as_deref()
            }
        };
        value.is_some_and(|v| c.test.check(v))
    })
}
