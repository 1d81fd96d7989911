//! Rules (docs/rules.md) on what a gateway's clients publish into the realm and receive from
//! it. The rule language and its file belong to the process (`roam gateway`'s `rules:`, or a
//! proxy's when the doors run inside one); a door asks through [`MessageRules`] and drops what
//! does not pass, counted in the gateway's `ruled`.

use roam_msg::MessageType;

/// One message a rule may look at.
#[derive(Debug, Clone, Copy)]
pub struct RuledMessage<'a> {
    /// The realm-side topic.
    pub topic: &'a str,
    /// Its DDS type name.
    pub dds_type: &'a str,
    /// The realm's label.
    pub realm: &'a str,
    /// Who sends it: the client's identity when it publishes; the member that announced the
    /// stream for what it receives from the realm (what the gateway's own clients publish is
    /// judged once, when they publish it).
    pub peer: Option<&'a str>,
}

/// What a gateway's process evaluates its rules with.
pub trait MessageRules: Send + Sync {
    /// Whether the message may pass (a drop is counted by the rules' own figures too).
    /// `schema`: the type, when known, for FIELD and MESSAGE; `cdr` the message.
    fn passes(&self, m: &RuledMessage<'_>, schema: Option<&MessageType>, cdr: &[u8]) -> bool;
}
