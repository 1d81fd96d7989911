//! The ROS 2 proxy: a DDS participant with its own edge router (in progress).
//!
//! - [`config`]: the proxy's YAML file: DDS settings, upstream routers, realms, exports and
//!   imports; validation with located errors.
//! - [`ros_names`]: how ROS 2 topics, services and types appear on the DDS wire.

pub mod config;
pub mod ros_names;
