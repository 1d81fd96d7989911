//! The ROS 2 proxy: a DDS participant with its own edge router.
//!
//! - [`config`]: the proxy's YAML file: DDS settings, upstream routers, realms, exports and
//!   imports; validation with located errors.
//! - [`ros_names`]: how ROS 2 topics, services and types appear on the DDS wire.
//! - [`meta`]: the sealed topic metadata (type, QoS) an exporter announces in its realm.
//! - [`dds_config`]: the CycloneDDS configuration from the `dds:` section.
//! - [`run`]: the proxy process.

pub mod config;
pub mod dds_config;
pub mod meta;
pub mod ros_names;
pub mod run;
