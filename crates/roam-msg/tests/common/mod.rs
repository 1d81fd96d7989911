//! Types shared by the property tests (the fuzz targets keep the same set in
//! fuzz/fuzz_targets/msg_types.rs).

use roam_msg::{MessageType, TypeRegistry};

pub const TYPES: &[&str] = &[
    "sensor_msgs/msg/LaserScan",
    "test_msgs/msg/All",
    "test_msgs/msg/Nested",
    "test_msgs/msg/Empty",
];

pub fn registry() -> TypeRegistry {
    let mut reg = TypeRegistry::with_builtins();
    reg.add_msg(
        "std_msgs/msg/Header",
        "builtin_interfaces/Time stamp\nstring frame_id\n",
    )
    .unwrap();
    reg.add_msg(
        "sensor_msgs/msg/LaserScan",
        "std_msgs/Header header\nfloat32 angle_min\nfloat32 angle_max\nfloat32 angle_increment\n\
         float32 time_increment\nfloat32 scan_time\nfloat32 range_min\nfloat32 range_max\n\
         float32[] ranges\nfloat32[] intensities\n",
    )
    .unwrap();
    reg.add_msg(
        "test_msgs/msg/All",
        "bool b\nbyte y\nchar c\nint8 i8\nuint8 u8\nint16 i16\nuint16 u16\nint32 i32\nuint32 u32\n\
         int64 i64\nuint64 u64\nfloat32 f32\nfloat64 f64\nstring s\nwstring w\nstring<=3 bs\n\
         uint8[] data\nuint8[4] fixed_data\nuint8[<=4] bounded_data\nbyte[] octets\n\
         float64[3] v\nint32[<=2] bi\nstring[] names\nbool[] flags\n",
    )
    .unwrap();
    reg.add_msg(
        "test_msgs/msg/Nested",
        "std_msgs/Header[] headers\nAll[<=2] all\nEmpty[2] e\nint64 x 5\n",
    )
    .unwrap();
    reg.add_msg("test_msgs/msg/Empty", "").unwrap();
    reg
}

pub fn types() -> Vec<MessageType> {
    let reg = registry();
    TYPES.iter().map(|t| reg.resolve(t).unwrap()).collect()
}
