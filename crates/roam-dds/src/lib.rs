//! The ROS 2 side of roam: CycloneDDS wrapped in a small, safe API.
//!
//! A roam proxy is an ordinary DDS participant on the robot's (or cloud's) DDS domain. It
//! forwards *raw serialized samples*: it takes the CDR bytes a ROS 2 node published and writes
//! the same bytes on the other side. No type support is compiled in, so every message type works,
//! custom ones included. This crate gives the proxy exactly that and nothing more:
//!
//! - [`Participant`]: a DDS participant on a domain, optionally with its own CycloneDDS
//!   configuration (the XML that `CYCLONEDDS_URI` would hold). [`loopback_config`] keeps a test on
//!   `lo`. [`Participant::sibling`] gives a second participant of the same domain on a second
//!   CycloneDDS domain instance, with receive threads of its own.
//! - [`Writer`]: publishes raw CDR (4-byte encapsulation header included) on a *blob topic* of
//!   any type name, keyless or keyed, with the [`Qos`] it is given.
//! - [`Reader`]: delivers every sample on such a topic as raw CDR ([`Sample`]) to a callback.
//! - [`Discovery`]: reports every publication and subscription in the domain (topic, type, QoS,
//!   owning participant), appearing and disappearing, so the proxy can learn what local nodes
//!   publish and subscribe and recognise its own endpoints ([`Participant::guid`]).
//!
//! - [`TypeDescriptor`]: for keyed topics, the full type, resolved through the DDS type lookup
//!   service from a publisher's XTypes type information ([`Endpoint::type_info`]), or rebuilt
//!   from its serialized XTypes description on another machine. Readers and writers made with
//!   one ([`TopicInfo::described`]) still move raw CDR, but DDS keys every sample, so history
//!   and durability are per instance and the instance lifecycle ([`SampleKind`],
//!   [`Writer::dispose_cdr`], [`Writer::unregister_cdr`]) can be forwarded.
//!
//! - [`rpc`]: a second DDS stack (RustDDS, safe Rust) for the one thing CycloneDDS cannot do:
//!   read a sample's identity and write `related_sample_identity`, which services in
//!   rmw_fastrtps's convention rely on.
//!
//! # What it does not do
//!
//! No (de)serialization of message contents, no partitions, no content filters, no loans /
//! shared memory, no dispose or unregister by instance handle (the blob sertype of `cyclors`
//! aborts on those code paths, so the API has none of them). Routing, sealing and
//! configuration live in the other roam crates.
//!
//! # Where the unsafe code is
//!
//! All of the workspace's `unsafe` lives in this crate (the rest of the workspace forbids it),
//! in the modules that call the `cyclors` bindings: `src/participant.rs` (domains,
//! participants, topics), `src/qos.rs`, `src/writer.rs`, `src/reader.rs`, `src/discovery.rs`,
//! `src/types.rs` (type information and descriptors)
//! and `src/error.rs` (return-code text).
//! Every unsafe block carries a `// SAFETY:` comment. The invariants they rely on:
//!
//! - an entity handle is deleted exactly once, by the `Drop` of the value that created it,
//!   and a participant outlives its readers and writers (they hold a clone of it);
//! - the closure a listener calls is heap-allocated before the entity exists and freed only
//!   after `dds_delete` of that entity returned, which in CycloneDDS waits for any callback in
//!   progress and prevents new ones;
//! - no Rust panic crosses into C: every callback body runs under `catch_unwind`;
//! - every serdata reference obtained from `dds_takecdr` is released, and every loan from
//!   `dds_take` is returned, on every path.
//!
//! # CycloneDDS behaviours this API accounts for
//!
//! - A transient-local writer keeps for late joiners only its *durability-service* history,
//!   which defaults to keep-last 1 whatever the history QoS says; [`Writer`] sets it to the
//!   history depth (as rmw_cyclonedds does).
//! - Data that arrives while a reader is being created (a transient-local writer's history,
//!   endpoints discovered before a [`Discovery`]) raises "data available" before the listener is
//!   armed, and no callback ever comes for it; the constructors therefore take once themselves.
//! - The `cyclors` blob sertype cannot see keys: every sample of a keyed blob topic is the same
//!   instance to the local DDS (key hash all zeros). Bytes, keys included, pass through intact,
//!   and remote typed readers see the right instances, but keep-last history (and so a
//!   transient-local writer's memory) counts samples across all keys. Keyed topics whose
//!   publisher announces type information are therefore read and written as typed topics
//!   ([`TypeDescriptor`]); the blob remains for publishers without it (e.g. RustDDS).
//! - Type registration on a domain that has never seen a type: CycloneDDS builds descriptors
//!   only from types in its type library, so [`TypeDescriptor::from_xtypes`] first creates a
//!   private topic (`roam/type_registration/<type>`) whose descriptor carries the type objects,
//!   then has CycloneDDS derive the real descriptor from them; opcodes never cross machines.
//! - The blob sertype has no `print` operation: enabling CycloneDDS's `data`/`trace` tracing
//!   categories in a configuration crashes the process on the first write. `discovery` is fine.
//! - One configuration per domain and process: participants of one process on one domain share
//!   it ([`DdsError::DomainConfigConflict`] for a different one), and samples between them take
//!   an in-process shortcut, not the network.
//!
//! # Threading
//!
//! All types are `Send + Sync`. [`Reader`] and [`Discovery`] callbacks run on CycloneDDS's own
//! threads (the receive thread or the listener thread of the domain), possibly before the
//! constructor returned, and possibly concurrently for different entities. Keep them short:
//! copy or hand the data to a channel and return. A callback must not drop the entity it belongs
//! to (that `Drop` waits for the callback to finish: a deadlock); creating or dropping *other*
//! entities from a callback is allowed by CycloneDDS but best avoided.

mod config;
mod discovery;
mod error;
mod participant;
mod qos;
mod reader;
pub mod ros_discovery_info;
pub mod rpc;
mod sibling;
mod types;
mod writer;

pub use config::loopback_config;
pub use discovery::{Discovery, DiscoveryEvent, Endpoint};
pub use error::DdsError;
pub use participant::Participant;
pub use qos::{History, Qos};
pub use reader::{Reader, Sample, SampleKind};
pub use types::{TypeDescriptor, TypeInfo};
pub use writer::{OnReaders, Writer, WriterOptions};

/// A 16-byte DDS GUID (GUID prefix of 12 bytes, entity id of 4).
pub type Guid = [u8; 16];

/// What a topic is, for a raw CDR reader or writer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TopicInfo {
    /// The DDS topic name, e.g. `rt/chatter` for the ROS 2 topic `/chatter`.
    pub name: String,
    /// The DDS type name, e.g. `std_msgs::msg::dds_::String_`. Must match the peers' exactly,
    /// or DDS never matches the endpoints.
    pub type_name: String,
    /// Whether the type has no key fields (every ROS 2 message type is keyless).
    pub keyless: bool,
    /// The full type, when known: the topic is then typed rather than a blob, so DDS sees
    /// the keys (history, durability and lifecycle per instance). `None`: a blob topic, where
    /// every sample of a keyed type is the same instance to the local DDS.
    pub descriptor: Option<std::sync::Arc<TypeDescriptor>>,
}

impl TopicInfo {
    /// A keyless topic (what every ROS 2 topic is).
    pub fn keyless(name: impl Into<String>, type_name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            type_name: type_name.into(),
            keyless: true,
            descriptor: None,
        }
    }

    /// A blob topic of a keyed type whose keys DDS cannot see (no type information).
    pub fn keyed_blob(name: impl Into<String>, type_name: impl Into<String>) -> Self {
        Self {
            keyless: false,
            ..Self::keyless(name, type_name)
        }
    }

    /// A typed topic: DDS knows the type from `descriptor` and keys every sample.
    pub fn described(name: impl Into<String>, descriptor: std::sync::Arc<TypeDescriptor>) -> Self {
        Self {
            name: name.into(),
            type_name: descriptor.type_name().to_string(),
            keyless: descriptor.keyless(),
            descriptor: Some(descriptor),
        }
    }
}
