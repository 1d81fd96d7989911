//! What a rules file says, once parsed.

use regex::Regex;

/// The part of roam a rule is for (seed 001's modules).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Module {
    /// Which messages pass: default-deny for topics with a Filter rule, default-allow for others.
    Filter,
    /// Figures (Count, Average, Max, Min) kept in the snapshot.
    Monitor,
    /// Figures like Monitor's that the process also logs periodically.
    Display,
}

impl Module {
    pub fn name(self) -> &'static str {
        match self {
            Module::Filter => "Filter",
            Module::Monitor => "Monitor",
            Module::Display => "Display",
        }
    }
}

/// What a condition looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operand {
    /// The ROS topic name, e.g. `/chatter`.
    Topic,
    /// The ROS node that published the message, `/namespace/name`.
    Node,
    /// The whole message as JSON text.
    Message,
    /// One field of the message, by dotted path (`header.frame_id`, `points.0.x`).
    Field(String),
    /// The ROS type name, `pkg/msg/Type`.
    Type,
    /// The realm the message travels in.
    Realm,
    /// Who the process got the message from.
    Peer,
}

impl Operand {
    /// NODE and PEER name a sender: rules that use them bind a topic to its publishers.
    pub fn is_identity(&self) -> bool {
        matches!(self, Operand::Node | Operand::Peer)
    }
}

/// How a condition compares.
#[derive(Debug, Clone)]
pub enum Test {
    Equal(String),
    NotEqual(String),
    Contains(String),
    In(Vec<String>),
    /// The regex, and its source as written.
    Matches(Regex, String),
}

impl Test {
    /// Whether `value` passes.
    pub fn check(&self, value: &str) -> bool {
        match self {
            Test::Equal(v) => value == v,
            Test::NotEqual(v) => value != v,
            Test::Contains(v) => value.contains(v.as_str()),
            Test::In(vs) => vs.iter().any(|v| v == value),
            Test::Matches(re, _) => re.is_match(value),
        }
    }
}

impl PartialEq for Test {
    fn eq(&self, other: &Test) -> bool {
        match (self, other) {
            (Test::Equal(a), Test::Equal(b))
            | (Test::NotEqual(a), Test::NotEqual(b))
            | (Test::Contains(a), Test::Contains(b)) => a == b,
            (Test::In(a), Test::In(b)) => a == b,
            (Test::Matches(_, a), Test::Matches(_, b)) => a == b,
            _ => false,
        }
    }
}

/// `Operand op value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub operand: Operand,
    pub test: Test,
}

/// What a rule does to the messages it matches.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Filter: let them pass (what a Filter rule without a verdict does).
    Allow,
    /// Filter: drop them.
    Drop,
    /// Filter: let at most this many per second pass (a token bucket per rule).
    Limit(f64),
    /// Filter: also send each one under another topic name.
    Copy(String),
    /// Monitor/Display: count them.
    Count,
    /// Monitor/Display: their bytes per second since the first.
    Average,
    /// Monitor/Display: the largest.
    Max,
    /// Monitor/Display: the smallest.
    Min,
    /// Monitor/Display: record them to this file.
    Log(String),
}

impl Action {
    pub fn name(&self) -> &'static str {
        match self {
            Action::Allow => "Allow",
            Action::Drop => "Drop",
            Action::Limit(_) => "Limit",
            Action::Copy(_) => "Copy",
            Action::Count => "Count",
            Action::Average => "Average",
            Action::Max => "Max",
            Action::Min => "Min",
            Action::Log(_) => "Log",
        }
    }
}

/// One rule: `Module: term && term ...;`.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub module: Module,
    pub conditions: Vec<Condition>,
    pub actions: Vec<Action>,
    /// Where it starts (1-based).
    pub line: usize,
    pub column: usize,
    /// Its text as written, without the final `;` (for logs and snapshots).
    pub text: String,
}

impl Rule {
    /// Whether the rule's TOPIC conditions hold for `topic` (a rule without one: any topic).
    pub fn covers_topic(&self, topic: &str) -> bool {
        self.conditions
            .iter()
            .filter(|c| c.operand == Operand::Topic)
            .all(|c| c.test.check(topic))
    }

    /// Whether any condition names a sender (NODE or PEER).
    pub fn binds_sender(&self) -> bool {
        self.conditions.iter().any(|c| c.operand.is_identity())
    }

    /// The rule's Limit rate, if it has one.
    pub fn limit(&self) -> Option<f64> {
        self.actions.iter().find_map(|a| match a {
            Action::Limit(r) => Some(*r),
            _ => None,
        })
    }

    pub fn has(&self, action: &Action) -> bool {
        self.actions.iter().any(|a| a == action)
    }
}
