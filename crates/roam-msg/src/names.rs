//! Type names and the three spellings ROS 2 uses for them.
//!
//! | spelling | example | used by |
//! |---|---|---|
//! | full | `sensor_msgs/msg/LaserScan` | rosidl, rclpy, rosbags, roam's registry |
//! | short | `sensor_msgs/LaserScan` | `.msg` field types, ros2msg `MSG:` lines, roslibpy |
//! | DDS | `sensor_msgs::msg::dds_::LaserScan_` | the DDS type name on the wire |

use std::fmt;

use crate::error::NameError;

/// The interface folder a type comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Msg,
    Srv,
    Action,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Msg => "msg",
            Kind::Srv => "srv",
            Kind::Action => "action",
        }
    }

    fn parse(s: &str) -> Option<Kind> {
        match s {
            "msg" => Some(Kind::Msg),
            "srv" => Some(Kind::Srv),
            "action" => Some(Kind::Action),
            _ => None,
        }
    }
}

/// A fully qualified message type name: package, interface kind, type.
///
/// Services and actions are not messages themselves: their request, response, goal, ...
/// structures are, under the service's or action's kind (`example_interfaces/srv/AddTwoInts_Request`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TypeName {
    pub package: String,
    pub kind: Kind,
    pub name: String,
}

impl TypeName {
    /// A name from its parts, checked.
    pub fn new(package: &str, kind: Kind, name: &str) -> Result<TypeName, NameError> {
        if !is_package_name(package) {
            return Err(NameError::Package(package.to_string()));
        }
        if !is_type_name(name) {
            return Err(NameError::Type(name.to_string()));
        }
        Ok(TypeName {
            package: package.to_string(),
            kind,
            name: name.to_string(),
        })
    }

    /// Parses `pkg/msg/Type`, `pkg/srv/Type_Request`, `pkg/action/Type_Goal` or the short
    /// `pkg/Type` (taken as a message).
    pub fn parse(s: &str) -> Result<TypeName, NameError> {
        let parts: Vec<&str> = s.split('/').collect();
        match parts.as_slice() {
            [pkg, name] => TypeName::new(pkg, Kind::Msg, name),
            [pkg, kind, name] => {
                let kind = Kind::parse(kind).ok_or_else(|| NameError::Malformed(s.to_string()))?;
                TypeName::new(pkg, kind, name)
            }
            _ => Err(NameError::Malformed(s.to_string())),
        }
    }

    /// Parses a DDS type name `pkg::msg::dds_::Type_`.
    pub fn from_dds(s: &str) -> Result<TypeName, NameError> {
        let parts: Vec<&str> = s.split("::").collect();
        match parts.as_slice() {
            [pkg, kind, "dds_", name] if name.ends_with('_') && name.len() > 1 => {
                let kind = Kind::parse(kind).ok_or_else(|| NameError::Malformed(s.to_string()))?;
                TypeName::new(pkg, kind, &name[..name.len() - 1])
            }
            _ => Err(NameError::Malformed(s.to_string())),
        }
    }

    /// `pkg/msg/Type`.
    pub fn full(&self) -> String {
        self.to_string()
    }

    /// `pkg/Type` for messages; services' and actions' structures keep their kind
    /// (`pkg/srv/X_Request`) because the short form would be ambiguous.
    pub fn short(&self) -> String {
        match self.kind {
            Kind::Msg => format!("{}/{}", self.package, self.name),
            _ => self.full(),
        }
    }

    /// `pkg::msg::dds_::Type_`, the DDS type name rmw implementations register.
    pub fn dds(&self) -> String {
        format!(
            "{}::{}::dds_::{}_",
            self.package,
            self.kind.as_str(),
            self.name
        )
    }

    /// A sibling type in the same package and kind (`X_Request` next to `X_Response`).
    pub fn sibling(&self, name: String) -> TypeName {
        TypeName {
            package: self.package.clone(),
            kind: self.kind,
            name,
        }
    }
}

impl fmt::Display for TypeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.package, self.kind.as_str(), self.name)
    }
}

impl std::str::FromStr for TypeName {
    type Err = NameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TypeName::parse(s)
    }
}

/// Package names: lower case, digits and underscores, starting with a letter (rosidl's rule,
/// which every ROS 2 package follows).
pub fn is_package_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some('a'..='z'))
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Type names: a letter, then letters, digits and underscores (rosidl wants CamelCase; the
/// underscore appears in derived names such as `Fibonacci_SendGoal_Request`).
pub fn is_type_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Field and constant names: a letter, then letters, digits and underscores. rosidl is stricter
/// (lower case for fields, upper case for constants); definitions recorded by other tools are
/// accepted as rosbags accepts them.
pub fn is_member_name(s: &str) -> bool {
    is_type_name(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_spellings_round_trip() {
        let t = TypeName::parse("sensor_msgs/msg/LaserScan").unwrap();
        assert_eq!(t.short(), "sensor_msgs/LaserScan");
        assert_eq!(t.dds(), "sensor_msgs::msg::dds_::LaserScan_");
        assert_eq!(TypeName::from_dds(&t.dds()).unwrap(), t);
        assert_eq!(TypeName::parse(&t.short()).unwrap(), t);
        let r = TypeName::parse("example_interfaces/srv/AddTwoInts_Request").unwrap();
        assert_eq!(
            r.dds(),
            "example_interfaces::srv::dds_::AddTwoInts_Request_"
        );
        assert_eq!(r.short(), "example_interfaces/srv/AddTwoInts_Request");
    }

    #[test]
    fn bad_names_are_refused() {
        for s in [
            "",
            "a",
            "A/B",
            "pkg/x/Type",
            "pkg/msg/",
            "pkg/msg/Type/x",
            "pkg/1Type",
        ] {
            assert!(TypeName::parse(s).is_err(), "{s}");
        }
        assert!(TypeName::from_dds("std_msgs::msg::String").is_err());
        assert!(TypeName::from_dds("std_msgs::msg::dds_::_").is_err());
    }
}
