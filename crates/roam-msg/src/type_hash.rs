//! ROS 2 type hashes (`RIHS01_<sha256>`, REP 2011), computed from the definitions a
//! [`TypeRegistry`] holds.
//!
//! Jazzy and later put the hash of a topic's type in each DDS endpoint's USER_DATA
//! (`typehash=RIHS01_<64 hex>;`); Humble puts none. A proxy computes it here to announce it for
//! a node that did not.
//!
//! The hash is rosidl_generator_type_description's: SHA-256 of the JSON text Python's
//! `json.dumps` writes (separators `", "` and `": "`, keys in the order below, `ensure_ascii`) of
//!
//! ```text
//! {"type_description": STRUCT(root),
//!  "referenced_type_descriptions": [STRUCT(t) for every other type in root's closure, by name]}
//! STRUCT = {"type_name": "pkg/msg/Name",
//!           "fields": [{"name": .., "type": {"type_id": N, "capacity": C,
//!                                             "string_capacity": S, "nested_type_name": ".."}}]}
//! ```
//!
//! Fields keep definition order; constants and default values are not part of it; a type with
//! no fields has rosidl's one `uint8 structure_needs_at_least_one_member`. Type names are as
//! rosidl names them (`pkg/srv/X_Request`, `pkg/action/X_FeedbackMessage`), which is how the
//! registry stores the types it derives.
//!
//! `type_id` is the `type_description_interfaces/FieldType` constant: nested type 1, int8 2,
//! uint8 3, int16 4, uint16 5, int32 6, uint32 7, int64 8, uint64 9, float32 10, float64 11,
//! bool 15, byte (IDL `octet`) 16, string 17, wstring 18, bounded string 21 and bounded wstring
//! 22 (`string_capacity` = the bound); plus 48 for an array `T[N]`, 96 for a bounded sequence
//! `T[<=N]` (`capacity` = N) and 144 for an unbounded sequence.
//!
//! `char` hashes as uint8 (3), not as IDL `char` (13): rosidl_adapter turns a `.msg` `char` into
//! IDL `uint8` before anything is hashed (`MSG_TYPE_TO_IDL`), so that is what every ROS 2 node
//! announces; the generated `std_msgs/msg/Char` has `FIELD_TYPE_UINT8` and hash
//! `RIHS01_3ad2d04d…`. rosbags' `Typestore.hash_rihs01` gives `char` 13 and so differs from ROS
//! for `std_msgs/Char`, `service_msgs/ServiceEventInfo` (thus every service's `_Event`) and
//! `rmw_dds_common/Gid` (and the types holding it). The registry does not record whether a `char` came from a
//! `.msg` or from a hand-written `.idl` (where rosidl would hash it as 13); `.idl` files that
//! rosidl generates never contain `char`.

use std::fmt::Write as _;

use crate::error::RegistryError;
use crate::registry::TypeRegistry;
use crate::schema::{BaseType, FieldType, MessageDef, Multiplicity, Primitive};

/// The type hash of `type_name` (`pkg/msg/Type`, `pkg/Type`, `pkg/srv/X_Request`, ...) as a ROS 2
/// node announces it: `RIHS01_` and 64 lowercase hex digits.
///
/// Fails with [`RegistryError::Unknown`] if the registry lacks the type,
/// [`RegistryError::Missing`] (naming the missing type and who needs it) if it lacks a
/// dependency, [`RegistryError::Name`] for a malformed name.
pub fn rihs01(registry: &TypeRegistry, type_name: &str) -> Result<String, RegistryError> {
    let json = type_description_json(registry, type_name)?;
    let digest = ring::digest::digest(&ring::digest::SHA256, json.as_bytes());
    let mut out = String::with_capacity(7 + 64);
    out.push_str("RIHS01_");
    for b in digest.as_ref() {
        let _ = write!(out, "{b:02x}");
    }
    Ok(out)
}

/// The JSON text whose SHA-256 is [`rihs01`]'s hash, byte for byte as rosidl writes it (for
/// tests and for finding why two hashes differ).
pub fn type_description_json(
    registry: &TypeRegistry,
    type_name: &str,
) -> Result<String, RegistryError> {
    let closure = registry.closure(type_name)?;
    let Some((root, rest)) = closure.split_first() else {
        return Err(RegistryError::Unknown(type_name.to_string()));
    };
    let mut referenced: Vec<(String, &MessageDef)> =
        rest.iter().map(|d| (d.name.full(), *d)).collect();
    // By name as Python sorts strings (code points; byte order of UTF-8 is the same).
    referenced.sort_by(|a, b| a.0.cmp(&b.0));

    let mut out = String::with_capacity(256 * closure.len());
    out.push_str("{\"type_description\": ");
    write_struct(&mut out, registry, root)?;
    out.push_str(", \"referenced_type_descriptions\": [");
    for (i, (_, def)) in referenced.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_struct(&mut out, registry, def)?;
    }
    out.push_str("]}");
    Ok(out)
}

/// rosidl's member for a structure with no fields.
const PLACEHOLDER: &str = "structure_needs_at_least_one_member";

fn write_struct(
    out: &mut String,
    registry: &TypeRegistry,
    def: &MessageDef,
) -> Result<(), RegistryError> {
    out.push_str("{\"type_name\": ");
    push_json_str(out, &def.name.full());
    out.push_str(", \"fields\": [");
    if def.fields.is_empty() {
        let ty = FieldType {
            base: BaseType::Primitive(Primitive::UInt8),
            multiplicity: Multiplicity::Single,
        };
        write_field(out, registry, def, PLACEHOLDER, &ty)?;
    }
    for (i, f) in def.fields.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_field(out, registry, def, &f.name, &f.ty)?;
    }
    out.push_str("]}");
    Ok(())
}

fn write_field(
    out: &mut String,
    registry: &TypeRegistry,
    owner: &MessageDef,
    name: &str,
    ty: &FieldType,
) -> Result<(), RegistryError> {
    let (base_id, string_capacity) = match &ty.base {
        BaseType::Primitive(p) => (primitive_id(*p), 0),
        BaseType::String { bound: None } => (17, 0),
        BaseType::String { bound: Some(n) } => (21, *n),
        BaseType::WString { bound: None } => (18, 0),
        BaseType::WString { bound: Some(n) } => (22, *n),
        BaseType::Named(_) => (1, 0),
    };
    let (offset, capacity) = match ty.multiplicity {
        Multiplicity::Single => (0, 0),
        Multiplicity::Fixed(n) => (48, n),
        Multiplicity::Bounded(n) => (96, n),
        Multiplicity::Unbounded => (144, 0),
    };
    // The name of the type the registry holds (a short `pkg/Type` reference may stand for a
    // service's or action's structure), as the closure found it.
    let nested = match &ty.base {
        BaseType::Named(n) => match registry.get(&n.full()) {
            Some(d) => d.name.full(),
            None => {
                return Err(RegistryError::Missing {
                    missing: n.full(),
                    needed_by: owner.name.full(),
                })
            }
        },
        _ => String::new(),
    };
    out.push_str("{\"name\": ");
    push_json_str(out, name);
    let _ = write!(
        out,
        ", \"type\": {{\"type_id\": {}, \"capacity\": {capacity}, \"string_capacity\": \
         {string_capacity}, \"nested_type_name\": ",
        base_id + offset
    );
    push_json_str(out, &nested);
    out.push_str("}}");
    Ok(())
}

/// `type_description_interfaces/FieldType` ids; `char` is uint8 (see the module comment).
fn primitive_id(p: Primitive) -> u32 {
    use Primitive::*;
    match p {
        Int8 => 2,
        UInt8 | Char => 3,
        Int16 => 4,
        UInt16 => 5,
        Int32 => 6,
        UInt32 => 7,
        Int64 => 8,
        UInt64 => 9,
        Float32 => 10,
        Float64 => 11,
        Bool => 15,
        Byte => 16,
    }
}

/// A JSON string as Python's `json.dumps` writes it with `ensure_ascii`: printable ASCII as is,
/// `\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`, everything else `\uXXXX` (lowercase hex, UTF-16
/// surrogate pairs above U+FFFF).
fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "builtin_interfaces/Time stamp\nstring frame_id\n";
    const TIME: &str = "int32 sec\nuint32 nanosec\n";

    fn reg(defs: &[(&str, &str)]) -> TypeRegistry {
        let mut reg = TypeRegistry::new();
        for (name, text) in defs {
            reg.add_msg(name, text).unwrap();
        }
        reg
    }

    fn hash(defs: &[(&str, &str)], root: &str) -> String {
        rihs01(&reg(defs), root).unwrap()
    }

    /// Expected values computed with rosbags 0.11.9 (`Typestore.hash_rihs01`, ROS2_JAZZY store),
    /// whose definitions these are.
    #[test]
    fn matches_rosbags() {
        assert_eq!(
            hash(
                &[("std_msgs/msg/String", "string data\n")],
                "std_msgs/msg/String"
            ),
            "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"
        );
        let laser = "std_msgs/Header header\nfloat32 angle_min\nfloat32 angle_max\n\
                     float32 angle_increment\nfloat32 time_increment\nfloat32 scan_time\n\
                     float32 range_min\nfloat32 range_max\nfloat32[] ranges\nfloat32[] intensities\n";
        let defs = [
            ("sensor_msgs/msg/LaserScan", laser),
            ("std_msgs/msg/Header", HEADER),
            ("builtin_interfaces/msg/Time", TIME),
        ];
        assert_eq!(
            hash(&defs, "sensor_msgs/msg/LaserScan"),
            "RIHS01_64c191398013af96509d518dac71d5164f9382553fce5c1f8cca5be7924bd828"
        );
        // The short name finds the same type.
        assert_eq!(
            hash(&defs, "sensor_msgs/LaserScan"),
            hash(&defs, "sensor_msgs/msg/LaserScan")
        );
        // No fields: rosidl's placeholder member.
        assert_eq!(
            hash(&[("std_msgs/msg/Empty", "")], "std_msgs/msg/Empty"),
            "RIHS01_20b625256f32d5dbc0d04fee44f43c41e51c70d3502f84b4a08e7a9c26a96312"
        );
        // Fixed arrays, three levels of nesting.
        let defs = [
            (
                "geometry_msgs/msg/PoseWithCovariance",
                "geometry_msgs/Pose pose\nfloat64[36] covariance\n",
            ),
            (
                "geometry_msgs/msg/Pose",
                "geometry_msgs/Point position\ngeometry_msgs/Quaternion orientation\n",
            ),
            (
                "geometry_msgs/msg/Point",
                "float64 x\nfloat64 y\nfloat64 z\n",
            ),
            (
                "geometry_msgs/msg/Quaternion",
                "float64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n",
            ),
        ];
        assert_eq!(
            hash(&defs, "geometry_msgs/msg/PoseWithCovariance"),
            "RIHS01_9a7c0fd234b7f45c6098745ecccd773ca1085670e64107135397aee31c02e1bb"
        );
        let camera =
            "std_msgs/Header header\nuint32 height\nuint32 width\nstring distortion_model\n\
                      float64[] d\nfloat64[9] k\nfloat64[9] r\nfloat64[12] p\nuint32 binning_x\n\
                      uint32 binning_y\nsensor_msgs/RegionOfInterest roi\n";
        let roi =
            "uint32 x_offset\nuint32 y_offset\nuint32 height\nuint32 width\nbool do_rectify\n";
        assert_eq!(
            hash(
                &[
                    ("sensor_msgs/msg/CameraInfo", camera),
                    ("sensor_msgs/msg/RegionOfInterest", roi),
                    ("std_msgs/msg/Header", HEADER),
                    ("builtin_interfaces/msg/Time", TIME),
                ],
                "sensor_msgs/msg/CameraInfo"
            ),
            "RIHS01_b3dfd68ff46c9d56c80fd3bd4ed22c7a4ddce8c8348f2f59c299e73118e7e275"
        );
        // A bounded sequence; constants do not count.
        let solid = "uint8 BOX=1\nuint8 SPHERE=2\nuint8 CYLINDER=3\nuint8 CONE=4\nuint8 PRISM=5\n\
                     uint8 BOX_X=0\nuint8 BOX_Y=1\nuint8 BOX_Z=2\nuint8 SPHERE_RADIUS=0\n\
                     uint8 CYLINDER_HEIGHT=0\nuint8 CYLINDER_RADIUS=1\nuint8 CONE_HEIGHT=0\n\
                     uint8 CONE_RADIUS=1\nuint8 PRISM_HEIGHT=0\n\
                     uint8 type\nfloat64[<=3] dimensions\ngeometry_msgs/Polygon polygon\n";
        assert_eq!(
            hash(
                &[
                    ("shape_msgs/msg/SolidPrimitive", solid),
                    (
                        "geometry_msgs/msg/Polygon",
                        "geometry_msgs/Point32[] points\n"
                    ),
                    (
                        "geometry_msgs/msg/Point32",
                        "float32 x\nfloat32 y\nfloat32 z\n"
                    ),
                ],
                "shape_msgs/msg/SolidPrimitive"
            ),
            "RIHS01_2802a15190aadc3f496584df4b0b4c5824d8a0b31aaef839faa75bc34dda38ac"
        );
        // A bounded string (and the constants left out: only the four fields remain).
        let field_type = "uint8 FIELD_TYPE_NOT_SET=0\nuint8 FIELD_TYPE_NESTED_TYPE=1\n\
                          uint8 type_id\nuint64 capacity\nuint64 string_capacity\n\
                          string<=255 nested_type_name\n";
        assert_eq!(
            hash(
                &[("type_description_interfaces/msg/FieldType", field_type)],
                "type_description_interfaces/msg/FieldType"
            ),
            "RIHS01_a70b6dd919645a03a3586f7f821defbc886ea3e531a1d95cc0f380a3973ccaa6"
        );
        assert_eq!(
            hash(&[("std_msgs/msg/Byte", "byte data\n")], "std_msgs/msg/Byte"),
            "RIHS01_41e1a3345f73fe93ede006da826a6ee274af23dd4653976ff249b0f44e3e798f"
        );
    }

    /// Hashes rosidl generated into packages' `*__description.c` (`*__get_type_hash`), where they
    /// differ from rosbags (`char`) or rosbags cannot name the types (services, actions).
    #[test]
    fn matches_rosidl() {
        // std_msgs/msg/Char: rosidl's FIELD_TYPE_UINT8; rosbags says
        // RIHS01_8914cecc0520f475fc3f8767a9f9e529341a75440e1b184a7e152195b2ffce5f.
        assert_eq!(
            hash(&[("std_msgs/msg/Char", "char data\n")], "std_msgs/msg/Char"),
            "RIHS01_3ad2d04dd29ba19d04b16659afa3ccaedd691914b02a64e82e252f2fa6a586a9"
        );
        let mut reg = TypeRegistry::with_builtins();
        reg.add_srv(
            "example_interfaces/srv/AddTwoInts",
            "int64 a\nint64 b\n---\nint64 sum\n",
        )
        .unwrap();
        reg.add_action(
            "example_interfaces/action/Fibonacci",
            "int32 order\n---\nint32[] sequence\n---\nint32[] sequence\n",
        )
        .unwrap();
        for (name, want) in [
            (
                "builtin_interfaces/msg/Time",
                "b106235e25a4c5ed35098aa0a61a3ee9c9b18d197f398b0e4206cea9acf9c197",
            ),
            (
                "unique_identifier_msgs/msg/UUID",
                "1b8e8aca958cbea28fe6ef60bf6c19b683c97a9ef60bb34752067d0f2f7ab437",
            ),
            // char[16] client_gid
            (
                "service_msgs/msg/ServiceEventInfo",
                "41bcbbe07a75c9b52bc96bfd5c24d7f0fc0a08c0cb7921b3373c5732345a6f45",
            ),
            (
                "example_interfaces/srv/AddTwoInts_Request",
                "000c5fd92d6b2e1a05949348f584d6d652adea1e92d691792011ac2273508302",
            ),
            (
                "example_interfaces/srv/AddTwoInts_Response",
                "de5c030d4af33cba2749310b249737b631594703f9300495f48bffb2b44dcc2f",
            ),
            (
                "example_interfaces/srv/AddTwoInts_Event",
                "32c1d140259c71e5c355115942bcb31df98b4330e4d906b1b75ccb1c9b3ce6c8",
            ),
            (
                "example_interfaces/action/Fibonacci_Goal",
                "226cb437e4355dcd3e914f930382a3b0cc1da81545bd319ed554e95a03255f51",
            ),
            (
                "example_interfaces/action/Fibonacci_Result",
                "fea81394f25aa4502217953f1a021fb750e79c10bbd43f13dd94632da6569649",
            ),
            (
                "example_interfaces/action/Fibonacci_Feedback",
                "2b12e37361da6f408d4c85bc24a18de64333f29082f2ca34b5ee33dc4c8b42a9",
            ),
            (
                "example_interfaces/action/Fibonacci_SendGoal_Request",
                "3d088942b413247db536576f0286768c6be8fcd5d0c9a5d544f359fba090a238",
            ),
            (
                "example_interfaces/action/Fibonacci_SendGoal_Response",
                "d8c07bb3d5b766fe4b43159c9a5222af5214e2fcc29229b991d826166c512be1",
            ),
            (
                "example_interfaces/action/Fibonacci_GetResult_Request",
                "c8a4f5e7d13b81286ee1043e2ecd084281cecf1ff06aaa799464f5f15479f003",
            ),
            (
                "example_interfaces/action/Fibonacci_GetResult_Response",
                "6021dc98ab9b4bbe395e48aa4de81ee5f68eb570f88358affcc648146668b24f",
            ),
            (
                "example_interfaces/action/Fibonacci_FeedbackMessage",
                "c1de71afd52e49a89c53d8262366884185bc0a02f78ce051c4e46b0a7fe59bb2",
            ),
        ] {
            assert_eq!(
                rihs01(&reg, name).unwrap(),
                format!("RIHS01_{want}"),
                "{name}"
            );
        }
    }

    #[test]
    fn field_type_ids() {
        // byte is an octet (16), char a uint8 (3).
        let json = type_description_json(
            &reg(&[("a/msg/B", "byte x\nchar y\nbyte[3] z\n")]),
            "a/msg/B",
        )
        .unwrap();
        assert_eq!(
            json,
            "{\"type_description\": {\"type_name\": \"a/msg/B\", \"fields\": [\
             {\"name\": \"x\", \"type\": {\"type_id\": 16, \"capacity\": 0, \"string_capacity\": 0, \"nested_type_name\": \"\"}}, \
             {\"name\": \"y\", \"type\": {\"type_id\": 3, \"capacity\": 0, \"string_capacity\": 0, \"nested_type_name\": \"\"}}, \
             {\"name\": \"z\", \"type\": {\"type_id\": 64, \"capacity\": 3, \"string_capacity\": 0, \"nested_type_name\": \"\"}}\
             ]}, \"referenced_type_descriptions\": []}"
        );
        // wstring, which rosbags cannot hash: the JSON written by hand from the rosidl ids and
        // hashed with Python's json.dumps + hashlib.sha256.
        assert_eq!(
            hash(
                &[(
                    "roam_test/msg/Wide",
                    "wstring a\nwstring<=7 b\nwstring[] c\nwstring<=3[<=2] d\nstring<=5[3] e\n\
                     byte[] f\nchar[4] g\n"
                )],
                "roam_test/msg/Wide"
            ),
            "RIHS01_602279551396ca7f03fb9fc6d08e1da88ad0df1e354ff10f0e497fa0fbcf7bdf"
        );
    }

    #[test]
    fn referenced_types_sort_by_full_name() {
        // `z/msg/A` < `z/msg/B` by name although B comes first in the fields, and a service
        // structure (`a/srv/..`) sorts as its full name does.
        let mut reg = reg(&[
            ("z/msg/Root", "z/B b\nz/A a\n"),
            ("z/msg/A", "int8 x\n"),
            ("z/msg/B", "a/srv/S_Request r\n"),
        ]);
        reg.add_srv("a/srv/S", "int8 q\n---\n").unwrap();
        let json = type_description_json(&reg, "z/msg/Root").unwrap();
        let names: Vec<&str> = json
            .match_indices("\"type_name\": \"")
            .map(|(i, m)| {
                let rest = &json[i + m.len()..];
                &rest[..rest.find('"').unwrap()]
            })
            .collect();
        assert_eq!(
            names,
            ["z/msg/Root", "a/srv/S_Request", "z/msg/A", "z/msg/B"]
        );
    }

    #[test]
    fn missing_types_are_named() {
        let reg = reg(&[("a/msg/Outer", "b/Inner x\n")]);
        assert_eq!(
            rihs01(&reg, "a/msg/Outer").unwrap_err(),
            RegistryError::Missing {
                missing: "b/msg/Inner".into(),
                needed_by: "a/msg/Outer".into()
            }
        );
        assert_eq!(
            rihs01(&reg, "a/msg/Nope").unwrap_err(),
            RegistryError::Unknown("a/msg/Nope".into())
        );
        assert!(matches!(
            rihs01(&reg, "not a name"),
            Err(RegistryError::Name(_))
        ));
    }

    #[test]
    fn json_strings_escape_as_python() {
        // json.dumps("a\x7f\u00e9\U0001F600\"\\\n\x01\x08\x0c\r\t")
        let mut out = String::new();
        push_json_str(&mut out, "a\x7f\u{e9}\u{1F600}\"\\\n\x01\x08\x0c\r\t");
        assert_eq!(out, r#""a\u007f\u00e9\ud83d\ude00\"\\\n\u0001\b\f\r\t""#);
    }
}
