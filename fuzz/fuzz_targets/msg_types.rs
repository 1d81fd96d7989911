//! The fixed set of types the roam-msg fuzz targets decode and encode (the same set as
//! crates/roam-msg/tests/common/mod.rs): every primitive, strings, bounds, nesting, an empty
//! type.

use std::sync::OnceLock;

use roam_msg::{MessageType, TypeRegistry};

/// Built once per process: resolving is far slower than one fuzz input.
pub fn types() -> &'static [MessageType] {
    static TYPES: OnceLock<Vec<MessageType>> = OnceLock::new();
    TYPES.get_or_init(build)
}

fn build() -> Vec<MessageType> {
    let mut reg = TypeRegistry::with_builtins();
    let defs = [
        ("std_msgs/msg/Header", "builtin_interfaces/Time stamp\nstring frame_id\n"),
        (
            "sensor_msgs/msg/LaserScan",
            "std_msgs/Header header\nfloat32 angle_min\nfloat32 angle_max\nfloat32 angle_increment\n\
             float32 time_increment\nfloat32 scan_time\nfloat32 range_min\nfloat32 range_max\n\
             float32[] ranges\nfloat32[] intensities\n",
        ),
        (
            "test_msgs/msg/All",
            "bool b\nbyte y\nchar c\nint8 i8\nuint8 u8\nint16 i16\nuint16 u16\nint32 i32\nuint32 u32\n\
             int64 i64\nuint64 u64\nfloat32 f32\nfloat64 f64\nstring s\nwstring w\nstring<=3 bs\n\
             uint8[] data\nuint8[4] fixed_data\nuint8[<=4] bounded_data\nbyte[] octets\nchar[] chars\n\
             float64[3] v\nint32[<=2] bi\nstring[] names\nbuiltin_interfaces/Duration d\n\
             builtin_interfaces/Time[] times\nEmpty e\nbool[] flags\n",
        ),
        ("test_msgs/msg/Nested", "std_msgs/Header[] headers\nAll[<=2] all\nEmpty[2] e\nint64 x 5\n"),
        ("test_msgs/msg/Empty", ""),
    ];
    for (name, text) in defs {
        reg.add_msg(name, text).expect("fixed definitions parse");
    }
    [
        "sensor_msgs/msg/LaserScan",
        "test_msgs/msg/All",
        "test_msgs/msg/Nested",
        "test_msgs/msg/Empty",
    ]
    .iter()
    .map(|t| reg.resolve(t).expect("fixed types resolve"))
    .collect()
}
