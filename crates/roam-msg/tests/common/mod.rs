//! Types shared by the codec and property tests (the fuzz targets keep the same set in
//! fuzz/fuzz_targets/msg_types.rs): every primitive, strings, bounds, defaults, nesting, an
//! empty type.

use roam_msg::{MessageType, TypeRegistry};

#[allow(dead_code)] // each test file uses part of this module
pub const TYPES: &[&str] = &[
    "sensor_msgs/msg/LaserScan",
    "test_msgs/msg/All",
    "test_msgs/msg/Nested",
    "test_msgs/msg/Empty",
];

pub const DEFS: &[(&str, &str)] = &[
    (
        "std_msgs/msg/Header",
        "builtin_interfaces/Time stamp\nstring frame_id\n",
    ),
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
    (
        "test_msgs/msg/Nested",
        "std_msgs/Header[] headers\nAll[<=2] all\nEmpty[2] e\nint64 x 5\n",
    ),
    ("test_msgs/msg/Empty", ""),
    (
        "test_msgs/msg/Defaults",
        "int32 a 7\nstring s \"hi\"\nfloat64[2] v [1.5, -2]\nint8[] q [1, 2]\nInner inner\n",
    ),
    ("test_msgs/msg/Inner", "uint16 x 3\nstring[<=2] t [\"a\"]\n"),
];

pub fn registry() -> TypeRegistry {
    let mut reg = TypeRegistry::with_builtins();
    for (name, text) in DEFS {
        reg.add_msg(name, text).unwrap();
    }
    reg
}

#[allow(dead_code)]
pub fn types() -> Vec<MessageType> {
    let reg = registry();
    TYPES.iter().map(|t| reg.resolve(t).unwrap()).collect()
}
