//! The concatenated "ros2msg" form: a type's text, then for each dependency a line of `=`,
//! a line `MSG: pkg/Type` and that type's text. Foxglove (`schemaEncoding: ros2msg`), MCAP and
//! rosbag2 use it, and roam carries it in sealed topic metadata.

use crate::error::RegistryError;
use crate::names::TypeName;
use crate::schema::MessageDef;

/// Splits ros2msg text into (type, definition text), the root first.
pub fn split(root: &TypeName, text: &str) -> Result<Vec<(TypeName, String)>, RegistryError> {
    let mut parts = vec![(root.clone(), String::new())];
    let mut expect_header = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.len() >= 3 && trimmed.bytes().all(|b| b == b'=') {
            expect_header = true;
            continue;
        }
        if expect_header {
            if trimmed.is_empty() {
                continue;
            }
            let name = trimmed.strip_prefix("MSG:").ok_or_else(|| {
                RegistryError::Ros2Msg(format!(
                    "expected 'MSG: pkg/Type' after a separator, found {trimmed:?}"
                ))
            })?;
            let name = TypeName::parse(name.trim())?;
            if parts.iter().any(|(n, _)| *n == name) {
                return Err(RegistryError::Ros2Msg(format!("{name} appears twice")));
            }
            parts.push((name, String::new()));
            expect_header = false;
            continue;
        }
        if let Some(last) = parts.last_mut() {
            last.1.push_str(line);
            last.1.push('\n');
        }
    }
    if expect_header {
        return Err(RegistryError::Ros2Msg(
            "text ends with a separator and no MSG: line".into(),
        ));
    }
    Ok(parts)
}

/// Joins definitions (root first) into ros2msg text, with 80 `=` as rosbag2 and rosbags write.
pub fn join(defs: &[&MessageDef]) -> String {
    let mut out = String::new();
    for (i, def) in defs.iter().enumerate() {
        if i > 0 {
            out.push_str(&"=".repeat(80));
            out.push_str("\nMSG: ");
            out.push_str(&def.name.short());
            out.push('\n');
        }
        out.push_str(&def.to_msg_text());
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::registry::TypeRegistry;

    #[test]
    fn round_trips_through_a_registry() {
        let mut reg = TypeRegistry::with_builtins();
        reg.add_msg(
            "std_msgs/msg/Header",
            "builtin_interfaces/Time stamp\nstring frame_id\n",
        )
        .unwrap();
        reg.add_msg(
            "my/msg/Scan",
            "# comment\nHeader header\nfloat32[] ranges\nmy/Point[2] p\n",
        )
        .unwrap();
        reg.add_msg("my/msg/Point", "float64 x 1.5\n").unwrap();
        let text = reg.to_ros2msg("my/msg/Scan").unwrap();
        assert!(text.contains("\nMSG: std_msgs/Header\n"));
        assert!(text.contains("\nMSG: builtin_interfaces/Time\n"));
        let mut other = TypeRegistry::new();
        other.add_ros2msg("my/msg/Scan", &text).unwrap();
        for name in [
            "my/msg/Scan",
            "my/msg/Point",
            "std_msgs/msg/Header",
            "builtin_interfaces/msg/Time",
        ] {
            assert_eq!(other.get(name), reg.get(name), "{name}");
        }
        assert_eq!(other.to_ros2msg("my/Scan").unwrap(), text);
    }

    #[test]
    fn malformed_text_is_refused() {
        let mut reg = TypeRegistry::new();
        assert!(reg.add_ros2msg("a/msg/T", "int8 x\n===\nint8 y\n").is_err());
        assert!(reg.add_ros2msg("a/msg/T", "int8 x\n=====\n").is_err());
        assert!(reg
            .add_ros2msg("a/msg/T", "int8 x\n===\nMSG: a/T\nint8 y\n")
            .is_err());
    }
}
