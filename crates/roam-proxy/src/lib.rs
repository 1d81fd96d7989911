//! The ROS 2 proxy (`roam proxy`): a DDS participant with its own edge router.
//!
//! - [`config`]: the proxy's YAML file: DDS settings, upstream routers, realms, exports and
//!   imports; validation with located errors. [`patterns`]: its allow/deny entries (topics,
//!   services and actions, per kind of endpoint).
//! - [`dds_config`]: the CycloneDDS configuration from the `dds:` section.
//! - [`export_plan`] and [`export`]: which streams and readers an exported topic needs, and
//!   the task that reads them into edge publishers.
//!
//! The realm side (names, sealing, announcements, streams) is the edge layer's
//! (`roam_edge`); ROS 2 naming conventions are in `roam_edge::ros_names`.
//! - [`import`]: the task that mirrors every announced stream of an imported topic with a
//!   DDS writer and writes its data.
//! - [`write`](mod@write): writing imported samples without stalling the async runtime.
//! - [`directory`]: the proxy's entries in its realms' directories.
//! - [`rules`] and [`nodes`]: the rules file (docs/rules.md) evaluated on what crosses, and
//!   the ROS node of each local writer (for NODE).
//! - [`convention`], [`call_ids`] and [`fast_services`]: services whose local endpoints carry
//!   the call identity beside the payload (rmw_fastrtps's convention): which endpoints do,
//!   the identity tables, and the legs that translate through a second DDS stack (RustDDS).
//! - [`user_data`]: what endpoints' USER_DATA says (ROS 2 type hashes, the mark on a
//!   proxy's import writers).
//! - [`forwarding`]: what a running proxy forwards and the tasks that do it, set up from its
//!   file at start and from patterns as local servers and clients appear.
//! - [`process`]: what the proxy process does besides forwarding (its ROS node, directory
//!   entries, signing key); the process is wired in the `roam` binary.

pub mod call_ids;
pub mod config;
pub mod config_file;
pub mod convention;
pub mod dds_config;
pub mod directory;
pub mod entries;
pub mod error;
pub mod export;
pub mod export_plan;
pub mod fast_services;
pub mod forwarding;
pub mod import;
pub mod intake;
pub mod lookup;
pub mod mqtt;
pub mod nodes;
pub mod patterns;
pub mod process;
pub mod resend_window;
pub mod rules;
pub mod rules_log;
pub mod user_data;
pub mod write;
