//! Definitions by full name, dependency resolution, and the resolved types the codecs use.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::builtin::BUILTIN;
use crate::error::RegistryError;
use crate::layout::{
    json_key, Elem, FieldLayout, MessageType, StructLayout, MAX_FIXED_SIZE, MAX_TYPE_DEPTH,
};
use crate::names::{Kind, TypeName};
use crate::parse::{derive, idl, msg};
use crate::schema::{BaseType, MessageDef};

/// Message definitions by full name (`pkg/msg/Type`, `pkg/srv/X_Request`, ...).
///
/// The registry takes text: finding `.msg` files (under `AMENT_PREFIX_PATH`, `msg_paths`) is
/// the caller's job. Adding the same definition twice is harmless; adding a different one under
/// a known name is refused, so an announced definition cannot silently change a type.
#[derive(Debug, Clone, Default)]
pub struct TypeRegistry {
    defs: BTreeMap<TypeName, Arc<MessageDef>>,
}

impl TypeRegistry {
    /// An empty registry.
    pub fn new() -> TypeRegistry {
        TypeRegistry::default()
    }

    /// A registry holding the definitions every ROS 2 system has and actions need:
    /// `builtin_interfaces` Time/Duration, `unique_identifier_msgs/UUID`, `action_msgs`
    /// GoalInfo/GoalStatus/GoalStatusArray/CancelGoal and `service_msgs/ServiceEventInfo`.
    pub fn with_builtins() -> TypeRegistry {
        let mut reg = TypeRegistry::new();
        for (kind, name, text) in BUILTIN {
            // The embedded texts are fixed and covered by tests; a failure would be a bug here,
            // so it is dropped rather than panicking in library code.
            let _ = match *kind {
                "srv" => reg.add_srv(name, text).map(|_| ()),
                _ => reg.add_msg(name, text).map(|_| ()),
            };
        }
        reg
    }

    /// Adds one parsed definition.
    pub fn add(&mut self, def: MessageDef) -> Result<(), RegistryError> {
        match self.defs.get(&def.name) {
            Some(have) if **have == def => Ok(()),
            Some(_) => Err(RegistryError::Conflict(def.name)),
            None => {
                self.defs.insert(def.name.clone(), Arc::new(def));
                Ok(())
            }
        }
    }

    fn add_all(&mut self, defs: Vec<MessageDef>) -> Result<Vec<TypeName>, RegistryError> {
        let names = defs.iter().map(|d| d.name.clone()).collect();
        for def in defs {
            self.add(def)?;
        }
        Ok(names)
    }

    /// Adds a `.msg` text under `name` (`pkg/msg/Type` or `pkg/Type`).
    pub fn add_msg(&mut self, name: &str, text: &str) -> Result<TypeName, RegistryError> {
        let name = TypeName::parse(name)?;
        let def = msg::parse_msg(&name, text)?;
        self.add(def)?;
        Ok(name)
    }

    /// Adds a `.srv` text under `pkg/srv/Name`: `Name_Request`, `Name_Response` and the
    /// derived `Name_Event`.
    pub fn add_srv(&mut self, name: &str, text: &str) -> Result<Vec<TypeName>, RegistryError> {
        let name = with_kind(name, Kind::Srv)?;
        let [req, res] = msg::parse_srv(&name, text)?;
        self.add_all(vec![req, res, derive::service_event(&name)])
    }

    /// Adds an `.action` text under `pkg/action/Name`: Goal, Result, Feedback and the derived
    /// `SendGoal_Request/Response`, `GetResult_Request/Response`, `FeedbackMessage`.
    pub fn add_action(&mut self, name: &str, text: &str) -> Result<Vec<TypeName>, RegistryError> {
        let name = with_kind(name, Kind::Action)?;
        let mut defs = msg::parse_action(&name, text)?.to_vec();
        defs.extend(derive::action_types(&name));
        self.add_all(defs)
    }

    /// Adds every structure of a rosidl `.idl` text (services and actions get their derived
    /// types as from `.srv`/`.action`).
    pub fn add_idl(&mut self, text: &str) -> Result<Vec<TypeName>, RegistryError> {
        let defs = idl::parse_idl(text)?;
        self.add_all(defs)
    }

    /// Adds a concatenated `ros2msg` text (see [`crate::ros2msg`]) whose first part is `root`.
    pub fn add_ros2msg(&mut self, root: &str, text: &str) -> Result<TypeName, RegistryError> {
        let root = TypeName::parse(root)?;
        for (name, part) in crate::ros2msg::split(&root, text)? {
            self.add(msg::parse_msg(&name, &part)?)?;
        }
        Ok(root)
    }

    /// The definition of `name` (`pkg/msg/Type` or `pkg/Type`).
    pub fn get(&self, name: &str) -> Option<&MessageDef> {
        let t = TypeName::parse(name).ok()?;
        self.find(&t).map(|d| &**d)
    }

    /// Finds a type; a name given as a message (`pkg/Type`) also finds a service's or action's
    /// structure of that name, since short names do not say which they are.
    fn find(&self, t: &TypeName) -> Option<&Arc<MessageDef>> {
        self.defs.get(t).or_else(|| {
            if t.kind != Kind::Msg {
                return None;
            }
            [Kind::Srv, Kind::Action].iter().find_map(|k| {
                self.defs.get(&TypeName {
                    kind: *k,
                    ..t.clone()
                })
            })
        })
    }

    /// Every known type name.
    pub fn names(&self) -> impl Iterator<Item = &TypeName> {
        self.defs.keys()
    }

    /// `root` and all it depends on, depth first in order of first use (the order ros2msg,
    /// rosbag2 and rosbags write dependencies in). Fails naming the first missing type.
    pub fn closure(&self, root: &str) -> Result<Vec<&MessageDef>, RegistryError> {
        let t = TypeName::parse(root)?;
        let def = self
            .find(&t)
            .ok_or_else(|| RegistryError::Unknown(t.full()))?;
        let mut out: Vec<&MessageDef> = vec![def];
        // Pre-order DFS with an explicit stack of (definition, next dependency index).
        let mut stack: Vec<(&MessageDef, usize)> = vec![(def, 0)];
        while let Some((cur, idx)) = stack.pop() {
            let deps: Vec<&TypeName> = cur.dependencies().collect();
            if idx >= deps.len() {
                continue;
            }
            stack.push((cur, idx + 1));
            let dep = deps[idx];
            let found = self.find(dep).ok_or_else(|| RegistryError::Missing {
                missing: dep.full(),
                needed_by: cur.name.full(),
            })?;
            if !out.iter().any(|d| d.name == found.name) {
                out.push(found);
                if stack.len() > MAX_TYPE_DEPTH {
                    return Err(RegistryError::TooDeep(MAX_TYPE_DEPTH));
                }
                stack.push((found, 0));
            }
        }
        Ok(out)
    }

    /// Every type `root` needs that the registry lacks, with who needs it.
    pub fn missing(&self, root: &str) -> Vec<(TypeName, TypeName)> {
        let mut missing = Vec::new();
        let mut seen = Vec::new();
        let mut todo = match TypeName::parse(root).ok().and_then(|t| self.find(&t)) {
            Some(d) => vec![d],
            None => return missing,
        };
        while let Some(def) = todo.pop() {
            for dep in def.dependencies() {
                match self.find(dep) {
                    Some(d) if !seen.contains(&d.name) => {
                        seen.push(d.name.clone());
                        todo.push(d);
                    }
                    Some(_) => {}
                    None if !missing.iter().any(|(m, _)| m == dep) => {
                        missing.push((dep.clone(), def.name.clone()))
                    }
                    None => {}
                }
            }
        }
        missing
    }

    /// `root` and its dependencies as one ros2msg text (the schema Foxglove, MCAP and rosbag2
    /// carry).
    pub fn to_ros2msg(&self, root: &str) -> Result<String, RegistryError> {
        Ok(crate::ros2msg::join(&self.closure(root)?))
    }

    /// Resolves `root` into the form the codecs walk. Fails if a dependency is missing, types
    /// contain themselves, or nest deeper than [`MAX_TYPE_DEPTH`].
    pub fn resolve(&self, root: &str) -> Result<MessageType, RegistryError> {
        let t = TypeName::parse(root)?;
        let mut done = HashMap::new();
        let mut stack = Vec::new();
        let def = self
            .find(&t)
            .ok_or_else(|| RegistryError::Unknown(t.full()))?;
        Ok(MessageType(self.build(def, &mut done, &mut stack)?))
    }

    fn build(
        &self,
        def: &MessageDef,
        done: &mut HashMap<TypeName, Arc<StructLayout>>,
        stack: &mut Vec<TypeName>,
    ) -> Result<Arc<StructLayout>, RegistryError> {
        if let Some(l) = done.get(&def.name) {
            return Ok(l.clone());
        }
        if stack.contains(&def.name) {
            return Err(RegistryError::Recursive(def.name.clone()));
        }
        if stack.len() >= MAX_TYPE_DEPTH {
            return Err(RegistryError::TooDeep(MAX_TYPE_DEPTH));
        }
        stack.push(def.name.clone());
        let mut fields = Vec::with_capacity(def.fields.len());
        for f in &def.fields {
            let elem = match &f.ty.base {
                BaseType::Primitive(p) => Elem::Prim(*p),
                BaseType::String { bound } => Elem::String { bound: *bound },
                BaseType::WString { bound } => Elem::WString { bound: *bound },
                BaseType::Named(n) => {
                    let sub = self.find(n).ok_or_else(|| RegistryError::Missing {
                        missing: n.full(),
                        needed_by: def.name.full(),
                    })?;
                    Elem::Struct(self.build(sub, done, stack)?)
                }
            };
            let binary = is_binary(&elem, f.ty.multiplicity);
            fields.push(FieldLayout {
                name: f.name.clone(),
                json_key: json_key(&f.name),
                elem,
                multiplicity: f.ty.multiplicity,
                default: f.default.clone(),
                binary,
            });
        }
        stack.pop();
        let time_like = def.name.package == "builtin_interfaces"
            && matches!(def.name.name.as_str(), "Time" | "Duration");
        let min_size = StructLayout::compute_min_size(&fields);
        if min_size > MAX_FIXED_SIZE {
            return Err(RegistryError::TooLarge {
                ty: def.name.clone(),
                size: min_size,
                limit: MAX_FIXED_SIZE,
            });
        }
        let layout = Arc::new(StructLayout {
            name: def.name.clone(),
            fields,
            time_like,
            min_size,
        });
        done.insert(def.name.clone(), layout.clone());
        Ok(layout)
    }
}

/// rosbridge encodes as base64 the fields whose rosidl type string is `sequence<uint8>` or
/// `uint8[N]` (`.msg` `uint8[]`, `char[]`, `uint8[N]`, `char[N]`); bounded sequences and
/// `byte[]` (`octet`) stay lists of numbers.
fn is_binary(elem: &Elem, m: crate::schema::Multiplicity) -> bool {
    use crate::schema::{Multiplicity as M, Primitive as P};
    matches!(elem, Elem::Prim(P::UInt8 | P::Char)) && matches!(m, M::Unbounded | M::Fixed(_))
}

fn with_kind(name: &str, kind: Kind) -> Result<TypeName, RegistryError> {
    let parts: Vec<&str> = name.split('/').collect();
    let t = match parts.as_slice() {
        [pkg, n] => TypeName::new(pkg, kind, n)?,
        _ => TypeName::parse(name)?,
    };
    if t.kind != kind {
        return Err(crate::error::NameError::Malformed(name.to_string()).into());
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_resolve_and_actions_derive() {
        let mut reg = TypeRegistry::with_builtins();
        assert!(reg.resolve("action_msgs/msg/GoalStatusArray").is_ok());
        assert!(reg.resolve("action_msgs/srv/CancelGoal_Response").is_ok());
        reg.add_action(
            "example_interfaces/action/Fibonacci",
            "int32 order\n---\nint32[] sequence\n---\nint32[] sequence\n",
        )
        .unwrap();
        let t = reg
            .resolve("example_interfaces/action/Fibonacci_SendGoal_Request")
            .unwrap();
        assert_eq!(t.field_names().collect::<Vec<_>>(), ["goal_id", "goal"]);
        assert!(reg
            .resolve("example_interfaces/action/Fibonacci_FeedbackMessage")
            .is_ok());
        assert!(reg
            .resolve("example_interfaces/Fibonacci_GetResult_Response")
            .is_ok());
    }

    #[test]
    fn missing_types_are_named() {
        let mut reg = TypeRegistry::new();
        reg.add_msg("a/msg/Outer", "b/Inner x\nc/Other[] y\n")
            .unwrap();
        let err = reg.resolve("a/Outer").unwrap_err();
        assert_eq!(
            err.to_string(),
            "type b/msg/Inner is not known (needed by a/msg/Outer); add its definition"
        );
        let missing: Vec<String> = reg
            .missing("a/msg/Outer")
            .iter()
            .map(|(m, _)| m.full())
            .collect();
        assert_eq!(missing, ["b/msg/Inner", "c/msg/Other"]);
        assert!(matches!(
            reg.resolve("z/msg/Nope"),
            Err(RegistryError::Unknown(_))
        ));
    }

    #[test]
    fn conflicts_and_recursion_are_refused() {
        let mut reg = TypeRegistry::new();
        reg.add_msg("a/msg/T", "int32 x\n").unwrap();
        reg.add_msg("a/msg/T", "int32 x\n").unwrap();
        assert!(matches!(
            reg.add_msg("a/msg/T", "int64 x\n"),
            Err(RegistryError::Conflict(_))
        ));
        reg.add_msg("a/msg/Big", "uint8[1000000] a\nuint64[1000000000] b\n")
            .unwrap();
        assert!(matches!(
            reg.resolve("a/msg/Big"),
            Err(RegistryError::TooLarge { .. })
        ));
        reg.add_msg("a/msg/R", "S s\n").unwrap();
        reg.add_msg("a/msg/S", "R[] r\n").unwrap();
        assert!(matches!(
            reg.resolve("a/msg/R"),
            Err(RegistryError::Recursive(_))
        ));
    }
}
