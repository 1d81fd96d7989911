//! Definitions every ROS 2 system has and that actions and services need, so a machine without
//! a ROS install can still convert action traffic. Texts as the ROS 2 packages ship them
//! (comments removed); the oracle test checks them against rosbags' typestores.

/// (kind, full name, text): kind is `msg` or `srv`.
pub const BUILTIN: &[(&str, &str, &str)] = &[
    ("msg", "builtin_interfaces/msg/Time", "int32 sec\nuint32 nanosec\n"),
    ("msg", "builtin_interfaces/msg/Duration", "int32 sec\nuint32 nanosec\n"),
    ("msg", "unique_identifier_msgs/msg/UUID", "uint8[16] uuid\n"),
    ("msg", "action_msgs/msg/GoalInfo", "unique_identifier_msgs/UUID goal_id\nbuiltin_interfaces/Time stamp\n"),
    (
        "msg",
        "action_msgs/msg/GoalStatus",
        "int8 STATUS_UNKNOWN=0\nint8 STATUS_ACCEPTED=1\nint8 STATUS_EXECUTING=2\nint8 STATUS_CANCELING=3\n\
         int8 STATUS_SUCCEEDED=4\nint8 STATUS_CANCELED=5\nint8 STATUS_ABORTED=6\n\
         GoalInfo goal_info\nint8 status\n",
    ),
    ("msg", "action_msgs/msg/GoalStatusArray", "GoalStatus[] status_list\n"),
    (
        "srv",
        "action_msgs/srv/CancelGoal",
        "GoalInfo goal_info\n---\n\
         int8 ERROR_NONE=0\nint8 ERROR_REJECTED=1\nint8 ERROR_UNKNOWN_GOAL_ID=2\nint8 ERROR_GOAL_TERMINATED=3\n\
         int8 return_code\nGoalInfo[] goals_canceling\n",
    ),
    (
        "msg",
        "service_msgs/msg/ServiceEventInfo",
        "uint8 REQUEST_SENT=0\nuint8 REQUEST_RECEIVED=1\nuint8 RESPONSE_SENT=2\nuint8 RESPONSE_RECEIVED=3\n\
         uint8 event_type\nbuiltin_interfaces/Time stamp\nchar[16] client_gid\nint64 sequence_number\n",
    ),
];
