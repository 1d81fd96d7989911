//! What one export or import entry of the proxy's file names (a topic, a service, a raw DDS
//! topic or an action), how its names are checked, and the mappings it makes: an action is
//! forwarded as its three services and two topics.

use roam_edge::ros_names::full_name;

use super::convention::Setting;

/// Whether an export or import is a topic or a service (an action is three services and two
/// topics: [`action_parts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    Topic,
    Service,
    /// A DDS topic outside the ROS 2 naming conventions, forwarded under its own name.
    DdsTopic,
}

/// What one export or import entry names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Entry {
    One(What),
    Action,
}

/// The one name an export or import entry gives, what kind it is, and its key in the entry.
pub(super) fn single<'a>(
    topic: &'a Option<String>,
    service: &'a Option<String>,
    dds: &'a Option<String>,
    action: &'a Option<String>,
) -> Option<(Entry, &'a String, &'static str)> {
    match (topic, service, dds, action) {
        (Some(t), None, None, None) => Some((Entry::One(What::Topic), t, "topic")),
        (None, Some(s), None, None) => Some((Entry::One(What::Service), s, "service")),
        (None, None, Some(d), None) => Some((Entry::One(What::DdsTopic), d, "dds_topic")),
        (None, None, None, Some(a)) => Some((Entry::Action, a, "action")),
        _ => None,
    }
}

/// The services and topics of the ROS 2 action `action` (a full name), as rcl_action names
/// them: what an `action:` entry exports or imports.
pub fn action_parts(action: &str) -> [(What, String); 5] {
    let part = |what, p: &str| (what, format!("{action}/_action/{p}"));
    [
        part(What::Service, "send_goal"),
        part(What::Service, "cancel_goal"),
        part(What::Service, "get_result"),
        part(What::Topic, "feedback"),
        part(What::Topic, "status"),
    ]
}

/// The mappings one entry makes: itself, or an action's five parts. `local` and `remote` are
/// the entry's checked names (for an action, the action's).
pub(super) fn entry_mappings(
    entry: Entry,
    local: &str,
    remote: &str,
    realm: &str,
    convention: Setting,
    in_realm: &dyn Fn(What, String) -> String,
) -> Vec<Mapping> {
    let one = |what, local: String, remote: String| Mapping {
        what,
        local,
        remote: in_realm(what, remote),
        realm: realm.to_string(),
        convention: if what == What::Service {
            convention
        } else {
            Setting::Auto
        },
    };
    match entry {
        Entry::One(what) => vec![one(what, local.to_string(), remote.to_string())],
        Entry::Action => action_parts(local)
            .into_iter()
            .zip(action_parts(remote))
            .map(|((what, l), (_, r))| one(what, l, r))
            .collect(),
    }
}

/// Checks a name by its kind and returns the form roam uses: the full ROS name for topics
/// and services (`chatter` is `/chatter`, as everywhere in roam); any non-empty DDS topic
/// name without spaces for raw DDS topics.
pub(super) fn check_name(what: What, n: &str) -> Result<String, String> {
    match what {
        What::DdsTopic if n.is_empty() || n.chars().any(char::is_whitespace) => Err(format!(
            "{n:?} is not a DDS topic name (non-empty, without spaces, e.g. DDSPerfRDataKS)"
        )),
        What::DdsTopic => Ok(n.to_string()),
        _ => full_name(n).map(|f| f.name).map_err(|e| e.to_string()),
    }
}

/// Checks an entry's name by its kind (an action's as a ROS name).
pub(super) fn check_entry_name(entry: Entry, n: &str) -> Result<String, String> {
    match entry {
        Entry::One(what) => check_name(what, n),
        Entry::Action => check_name(What::Service, n),
    }
}

/// How error messages name `what`.
pub(super) fn kind_word(what: What) -> &'static str {
    match what {
        What::Topic => "topic",
        What::Service => "service",
        What::DdsTopic => "DDS topic",
    }
}

/// One exact export or import: `local` name here, `remote` name inside `realm`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub what: What,
    pub local: String,
    pub remote: String,
    pub realm: String,
    /// Services: where local endpoints carry a call's identity (`auto` for others).
    pub convention: Setting,
}

/// A realm-side name in the proxy's namespace (`/robot7` + `/chatter` = `/robot7/chatter`).
/// Raw DDS topics (`dds_topic:`) are not ROS names and keep theirs.
pub(super) fn in_namespace(namespace: &str, what: What, name: String) -> String {
    if what == What::DdsTopic || namespace == "/" {
        return name;
    }
    format!("{namespace}{name}")
}
