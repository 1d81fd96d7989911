//! roam's configuration files: every schema a `roam` command reads, and one error type that
//! points into the file (file, line, field; [`doc`]).
//!
//! - [`doc`]: a file's text and located errors ([`doc::ConfigError`]).
//! - [`addr`]: addresses to listen on and peers to dial.
//! - [`link`]: the `link:` section every process with links shares.
//! - [`router`]: `roam router`'s file, and the worker threads setting all files share.
//! - [`gateway`]: `roam gateway`'s file and the doors (rosbridge, Foxglove, gRPC) and TLS
//!   sections a proxy embeds too.
//! - [`mqtt`]: the MQTT bridge's section (mqtt_client's own parameter file).
//! - [`rules`]: reading a rules file.
//! - [`host`]: what a file names on this machine (network interfaces).
//!
//! The proxy's own sections (DDS, exports, imports) are `roam_proxy::config`'s: they are made
//! of the proxy's types.

pub mod addr;
pub mod doc;
pub mod gateway;
pub mod host;
pub mod link;
pub mod mqtt;
pub mod router;
pub mod rules;
