//! How ROS 2 names appear on the DDS wire (the rmw conventions all vendors share).
//!
//! | ROS 2                          | DDS topic                     | DDS type                                   |
//! |--------------------------------|-------------------------------|--------------------------------------------|
//! | topic `/chatter`               | `rt/chatter`                  | `std_msgs::msg::dds_::String_`             |
//! | service `/add` request         | `rq/addRequest`               | `example_interfaces::srv::dds_::AddTwoInts_Request_` |
//! | service `/add` reply           | `rr/addReply`                 | `example_interfaces::srv::dds_::AddTwoInts_Response_` |

/// What a DDS topic is, seen from ROS 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RosEndpoint {
    Topic(String),
    ServiceRequest(String),
    ServiceReply(String),
}

/// Maps a DDS topic name to the ROS 2 name it carries; `None` for non-ROS topics
/// (e.g. `DCPSParticipant`, `ros_discovery_info` has no prefix and is handled apart).
pub fn ros_endpoint(dds_topic: &str) -> Option<RosEndpoint> {
    if let Some(rest) = dds_topic.strip_prefix("rt/") {
        return Some(RosEndpoint::Topic(format!("/{rest}")));
    }
    if let Some(rest) = dds_topic
        .strip_prefix("rq/")
        .and_then(|r| r.strip_suffix("Request"))
    {
        return Some(RosEndpoint::ServiceRequest(format!("/{rest}")));
    }
    if let Some(rest) = dds_topic
        .strip_prefix("rr/")
        .and_then(|r| r.strip_suffix("Reply"))
    {
        return Some(RosEndpoint::ServiceReply(format!("/{rest}")));
    }
    None
}

/// The DDS topic of a ROS 2 topic: `/a/b` -> `rt/a/b`.
pub fn topic_to_dds(ros: &str) -> String {
    format!("rt/{}", ros.trim_start_matches('/'))
}

/// The DDS request and reply topics of a ROS 2 service.
pub fn service_to_dds(ros: &str) -> (String, String) {
    let n = ros.trim_start_matches('/');
    (format!("rq/{n}Request"), format!("rr/{n}Reply"))
}

/// `std_msgs::msg::dds_::String_` -> `std_msgs/msg/String`; other names unchanged.
pub fn type_from_dds(dds: &str) -> String {
    let parts: Vec<&str> = dds.split("::").collect();
    match parts.as_slice() {
        [pkg, kind, "dds_", name] => {
            format!("{pkg}/{kind}/{}", name.strip_suffix('_').unwrap_or(name))
        }
        _ => dds.to_string(),
    }
}

/// `std_msgs/msg/String` -> `std_msgs::msg::dds_::String_`; other names unchanged.
pub fn type_to_dds(ros: &str) -> String {
    let parts: Vec<&str> = ros.split('/').collect();
    match parts.as_slice() {
        [pkg, kind, name] if !pkg.is_empty() && !name.is_empty() => {
            format!("{pkg}::{kind}::dds_::{name}_")
        }
        _ => ros.to_string(),
    }
}

/// Longest full topic name rmw accepts (`RMW_TOPIC_MAX_NAME_LENGTH`: 255 less 8 for the
/// DDS prefixes).
pub const MAX_NAME_LEN: usize = 255 - 8;

/// Why a ROS 2 topic or service name is refused. Every message shows a valid example.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RosNameError {
    #[error("a topic name cannot be empty (e.g. /chatter)")]
    Empty,
    #[error("{0:?} is a private name: `~` needs a node's name and roam has none; write the full name (e.g. /my_node/status)")]
    Private(String),
    #[error("{0:?} holds a substitution ({{...}}); write the name it stands for")]
    Substitution(String),
    #[error("{0:?} must not end with '/' (e.g. /robot/odom)")]
    TrailingSlash(String),
    #[error("{0:?} holds an empty part ('//'); write e.g. /robot/odom")]
    EmptyToken(String),
    #[error("{name:?}: part {token:?} may hold only letters, digits and '_', and must not start with a digit (e.g. /robot_7/odom)")]
    BadToken { name: String, token: String },
    #[error("{name:?} is {len} characters long; ROS 2 allows at most {MAX_NAME_LEN}")]
    TooLong { name: String, len: usize },
}

/// A ROS 2 topic or service name in its full form, and whether it was written otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FullName {
    pub name: String,
    /// The name was relative (`chatter`) and now starts with `/`.
    pub was_relative: bool,
}

/// Validates a topic or service name by the ROS 2 rules (rcl's topic name validation) and
/// returns its full form. A relative name (`chatter`) resolves against the root namespace,
/// as it does for `ros2 topic pub` or a node started without a namespace: `/chatter`.
/// Everything roam names (pub, sub, name, the proxy's configuration) goes through here, so
/// the same spelling always lands on the same name.
pub fn full_name(name: &str) -> Result<FullName, RosNameError> {
    if name.is_empty() || name == "/" {
        return Err(RosNameError::Empty);
    }
    if name.starts_with('~') {
        return Err(RosNameError::Private(name.into()));
    }
    if name.contains(['{', '}']) {
        return Err(RosNameError::Substitution(name.into()));
    }
    let was_relative = !name.starts_with('/');
    let full = if was_relative {
        format!("/{name}")
    } else {
        name.to_string()
    };
    if full.len() > 1 && full.ends_with('/') {
        return Err(RosNameError::TrailingSlash(name.into()));
    }
    if full.len() > MAX_NAME_LEN {
        return Err(RosNameError::TooLong {
            name: name.into(),
            len: full.len(),
        });
    }
    for token in full[1..].split('/') {
        if token.is_empty() {
            return Err(RosNameError::EmptyToken(name.into()));
        }
        let ok = !token.starts_with(|c: char| c.is_ascii_digit())
            && token.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            return Err(RosNameError::BadToken {
                name: name.into(),
                token: token.into(),
            });
        }
    }
    Ok(FullName {
        name: full,
        was_relative,
    })
}

/// A valid ROS 2 topic name: [`full_name`] without the normalisation.
pub fn check_ros_name(name: &str) -> Result<(), RosNameError> {
    full_name(name).map(|_| ())
}

/// Why a ROS 2 type name is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{ty:?} is not a ROS 2 type: {reason}; write PACKAGE/msg/Type (e.g. std_msgs/msg/String), PACKAGE/srv/Type or PACKAGE/action/Type")]
pub struct RosTypeError {
    pub ty: String,
    pub reason: &'static str,
}

/// What an interface type belongs to: `msg`, `srv` or `action`.
const INTERFACE_KINDS: [&str; 3] = ["msg", "srv", "action"];

/// Validates a ROS 2 type name and returns its full form, `PACKAGE/KIND/Type`, the form the
/// proxy learns from DDS (`std_msgs::msg::dds_::String_` is `std_msgs/msg/String`).
/// Also accepted: `PACKAGE/Type` (`msg`, or `srv` for a service, as `ros2` tools accept it)
/// and the DDS spelling itself.
pub fn full_type(ty: &str, service: bool) -> Result<String, RosTypeError> {
    let err = |reason| RosTypeError {
        ty: ty.into(),
        reason,
    };
    let ros = if ty.contains("::") {
        let t = type_from_dds(ty);
        if t == ty {
            return Err(err("a DDS type name must read PACKAGE::KIND::dds_::Type_"));
        }
        t
    } else {
        ty.to_string()
    };
    let parts: Vec<&str> = ros.split('/').collect();
    let (pkg, kind, name) = match parts.as_slice() {
        [pkg, name] => (*pkg, if service { "srv" } else { "msg" }, *name),
        [pkg, kind, name] => (*pkg, *kind, *name),
        _ => return Err(err("expected two or three parts separated by '/'")),
    };
    let pkg_ok = pkg.starts_with(|c: char| c.is_ascii_lowercase())
        && pkg
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !pkg_ok {
        return Err(err(
            "a package name holds lowercase letters, digits and '_', and starts with a letter",
        ));
    }
    if !INTERFACE_KINDS.contains(&kind) {
        return Err(err("the middle part must be msg, srv or action"));
    }
    let name_ok = name.starts_with(|c: char| c.is_ascii_uppercase())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !name_ok {
        return Err(err(
            "a type name starts with an uppercase letter and holds letters, digits and '_'",
        ));
    }
    Ok(format!("{pkg}/{kind}/{name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_services_and_types_map_both_ways() {
        assert_eq!(topic_to_dds("/chatter"), "rt/chatter");
        assert_eq!(
            ros_endpoint("rt/robot/odom"),
            Some(RosEndpoint::Topic("/robot/odom".into()))
        );
        assert_eq!(
            service_to_dds("/add"),
            ("rq/addRequest".into(), "rr/addReply".into())
        );
        assert_eq!(
            ros_endpoint("rq/addRequest"),
            Some(RosEndpoint::ServiceRequest("/add".into()))
        );
        assert_eq!(
            ros_endpoint("rr/addReply"),
            Some(RosEndpoint::ServiceReply("/add".into()))
        );
        assert_eq!(ros_endpoint("DCPSParticipant"), None);
        assert_eq!(
            type_to_dds("std_msgs/msg/String"),
            "std_msgs::msg::dds_::String_"
        );
        assert_eq!(
            type_from_dds("std_msgs::msg::dds_::String_"),
            "std_msgs/msg/String"
        );
        assert_eq!(type_from_dds("KeyedSeq"), "KeyedSeq");
        assert_eq!(type_to_dds("KeyedSeq"), "KeyedSeq");
        for t in [
            "sensor_msgs/msg/LaserScan",
            "example_interfaces/srv/AddTwoInts_Request",
        ] {
            assert_eq!(type_from_dds(&type_to_dds(t)), t);
        }
    }

    #[test]
    fn names_are_checked_and_made_full() {
        assert!(check_ros_name("/robot_7/odom").is_ok());
        assert_eq!(
            full_name("chatter").unwrap(),
            FullName {
                name: "/chatter".into(),
                was_relative: true
            }
        );
        assert_eq!(full_name("/a/b").unwrap().name, "/a/b");
        assert!(!full_name("/a/b").unwrap().was_relative);
        for (bad, why) in [
            ("", "empty"),
            ("/", "empty"),
            ("/a/", "end with '/'"),
            ("/a//b", "'//'"),
            ("/7up", "must not start with a digit"),
            ("/a-b", "only letters"),
            ("~/x", "private"),
            ("/{node}/x", "substitution"),
            ("/a b", "only letters"),
        ] {
            let e = full_name(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        let long = format!("/{}", "a".repeat(MAX_NAME_LEN));
        assert!(matches!(
            full_name(&long),
            Err(RosNameError::TooLong { .. })
        ));
    }

    #[test]
    fn types_are_checked_and_made_full() {
        for (given, service, full) in [
            ("std_msgs/msg/String", false, "std_msgs/msg/String"),
            ("std_msgs/String", false, "std_msgs/msg/String"),
            (
                "example_interfaces/AddTwoInts",
                true,
                "example_interfaces/srv/AddTwoInts",
            ),
            ("std_msgs::msg::dds_::String_", false, "std_msgs/msg/String"),
            (
                "example_interfaces/srv/AddTwoInts_Request",
                false,
                "example_interfaces/srv/AddTwoInts_Request",
            ),
            (
                "nav2_msgs/action/NavigateToPose",
                false,
                "nav2_msgs/action/NavigateToPose",
            ),
        ] {
            assert_eq!(full_type(given, service).unwrap(), full, "{given}");
        }
        for bad in [
            "not-a-type",
            "String",
            "std_msgs/msgs/String",
            "Std_msgs/msg/String",
            "std_msgs/msg/string",
            "std_msgs/msg/Str-ing",
            "a/b/c/D",
            "std_msgs::String",
            "",
        ] {
            let e = full_type(bad, false).unwrap_err().to_string();
            assert!(e.contains("std_msgs/msg/String"), "{bad:?}: {e}");
        }
    }
}
