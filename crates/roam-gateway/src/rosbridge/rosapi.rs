//! The `/rosapi/*` services rosbridge clients call to explore a ROS graph, answered from the
//! realm directory (what every member offers and imports) instead of a ROS graph. Pure: given
//! the listing, what the client may see, and the type definitions at hand.
//!
//! A client sees only the names it may subscribe to, publish on or call: the directory never
//! tells a token holder about topics outside its allow lists.

use roam_edge::directory::Listing;
use roam_msg::schema::{field_type_text, Literal, Multiplicity};
use roam_msg::TypeRegistry;
use roam_proto::directory::ItemKind;
use serde_json::{json, Value};

/// A rosapi question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    Topics,
    TopicsAndRawTypes,
    TopicType(String),
    TopicsForType(String),
    Services,
    ServiceType(String),
    ActionServers,
    MessageDetails(String),
    GetTime,
    GetRosVersion,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RosapiError {
    #[error("{0} is not a rosapi service this gateway answers (topics, topics_and_raw_types, topic_type, topics_for_type, services, service_type, action_servers, message_details, get_time, get_ros_version)")]
    Unknown(String),
    #[error("{service}: args: {why}")]
    Args { service: String, why: String },
}

/// Whether `service` is a rosapi service (answered here, never sent to the realm), by its
/// full name or relative to the root as roslibjs calls them (`rosapi/topics`).
pub fn is_rosapi(service: &str) -> bool {
    service.starts_with("/rosapi/") || service.starts_with("rosapi/")
}

/// The question a call asks; `args` is its JSON (None: no args).
pub fn parse(service: &str, args: Option<&str>) -> Result<Query, RosapiError> {
    let name = service
        .strip_prefix("/rosapi/")
        .or_else(|| service.strip_prefix("rosapi/"))
        .unwrap_or(service);
    let args: Value = match args {
        None => Value::Null,
        Some(text) => serde_json::from_str(text).map_err(|e| RosapiError::Args {
            service: service.into(),
            why: e.to_string(),
        })?,
    };
    let field = |key: &str| -> Result<String, RosapiError> {
        let v = match &args {
            Value::Object(m) => m.get(key).cloned(),
            // Positional args, as rosbridge allows.
            Value::Array(a) => a.first().cloned(),
            _ => None,
        };
        match v {
            Some(Value::String(s)) => Ok(s),
            _ => Err(RosapiError::Args {
                service: service.into(),
                why: format!("needs {{\"{key}\": \"...\"}}"),
            }),
        }
    };
    Ok(match name {
        "topics" => Query::Topics,
        "topics_and_raw_types" => Query::TopicsAndRawTypes,
        "topic_type" => Query::TopicType(field("topic")?),
        "topics_for_type" => Query::TopicsForType(field("type")?),
        "services" => Query::Services,
        "service_type" => Query::ServiceType(field("service")?),
        "action_servers" => Query::ActionServers,
        "message_details" => Query::MessageDetails(field("type")?),
        "get_time" => Query::GetTime,
        "get_ros_version" => Query::GetRosVersion,
        _ => return Err(RosapiError::Unknown(service.into())),
    })
}

/// A rosapi call's CBOR `args` as the JSON text [`parse`] reads: a map (or a list, for
/// positional args) of strings, numbers and booleans, which is all rosapi requests hold;
/// anything else in it is left out.
pub fn cbor_args(service: &str, bytes: &[u8]) -> Result<String, RosapiError> {
    use minicbor::data::Type;
    let mut d = minicbor::Decoder::new(bytes);
    let e = |e: minicbor::decode::Error| RosapiError::Args {
        service: service.into(),
        why: format!("malformed CBOR: {e}"),
    };
    fn scalar(d: &mut minicbor::Decoder) -> Result<Option<Value>, minicbor::decode::Error> {
        Ok(Some(match d.datatype()? {
            Type::String => Value::from(d.str()?),
            Type::Bool => Value::from(d.bool()?),
            Type::U8 | Type::U16 | Type::U32 | Type::U64 => Value::from(d.u64()?),
            Type::I8 | Type::I16 | Type::I32 | Type::I64 => Value::from(d.i64()?),
            Type::F16 | Type::F32 | Type::F64 => Value::from(d.f64()?),
            _ => {
                d.skip()?;
                return Ok(None);
            }
        }))
    }
    let v = match d.datatype().map_err(e)? {
        Type::Map => {
            let n = d.map().map_err(e)?.unwrap_or(0);
            let mut m = serde_json::Map::new();
            for _ in 0..n {
                let key = match d.datatype().map_err(e)? {
                    Type::String => Some(d.str().map_err(e)?.to_string()),
                    _ => {
                        d.skip().map_err(e)?;
                        None
                    }
                };
                let value = scalar(&mut d).map_err(e)?;
                if let (Some(k), Some(v)) = (key, value) {
                    m.insert(k, v);
                }
            }
            Value::Object(m)
        }
        Type::Array => {
            let n = d.array().map_err(e)?.unwrap_or(0);
            let mut items = Vec::new();
            for _ in 0..n {
                if let Some(v) = scalar(&mut d).map_err(e)? {
                    items.push(v);
                }
            }
            Value::Array(items)
        }
        Type::Null | Type::Undefined => Value::Null,
        t => {
            return Err(RosapiError::Args {
                service: service.into(),
                why: format!("a map or a list, not {t}"),
            })
        }
    };
    Ok(v.to_string())
}

/// What answers a query needs besides the listing.
pub struct Context<'a> {
    pub listing: &'a Listing,
    /// Whether the client may see this topic, service or action name.
    pub visible: &'a dyn Fn(ItemKind, &str) -> bool,
    /// The ros2msg text of a type (`pkg/msg/T`), when known.
    pub definition: &'a dyn Fn(&str) -> Option<String>,
    /// Now, as (sec, nanosec) since the Unix epoch.
    pub now: (i64, u32),
}

/// The `values` of the answer.
pub fn answer(q: &Query, cx: &Context) -> Value {
    let topics = || {
        cx.listing
            .topics
            .iter()
            .filter(|t| (cx.visible)(ItemKind::Topic, &t.name))
            .map(|t| (t.name.clone(), t.types.first().cloned().unwrap_or_default()))
            .collect::<Vec<_>>()
    };
    let services = || {
        cx.listing
            .services
            .iter()
            .filter(|t| (cx.visible)(ItemKind::Service, &t.name))
            .collect::<Vec<_>>()
    };
    match q {
        Query::Topics => {
            let (names, types): (Vec<_>, Vec<_>) = topics().into_iter().unzip();
            json!({"topics": names, "types": types})
        }
        Query::TopicsAndRawTypes => {
            let (names, types): (Vec<_>, Vec<_>) = topics().into_iter().unzip();
            let defs: Vec<String> = types
                .iter()
                .map(|t| (cx.definition)(t).unwrap_or_default())
                .collect();
            json!({"topics": names, "types": types, "typedefs_full_text": defs})
        }
        Query::TopicType(name) => {
            let ty = topics()
                .into_iter()
                .find(|(n, _)| n == name)
                .map(|(_, t)| t)
                .unwrap_or_default();
            json!({ "type": ty })
        }
        Query::TopicsForType(ty) => {
            let want = normalize(ty);
            let names: Vec<String> = topics()
                .into_iter()
                .filter(|(_, t)| *t == want)
                .map(|(n, _)| n)
                .collect();
            json!({ "topics": names })
        }
        Query::Services => {
            let names: Vec<&str> = services().iter().map(|s| s.name.as_str()).collect();
            json!({ "services": names })
        }
        Query::ServiceType(name) => {
            let ty = services()
                .iter()
                .find(|s| s.name == *name)
                .and_then(|s| s.types.first().cloned())
                .unwrap_or_default();
            json!({ "type": ty })
        }
        Query::ActionServers => {
            let names: Vec<&str> = cx
                .listing
                .actions
                .iter()
                .filter(|a| (cx.visible)(ItemKind::Action, &a.name))
                .map(|a| a.name.as_str())
                .collect();
            json!({ "action_servers": names })
        }
        Query::MessageDetails(ty) => {
            let full = normalize(ty);
            json!({ "typedefs": (cx.definition)(&full).map(|text| typedefs(&full, &text)).unwrap_or_default() })
        }
        Query::GetTime => json!({"time": {"sec": cx.now.0, "nanosec": cx.now.1}}),
        Query::GetRosVersion => json!({"version": 2, "distro": "roam"}),
    }
}

/// `pkg/Type` as `pkg/msg/Type`; other spellings as given.
fn normalize(ty: &str) -> String {
    roam_edge::ros_names::full_type(ty, false).unwrap_or_else(|_| ty.to_string())
}

/// rosapi's `TypeDef`s of a type and everything it uses, from its ros2msg text.
fn typedefs(root: &str, text: &str) -> Vec<Value> {
    let mut reg = TypeRegistry::with_builtins();
    if reg.add_ros2msg(root, text).is_err() {
        return Vec::new();
    }
    let Ok(defs) = reg.closure(root) else {
        return Vec::new();
    };
    defs.iter()
        .map(|d| {
            let arraylen: Vec<i64> = d
                .fields
                .iter()
                .map(|f| match f.ty.multiplicity {
                    Multiplicity::Single => -1,
                    Multiplicity::Fixed(n) => i64::from(n),
                    Multiplicity::Bounded(_) | Multiplicity::Unbounded => 0,
                })
                .collect();
            let types: Vec<String> = d
                .fields
                .iter()
                .map(|f| {
                    let t = field_type_text(&f.ty);
                    // rosapi gives the element type; the length is in fieldarraylen.
                    t.split('[').next().unwrap_or_default().to_string()
                })
                .collect();
            json!({
                "type": d.name.full(),
                "fieldnames": d.fields.iter().map(|f| f.name.clone()).collect::<Vec<_>>(),
                "fieldtypes": types,
                "fieldarraylen": arraylen,
                "examples": d.fields.iter().map(|f| f.default.as_ref().map(literal).unwrap_or_default()).collect::<Vec<_>>(),
                "constnames": d.constants.iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
                "constvalues": d.constants.iter().map(|c| literal(&c.value)).collect::<Vec<_>>(),
            })
        })
        .collect()
}

fn literal(l: &Literal) -> String {
    match l {
        Literal::Bool(b) => b.to_string(),
        Literal::Int(i) => i.to_string(),
        Literal::Float(x) => x.to_string(),
        Literal::String(s) => s.clone(),
        Literal::Array(items) => format!(
            "[{}]",
            items.iter().map(literal).collect::<Vec<_>>().join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use roam_edge::directory::Listed;

    fn listed(name: &str, ty: &str) -> Listed {
        Listed {
            name: name.into(),
            types: vec![ty.into()],
            offered_by: vec![],
            imported_by: vec![],
        }
    }

    fn listing() -> Listing {
        Listing {
            members: vec!["robot".into()],
            topics: vec![
                listed("/chatter", "std_msgs/msg/String"),
                listed("/secret", "std_msgs/msg/String"),
                listed("/pose", "geometry_msgs/msg/PointStamped"),
            ],
            services: vec![
                listed("/add_two_ints", "example_interfaces/srv/AddTwoInts"),
                listed("/reboot", "std_srvs/srv/Trigger"),
            ],
            actions: vec![listed("/fibonacci", "example_interfaces/action/Fibonacci")],
        }
    }

    fn ask(service: &str, args: Option<&str>) -> Value {
        let l = listing();
        let cx = Context {
            listing: &l,
            // A client that may read topics but call only /add_two_ints.
            visible: &|kind, n| match kind {
                ItemKind::Topic => n != "/secret",
                _ => n == "/add_two_ints",
            },
            definition: &|t| {
                (t == "std_msgs/msg/String").then(|| "uint8 A=1\nstring data\n".to_string())
            },
            now: (12, 34),
        };
        answer(&parse(service, args).unwrap(), &cx)
    }

    #[test]
    fn the_directory_answers_rosapi_and_hides_what_the_client_may_not_see() {
        assert_eq!(
            ask("/rosapi/topics", Some("{}")),
            json!({"topics": ["/chatter", "/pose"], "types": ["std_msgs/msg/String", "geometry_msgs/msg/PointStamped"]})
        );
        assert_eq!(
            ask("/rosapi/topic_type", Some(r#"{"topic":"/pose"}"#)),
            json!({"type": "geometry_msgs/msg/PointStamped"})
        );
        assert_eq!(
            ask("/rosapi/topic_type", Some(r#"{"topic":"/secret"}"#)),
            json!({"type": ""})
        );
        assert_eq!(
            ask(
                "/rosapi/topics_for_type",
                Some(r#"{"type":"std_msgs/String"}"#)
            ),
            json!({"topics": ["/chatter"]})
        );
        assert_eq!(
            ask("/rosapi/services", None),
            json!({"services": ["/add_two_ints"]})
        );
        assert_eq!(
            ask("/rosapi/service_type", Some(r#"["/add_two_ints"]"#)),
            json!({"type": "example_interfaces/srv/AddTwoInts"})
        );
        assert_eq!(
            ask("/rosapi/service_type", Some(r#"["/reboot"]"#)),
            json!({"type": ""})
        );
        assert_eq!(
            ask("/rosapi/action_servers", None),
            json!({"action_servers": []})
        );
        assert_eq!(
            ask("/rosapi/get_time", None),
            json!({"time": {"sec": 12, "nanosec": 34}})
        );
        assert_eq!(ask("/rosapi/get_ros_version", None)["version"], 2);
        let raw = ask("/rosapi/topics_and_raw_types", None);
        assert_eq!(
            raw["typedefs_full_text"],
            json!(["uint8 A=1\nstring data\n", ""])
        );
        let d = ask(
            "/rosapi/message_details",
            Some(r#"{"type":"std_msgs/String"}"#),
        );
        assert_eq!(
            d,
            json!({"typedefs": [{"type": "std_msgs/msg/String", "fieldnames": ["data"], "fieldtypes": ["string"],
                "fieldarraylen": [-1], "examples": [""], "constnames": ["A"], "constvalues": ["1"]}]})
        );
    }

    #[test]
    fn relative_names_and_cbor_args_ask_the_same() {
        assert!(is_rosapi("rosapi/topics"));
        assert!(!is_rosapi("/robot/rosapi/topics"));
        assert_eq!(
            ask("rosapi/topic_type", Some(r#"{"topic":"/pose"}"#)),
            json!({"type": "geometry_msgs/msg/PointStamped"})
        );
        // {"topic": "/pose", "x": [1]} and ["/pose"] in CBOR.
        let mut map = Vec::new();
        let mut e = minicbor::Encoder::new(&mut map);
        e.map(2)
            .unwrap()
            .str("topic")
            .unwrap()
            .str("/pose")
            .unwrap();
        e.str("x").unwrap().array(1).unwrap().u8(1).unwrap();
        assert_eq!(
            cbor_args("/rosapi/topic_type", &map).unwrap(),
            r#"{"topic":"/pose"}"#
        );
        let mut list = Vec::new();
        minicbor::Encoder::new(&mut list)
            .array(1)
            .unwrap()
            .str("/pose")
            .unwrap();
        assert_eq!(
            ask(
                "/rosapi/topic_type",
                Some(&cbor_args("/rosapi/topic_type", &list).unwrap())
            ),
            json!({"type": "geometry_msgs/msg/PointStamped"})
        );
        assert!(cbor_args("/rosapi/topics", &[0xff]).is_err());
        assert!(cbor_args("/rosapi/topics", &[0x01]).is_err());
    }

    #[test]
    fn unknown_services_and_missing_args_are_named() {
        assert!(matches!(
            parse("/rosapi/nodes", None),
            Err(RosapiError::Unknown(_))
        ));
        let e = parse("/rosapi/topic_type", Some("{}")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/rosapi/topic_type: args: needs {\"topic\": \"...\"}"
        );
        assert!(parse("/rosapi/topics", Some("{")).is_err());
    }
}
