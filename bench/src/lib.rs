//! Pieces the lab's binaries share: the seeds' ROS 2 messages as raw CDR ([`ros_msgs`]) and
//! what a receiver makes of them ([`delivery`]), what machine the figures come from
//! ([`machine`]), and the processes a lab starts and samples ([`procs`]).

pub mod delivery;
pub mod machine;
pub mod procs;
pub mod ros_msgs;
