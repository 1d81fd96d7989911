//! XTypes type information: what lets CycloneDDS see the keys of a topic it forwards.
//!
//! A blob topic (the default) carries bytes without knowing their type, which is all a keyless
//! ROS 2 topic needs. A *keyed* topic needs more: DDS keeps history, durability and the
//! dispose/unregister lifecycle per instance (per key value), so a forwarder that cannot see
//! keys turns eight robots' latched states into one. Publishers that announce XTypes type
//! information (CycloneDDS, Fast DDS with type information on, the Python `cyclonedds` peers)
//! let us do better:
//!
//! - on the exporting side, [`TypeDescriptor::resolve`] asks the publisher's participant for the
//!   full type through the DDS type lookup service and turns it into a topic descriptor;
//! - the descriptor's serialized XTypes type information and type map
//!   ([`TypeDescriptor::type_information`], [`TypeDescriptor::type_mapping`]) travel to the
//!   importing side, where [`TypeDescriptor::from_xtypes`] has CycloneDDS validate them and
//!   build its own descriptor from them (no opcode from another machine is ever trusted).
//!
//! Readers and writers created with a descriptor ([`crate::TopicInfo::described`]) still move
//! raw CDR, but DDS keys each sample, so history is per instance and instance lifecycle
//! ([`crate::SampleKind`]) can be read and written.

use std::ffi::{CStr, CString};
use std::sync::Arc;
use std::time::Duration;

use cyclors::{dds_topic_descriptor_t, ddsi_typeinfo_t};

use crate::error::{check, DdsError};
use crate::participant::{delete_entity, Participant};

/// A publication's XTypes type information (type identifiers, not the type itself), as
/// discovery reported it. Cheap to clone.
#[derive(Clone)]
pub struct TypeInfo(Arc<OwnedTypeInfo>);

struct OwnedTypeInfo(*mut ddsi_typeinfo_t);

// SAFETY: the pointer is an owned, never-mutated copy (ddsi_typeinfo_dup / _deser); CycloneDDS
// only reads it, from any thread, and it is freed once in Drop.
unsafe impl Send for OwnedTypeInfo {}
// SAFETY: as above: shared access is read-only.
unsafe impl Sync for OwnedTypeInfo {}

impl Drop for OwnedTypeInfo {
    fn drop(&mut self) {
        // SAFETY: owned copy from ddsi_typeinfo_dup/_deser, freed exactly once.
        unsafe { cyclors::ddsi_typeinfo_free(self.0) };
    }
}

impl TypeInfo {
    /// Copies the type information CycloneDDS handed us (from a discovered endpoint).
    ///
    /// # Safety
    /// `p` must be NULL or point to a valid `ddsi_typeinfo_t` for the duration of the call.
    pub(crate) unsafe fn copy_from(p: *const ddsi_typeinfo_t) -> Option<TypeInfo> {
        if p.is_null() {
            return None;
        }
        // SAFETY: valid per the contract; dup makes an owned deep copy (aborts on OOM).
        let dup = unsafe { cyclors::ddsi_typeinfo_dup(p) };
        (!dup.is_null()).then(|| TypeInfo(Arc::new(OwnedTypeInfo(dup))))
    }

    fn as_ptr(&self) -> *const ddsi_typeinfo_t {
        self.0 .0
    }
}

impl PartialEq for TypeInfo {
    fn eq(&self, other: &Self) -> bool {
        // SAFETY: both are valid owned type informations.
        Arc::ptr_eq(&self.0, &other.0)
            || unsafe {
                cyclors::ddsi_typeinfo_equal(
                    self.as_ptr(),
                    other.as_ptr(),
                    cyclors::ddsi_type_include_deps_DDSI_TYPE_INCLUDE_DEPS,
                )
            }
    }
}

impl Eq for TypeInfo {}

impl std::fmt::Debug for TypeInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TypeInfo(..)")
    }
}

/// A full topic descriptor built by CycloneDDS from XTypes type objects: what a typed (keyed)
/// reader or writer is created with. Immutable; share it with `Arc`.
pub struct TypeDescriptor {
    desc: *mut dds_topic_descriptor_t,
    type_name: String,
}

// SAFETY: the descriptor is allocated by dds_create_topic_descriptor, never mutated, read by
// CycloneDDS only while creating topics (which copy what they keep), and freed once in Drop.
unsafe impl Send for TypeDescriptor {}
// SAFETY: as above: shared access is read-only.
unsafe impl Sync for TypeDescriptor {}

/// Bounds on a type description received from elsewhere: far beyond any real message type.
const MAX_TYPE_META: usize = 1 << 20;

impl TypeDescriptor {
    /// Resolves a discovered publication's type through the DDS type lookup service (a
    /// request to the publisher's participant; blocks up to `timeout`).
    pub fn resolve(
        participant: &Participant,
        info: &TypeInfo,
        timeout: Duration,
    ) -> Result<TypeDescriptor, DdsError> {
        Self::create(
            participant,
            info,
            cyclors::dds_find_scope_DDS_FIND_SCOPE_GLOBAL,
            timeout,
        )
    }

    /// Rebuilds a descriptor from the serialized XTypes type information and type map another
    /// process took from [`type_information`](Self::type_information) and
    /// [`type_mapping`](Self::type_mapping). CycloneDDS's own deserializers validate both,
    /// and CycloneDDS derives the descriptor from the type objects itself.
    pub fn from_xtypes(
        participant: &Participant,
        type_name: &str,
        type_information: &[u8],
        type_mapping: &[u8],
    ) -> Result<TypeDescriptor, DdsError> {
        let bad = |what: &str| DdsError::InvalidArgument(format!("type {type_name:?}: {what}"));
        if type_information.len() > MAX_TYPE_META || type_mapping.len() > MAX_TYPE_META {
            return Err(bad("type description larger than 1 MiB"));
        }
        let c_name = CString::new(type_name).map_err(|_| bad("NUL in the type name"))?;
        // SAFETY: reads `len` bytes of a live slice; returns an owned copy or NULL when the
        // bytes are not a valid serialized TypeInformation.
        let ti = unsafe {
            cyclors::ddsi_typeinfo_deser(type_information.as_ptr(), type_information.len() as u32)
        };
        if ti.is_null() {
            return Err(bad("malformed XTypes type information"));
        }
        let info = TypeInfo(Arc::new(OwnedTypeInfo(ti)));
        check_type_map(&info, type_name, type_mapping)?;
        // Register the type objects in this domain's type library through a private topic
        // whose descriptor carries them (its opcodes describe one byte and are never used for
        // data), then let CycloneDDS derive the real descriptor from the registered types.
        let ops: [u32; 3] = [
            cyclors::dds_stream_opcode_DDS_OP_ADR
                | (cyclors::dds_stream_typecode_DDS_OP_VAL_1BY << 16),
            0,
            cyclors::dds_stream_opcode_DDS_OP_RTS,
        ];
        let carrier = dds_topic_descriptor_t {
            m_size: 1,
            m_align: 1,
            m_flagset: cyclors::DDS_TOPIC_FIXED_SIZE | cyclors::DDS_TOPIC_XTYPES_METADATA,
            m_nkeys: 0,
            m_typename: c_name.as_ptr(),
            m_keys: std::ptr::null(),
            m_nops: ops.len() as u32,
            m_ops: ops.as_ptr(),
            m_meta: c"".as_ptr(),
            type_information: cyclors::dds_type_meta_ser {
                data: type_information.as_ptr(),
                sz: type_information.len() as u32,
            },
            type_mapping: cyclors::dds_type_meta_ser {
                data: type_mapping.as_ptr(),
                sz: type_mapping.len() as u32,
            },
            restrict_data_representation: 0,
        };
        let topic_name = CString::new(format!("roam/type_registration/{type_name}"))
            .map_err(|_| bad("NUL in the type name"))?;
        // SAFETY: live participant; the descriptor and everything it points to outlive the
        // call, and CycloneDDS copies what it keeps (ops, keys, type meta); NULL qos/listener.
        let carrier_topic = check("dds_create_topic(type registration)", unsafe {
            cyclors::dds_create_topic(
                participant.handle(),
                &carrier,
                topic_name.as_ptr(),
                std::ptr::null(),
                std::ptr::null(),
            )
        })?;
        let made = Self::create(
            participant,
            &info,
            cyclors::dds_find_scope_DDS_FIND_SCOPE_LOCAL_DOMAIN,
            Duration::ZERO,
        );
        delete_entity("topic", carrier_topic);
        let made = made?;
        if made.type_name != type_name {
            return Err(bad(&format!(
                "the type information describes {:?}",
                made.type_name
            )));
        }
        Ok(made)
    }

    fn create(
        participant: &Participant,
        info: &TypeInfo,
        scope: cyclors::dds_find_scope_t,
        timeout: Duration,
    ) -> Result<TypeDescriptor, DdsError> {
        let mut desc: *mut dds_topic_descriptor_t = std::ptr::null_mut();
        let timeout_ns = i64::try_from(timeout.as_nanos()).unwrap_or(i64::MAX);
        // SAFETY: live participant, valid type information; on success `desc` is a new
        // descriptor we own (freed in Drop), on failure it is left NULL / freed by CycloneDDS.
        check("dds_create_topic_descriptor", unsafe {
            cyclors::dds_create_topic_descriptor(
                scope,
                participant.handle(),
                info.as_ptr(),
                timeout_ns,
                &mut desc,
            )
        })?;
        if desc.is_null() {
            return Err(DdsError::InvalidArgument(
                "no descriptor for the type".into(),
            ));
        }
        // SAFETY: a descriptor CycloneDDS just built: its type name is a valid C string.
        let type_name = unsafe { CStr::from_ptr((*desc).m_typename) }
            .to_string_lossy()
            .into_owned();
        Ok(TypeDescriptor { desc, type_name })
    }

    /// The DDS type name, e.g. `roam_test::RobotState`.
    pub fn type_name(&self) -> &str {
        &self.type_name
    }

    /// Whether the type has no key fields.
    pub fn keyless(&self) -> bool {
        // SAFETY: our live descriptor.
        unsafe { (*self.desc).m_nkeys == 0 }
    }

    /// The serialized XTypes TypeInformation (what discovery announces).
    pub fn type_information(&self) -> &[u8] {
        // SAFETY: our live descriptor; the blob lives as long as it does.
        unsafe { meta_bytes(&(*self.desc).type_information) }
    }

    /// The serialized XTypes TypeMapping (the type objects of the type and its dependencies).
    pub fn type_mapping(&self) -> &[u8] {
        // SAFETY: our live descriptor; the blob lives as long as it does.
        unsafe { meta_bytes(&(*self.desc).type_mapping) }
    }

    pub(crate) fn as_ptr(&self) -> *const dds_topic_descriptor_t {
        self.desc
    }
}

/// # Safety
/// `m` must describe `sz` readable bytes (or have a NULL pointer) that outlive `'a`.
unsafe fn meta_bytes<'a>(m: &cyclors::dds_type_meta_ser) -> &'a [u8] {
    if m.data.is_null() || m.sz == 0 {
        &[]
    } else {
        // SAFETY: per the contract.
        unsafe { std::slice::from_raw_parts(m.data, m.sz as usize) }
    }
}

/// Checks that a serialized type map is valid and holds the type `info` names, as `type_name`.
fn check_type_map(info: &TypeInfo, type_name: &str, type_mapping: &[u8]) -> Result<(), DdsError> {
    let bad = |what: &str| DdsError::InvalidArgument(format!("type {type_name:?}: {what}"));
    // SAFETY: reads `len` bytes of a live slice; returns an owned map or NULL if malformed.
    let map =
        unsafe { cyclors::ddsi_typemap_deser(type_mapping.as_ptr(), type_mapping.len() as u32) };
    if map.is_null() {
        return Err(bad("malformed XTypes type map"));
    }
    // SAFETY: valid type information; the returned id points into it.
    let id = unsafe { cyclors::ddsi_typeinfo_complete_typeid(info.as_ptr()) };
    // SAFETY: valid map and id; the result is NULL or a string owned by the map.
    let name = unsafe { cyclors::ddsi_typemap_get_type_name(map, id) };
    let named = if name.is_null() {
        None
    } else {
        // SAFETY: a NUL-terminated string owned by `map`, copied before the map is freed.
        Some(
            unsafe { CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned(),
        )
    };
    // SAFETY: frees the map's contents and then its allocation, once.
    unsafe {
        cyclors::ddsi_typemap_fini(map);
        cyclors::dds_free(map as *mut std::ffi::c_void);
    }
    match named {
        Some(n) if n == type_name => Ok(()),
        Some(n) => Err(bad(&format!("the type map describes {n:?}"))),
        None => Err(bad(
            "the type map does not hold the type its information names",
        )),
    }
}

impl Drop for TypeDescriptor {
    fn drop(&mut self) {
        // SAFETY: allocated by dds_create_topic_descriptor, freed exactly once.
        unsafe { cyclors::dds_delete_topic_descriptor(self.desc) };
    }
}

impl PartialEq for TypeDescriptor {
    fn eq(&self, other: &Self) -> bool {
        self.type_name == other.type_name
            && self.type_information() == other.type_information()
            && self.type_mapping() == other.type_mapping()
    }
}

impl Eq for TypeDescriptor {}

impl std::hash::Hash for TypeDescriptor {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.type_name.hash(state);
        self.type_information().hash(state);
    }
}

impl std::fmt::Debug for TypeDescriptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypeDescriptor")
            .field("type_name", &self.type_name)
            .field("keyless", &self.keyless())
            .finish()
    }
}
