//! ROS 2 message introspection: interface definitions and a dynamic CDR <-> JSON <-> CBOR codec.
//!
//! ```text
//!  .msg/.srv/.action/.idl text ──parse──> MessageDef ──TypeRegistry──> MessageType (resolved)
//!  ros2msg text (Foxglove, MCAP, rosbag2, roam metadata) <──> TypeRegistry
//!  CDR bytes <──MessageType──> JSON (rosbridge v2 conventions) / CBOR (rosbridge's cbor)
//! ```
//!
//! - [`names`]: `pkg/msg/Type`, `pkg/Type`, `pkg::msg::dds_::Type_`.
//! - [`parse`]: `.msg`, `.srv`, `.action` and rosidl `.idl` into [`schema::MessageDef`].
//! - [`TypeRegistry`]: definitions by name, dependencies, ros2msg in and out, resolution.
//! - [`json`], [`cbor`]: the codecs; they take a resolved [`MessageType`].
//! - [`type_hash`]: ROS 2 type hashes (`RIHS01_...`) of the registry's types.
//!
//! What this crate does not do: no I/O (the caller finds definition files, e.g. under
//! `AMENT_PREFIX_PATH` or configured `msg_paths`, and passes their text), no async, no DDS,
//! no ROS 1 formats, no XCDR2 (`@appendable`/`@mutable` types, which rosidl does not emit),
//! no IDL `wchar`, `long double`, unions or enums. Every parser returns a typed error instead
//! of panicking on bad input; decoding work and memory are bounded by the input's size.

#![forbid(unsafe_code)]

mod builtin;
pub mod cbor;
pub mod cdr;
pub mod error;
mod input;
pub mod json;
mod layout;
pub mod names;
pub mod parse;
pub mod registry;
pub mod ros2msg;
pub mod schema;
pub mod type_hash;

pub use cdr::Endian;
pub use error::{
    DecodeError, DecodeErrorKind, EncodeError, EncodeErrorKind, FieldPath, NameError, ParseError,
    RegistryError, Segment,
};
pub use layout::{MessageType, MAX_FIXED_SIZE, MAX_TYPE_DEPTH};
pub use names::{Kind, TypeName};
pub use registry::TypeRegistry;
pub use type_hash::rihs01;

use crate::cdr::write::Writer;
use crate::error::EncodeErrorKind as K;
use crate::input::{Ctx, StructSeed};

/// How JSON or CBOR input becomes CDR.
#[derive(Debug, Clone, Default)]
pub struct EncodeOptions {
    /// Byte order of the CDR written (little endian by default, as every ROS 2 host sends).
    pub endian: Endian,
    /// If set, a `builtin_interfaces/Time` given as the string `"now"` takes this
    /// (sec, nanosec), as rosbridge does with its clock. The crate has no clock: the caller
    /// passes the current time.
    pub now: Option<(i32, u32)>,
}

/// Runs a serde-driven input (CBOR) through the type's seed into `out`; restores `out` on
/// error and turns serde's error into the typed one the seeds recorded.
pub(crate) fn encode_with<E: std::fmt::Display>(
    ty: &MessageType,
    opts: &EncodeOptions,
    out: &mut Vec<u8>,
    run: impl FnOnce(StructSeed<'_, '_>) -> Result<(), E>,
) -> Result<(), EncodeError> {
    let start = out.len();
    let mut ctx = Ctx {
        w: Writer::new(out, opts.endian),
        err: None,
        now: opts.now,
    };
    let r = run(StructSeed {
        ctx: &mut ctx,
        layout: &ty.0,
    });
    let err = ctx.err.take();
    match r {
        Ok(()) => Ok(()),
        Err(e) => {
            out.truncate(start);
            Err(err.unwrap_or_else(|| EncodeError::new(K::Syntax(e.to_string()))))
        }
    }
}

impl MessageType {
    /// See [`json::cdr_to_json`].
    pub fn cdr_to_json(&self, cdr: &[u8], out: &mut Vec<u8>) -> Result<(), DecodeError> {
        json::cdr_to_json(self, cdr, out)
    }

    /// See [`json::json_to_cdr`].
    pub fn json_to_cdr(
        &self,
        json: &[u8],
        opts: &EncodeOptions,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        json::json_to_cdr(self, json, opts, out)
    }

    /// See [`cbor::cdr_to_cbor`].
    pub fn cdr_to_cbor(&self, cdr: &[u8], out: &mut Vec<u8>) -> Result<(), DecodeError> {
        cbor::cdr_to_cbor(self, cdr, out)
    }

    /// See [`cbor::cbor_to_cdr`].
    pub fn cbor_to_cdr(
        &self,
        cbor: &[u8],
        opts: &EncodeOptions,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        cbor::cbor_to_cdr(self, cbor, opts, out)
    }
}
