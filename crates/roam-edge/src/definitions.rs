//! Finding ROS 2 interface definitions on disk.
