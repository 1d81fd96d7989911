//! Pieces the lab's binaries share: the seeds' ROS 2 messages as raw CDR ([`ros_msgs`]) and
//! what a receiver makes of them ([`delivery`]), and what machine the figures come from
//! ([`machine`]).

pub mod delivery;
pub mod machine;
pub mod ros_msgs;
