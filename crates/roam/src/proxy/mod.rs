//! The ROS 2 proxy: a DDS participant with its own edge router.
//!
//! - [`config`]: the proxy's YAML file: DDS settings, upstream routers, realms, exports and
//!   imports; validation with located errors.
//! - [`ros_names`]: how ROS 2 topics, services and types appear on the DDS wire.
//! - [`meta`]: the realm names of a topic's data and of its announcements.
//! - [`dds_config`]: the CycloneDDS configuration from the `dds:` section.
//! - [`export_plan`] and [`export`]: which streams and readers an exported topic needs, and
//!   the task that reads, seals and announces them.
//! - [`import_plan`] and [`import`]: which writers an imported topic needs, and the task that
//!   opens and writes its data.
//! - [`write`]: writing imported samples without stalling the async runtime.
//! - [`run`]: the proxy process.

pub mod config;
pub mod dds_config;
pub mod export;
pub mod export_plan;
pub mod import;
pub mod import_plan;
pub mod meta;
pub mod ros_names;
pub mod run;
pub mod write;
