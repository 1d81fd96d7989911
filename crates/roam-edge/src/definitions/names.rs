//! Which interface file may hold a message structure. Pure name logic, no I/O.
//!
//! A service `pkg/srv/AddTwoInts.srv` defines `AddTwoInts_Request`, `_Response` and (derived)
//! `_Event`; an action `pkg/action/Fibonacci.action` defines `_Goal`, `_Result`, `_Feedback`
//! and the derived `_SendGoal_Request`, ..., `_FeedbackMessage`. So the file of a structure is
//! found by taking its suffix off.

use roam_msg::{Kind, NameError, TypeName};

/// Structures rosidl makes from a `.srv` (`rosidl_parser/definition.py`, class `Service`).
const SRV_SUFFIXES: &[&str] = &["_Request", "_Response", "_Event"];

/// Structures rosidl makes from an `.action` (class `Action`).
const ACTION_SUFFIXES: &[&str] = &[
    "_SendGoal_Request",
    "_SendGoal_Response",
    "_GetResult_Request",
    "_GetResult_Response",
    "_FeedbackMessage",
    "_Goal",
    "_Result",
    "_Feedback",
];

/// A type name in any spelling roam meets: `pkg/msg/Type`, `pkg/Type` (taken as a message,
/// which also finds a service's or action's structure), or the DDS `pkg::msg::dds_::Type_`.
pub fn parse_any(s: &str) -> Result<TypeName, NameError> {
    let s = s.trim();
    if s.contains("::") {
        TypeName::from_dds(s)
    } else {
        TypeName::parse(s)
    }
}

/// The interface files (kind folder, file stem) that may define `ty`, most likely first.
///
/// A name given as a message (`pkg/AddTwoInts_Request`, as short names and ros2msg `MSG:`
/// lines write it) may be a service's or action's structure, so those files follow the
/// message file.
pub fn candidate_files(ty: &TypeName) -> Vec<(Kind, String)> {
    let mut out = Vec::new();
    if ty.kind == Kind::Msg {
        out.push((Kind::Msg, ty.name.clone()));
    }
    for (kind, suffixes) in [(Kind::Srv, SRV_SUFFIXES), (Kind::Action, ACTION_SUFFIXES)] {
        if ty.kind != Kind::Msg && ty.kind != kind {
            continue;
        }
        for suffix in suffixes {
            if let Some(stem) = ty.name.strip_suffix(suffix).filter(|s| !s.is_empty()) {
                let c = (kind, stem.to_string());
                if !out.contains(&c) {
                    out.push(c);
                }
            }
        }
    }
    out
}

/// `pkg/srv/AddTwoInts` or `pkg/action/Fibonacci` itself: an interface, not a message.
pub fn is_whole_interface(ty: &TypeName) -> bool {
    ty.kind != Kind::Msg && candidate_files(ty).is_empty()
}

/// The file extension of an interface kind's own format.
pub fn native_extension(kind: Kind) -> &'static str {
    kind.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cands(s: &str) -> Vec<(Kind, String)> {
        candidate_files(&parse_any(s).unwrap())
    }

    fn c(kind: Kind, stem: &str) -> (Kind, String) {
        (kind, stem.to_string())
    }

    #[test]
    fn every_spelling_parses_to_one_name() {
        let want = TypeName::parse("sensor_msgs/msg/LaserScan").unwrap();
        for s in [
            "sensor_msgs/msg/LaserScan",
            "sensor_msgs/LaserScan",
            "sensor_msgs::msg::dds_::LaserScan_",
            " sensor_msgs/LaserScan\n",
        ] {
            assert_eq!(parse_any(s).unwrap(), want, "{s}");
        }
        assert!(parse_any("sensor_msgs::msg::LaserScan").is_err());
        assert!(parse_any("../etc/passwd").is_err());
        assert!(parse_any("pkg/msg/../../x").is_err());
    }

    #[test]
    fn structures_map_to_their_interface_file() {
        assert_eq!(
            cands("sensor_msgs/msg/LaserScan"),
            [c(Kind::Msg, "LaserScan")]
        );
        assert_eq!(
            cands("example_interfaces/srv/AddTwoInts_Request"),
            [c(Kind::Srv, "AddTwoInts")]
        );
        assert_eq!(
            cands("example_interfaces::srv::dds_::AddTwoInts_Event_"),
            [c(Kind::Srv, "AddTwoInts")]
        );
        assert_eq!(
            cands("example_interfaces/action/Fibonacci_SendGoal_Request"),
            [c(Kind::Action, "Fibonacci")]
        );
        assert_eq!(
            cands("example_interfaces/action/Fibonacci_FeedbackMessage"),
            [c(Kind::Action, "Fibonacci")]
        );
        // A short name: the message file first, then the service's and action's.
        assert_eq!(
            cands("example_interfaces/AddTwoInts_Request"),
            [
                c(Kind::Msg, "AddTwoInts_Request"),
                c(Kind::Srv, "AddTwoInts")
            ]
        );
        assert_eq!(
            cands("p/GetResult_Request"),
            [c(Kind::Msg, "GetResult_Request"), c(Kind::Srv, "GetResult")]
        );
        // An action whose own name ends like a structure: every reading is tried.
        assert_eq!(
            cands("p/action/Move_Goal_Goal"),
            [c(Kind::Action, "Move_Goal")]
        );
        assert_eq!(
            cands("p/action/Move_Goal_Result"),
            [c(Kind::Action, "Move_Goal")]
        );
        assert_eq!(
            cands("p/srv/A_Request_Response"),
            [c(Kind::Srv, "A_Request")]
        );
    }

    #[test]
    fn whole_services_and_actions_are_not_messages() {
        assert!(is_whole_interface(&parse_any("p/srv/AddTwoInts").unwrap()));
        assert!(is_whole_interface(
            &parse_any("p/action/Fibonacci").unwrap()
        ));
        assert!(!is_whole_interface(&parse_any("p/msg/AddTwoInts").unwrap()));
        assert!(!is_whole_interface(
            &parse_any("p/srv/AddTwoInts_Response").unwrap()
        ));
        // A service named `Request` has the structure `Request_Request`.
        assert!(is_whole_interface(&parse_any("p/srv/Request").unwrap()));
    }
}
