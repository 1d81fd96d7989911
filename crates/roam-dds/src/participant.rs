use std::collections::HashMap;
use std::ffi::CString;
use std::sync::{Arc, Mutex, OnceLock};

use cyclors::{dds_entity_t, dds_guid_t, dds_instance_handle_t};

use crate::error::{call_error, check, DdsError};
use crate::Guid;

/// The DDS domains this process created explicitly (`dds_create_domain`), shared by every
/// participant on them. CycloneDDS allows one configuration per domain id and process, so the
/// first participant's configuration wins and a different one is refused.
struct DomainEntry {
    /// `None` when the domain already existed when we first asked (created implicitly by some
    /// other code in the process): then we do not own it and never delete it.
    handle: Option<dds_entity_t>,
    config: Option<String>,
    users: usize,
}

/// DDSI port mapping: the discovery multicast port 7400 + 250 * domain must fit in 16 bits
/// (232 -> 65400; CycloneDDS refuses 233).
const MAX_DOMAIN_ID: u32 = 232;

/// `CYCLONEDDS_URI` when set and not blank.
fn config_from_env() -> Option<String> {
    std::env::var("CYCLONEDDS_URI")
        .ok()
        .filter(|v| !v.trim().is_empty())
}

static DOMAINS: Mutex<Option<HashMap<u32, DomainEntry>>> = Mutex::new(None);

/// One participant's hold on its domain; deletes the domain when the last one goes.
struct DomainRef {
    id: u32,
}

impl DomainRef {
    fn acquire(id: u32, config: Option<&str>) -> Result<DomainRef, DdsError> {
        let mut guard = DOMAINS.lock().unwrap_or_else(|e| e.into_inner());
        let domains = guard.get_or_insert_with(HashMap::new);
        if let Some(entry) = domains.get_mut(&id) {
            if entry.config.as_deref() != config {
                return Err(DdsError::DomainConfigConflict(id));
            }
            entry.users += 1;
            return Ok(DomainRef { id });
        }
        // dds_create_domain with a NULL configuration takes CycloneDDS's built-in defaults
        // (multicast on the default interface); only implicitly created domains read
        // CYCLONEDDS_URI. Read it here, so `None` means what a ROS 2 user expects.
        let from_env = config_from_env();
        let c_config = match config.or(from_env.as_deref()) {
            Some(c) => Some(
                CString::new(c)
                    .map_err(|_| DdsError::InvalidArgument("config contains a NUL byte".into()))?,
            ),
            None => None,
        };
        let ptr = c_config.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
        // SAFETY: `ptr` is NULL (built-in defaults) or a NUL-terminated string that outlives
        // the call; CycloneDDS copies what it needs.
        let ret = unsafe { cyclors::dds_create_domain(id, ptr) };
        let handle = if ret == cyclors::DDS_RETCODE_PRECONDITION_NOT_MET {
            // Created implicitly elsewhere in this process: usable, but not ours to delete,
            // and its configuration is not the one asked for.
            if config.is_some() {
                return Err(DdsError::DomainConfigConflict(id));
            }
            None
        } else {
            Some(check("dds_create_domain", ret)?)
        };
        domains.insert(
            id,
            DomainEntry {
                handle,
                config: config.map(str::to_owned),
                users: 1,
            },
        );
        Ok(DomainRef { id })
    }
}

impl Drop for DomainRef {
    fn drop(&mut self) {
        let mut guard = DOMAINS.lock().unwrap_or_else(|e| e.into_inner());
        let Some(domains) = guard.as_mut() else {
            return;
        };
        let Some(entry) = domains.get_mut(&self.id) else {
            return;
        };
        entry.users -= 1;
        if entry.users == 0 {
            if let Some(handle) = entry.handle {
                // SAFETY: the handle came from dds_create_domain and this is the last user;
                // it is deleted once, under the registry lock, so no one re-creates the domain
                // concurrently.
                unsafe { cyclors::dds_delete(handle) };
            }
            domains.remove(&self.id);
        }
    }
}

struct Inner {
    handle: dds_entity_t,
    guid: Guid,
    instance_handle: dds_instance_handle_t,
    domain_id: u32,
    /// The configuration the domain was asked for (or `CYCLONEDDS_URI`), for a sibling.
    config: Option<String>,
    /// The sibling ([`Participant::sibling`]), made on first use.
    sibling: Mutex<Option<Participant>>,
    sibling_guid: OnceLock<Guid>,
    // Dropped after `Drop::drop` deleted the participant.
    _domain: DomainRef,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // SAFETY: the participant handle is owned by this value and deleted exactly once. Every
        // reader/writer holds a clone of the `Participant`, so none is alive any more.
        unsafe { cyclors::dds_delete(self.handle) };
    }
}

/// A DDS domain participant. Cheap to clone (a shared handle); the participant is deleted when
/// the last clone, and every [`Reader`](crate::Reader), [`Writer`](crate::Writer) and
/// [`Discovery`](crate::Discovery) made from it, is gone.
#[derive(Clone)]
pub struct Participant {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Participant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Participant")
            .field("domain_id", &self.inner.domain_id)
            .field("guid", &hex(&self.inner.guid))
            .finish()
    }
}

impl Participant {
    /// Joins DDS domain `domain_id`. `config` is a CycloneDDS configuration (XML, or anything
    /// `CYCLONEDDS_URI` accepts); `None` uses `CYCLONEDDS_URI` or CycloneDDS's defaults.
    ///
    /// CycloneDDS has one configuration per domain and process: a second participant on the
    /// same domain shares the domain and must pass the same `config`
    /// ([`DdsError::DomainConfigConflict`] otherwise).
    pub fn new(domain_id: u32, config: Option<&str>) -> Result<Participant, DdsError> {
        if domain_id > MAX_DOMAIN_ID {
            // DDSI port mapping: the discovery multicast port 7400 + 250 * domain must fit in
            // 16 bits (232 -> 65400; CycloneDDS refuses 233); also excludes
            // DDS_DOMAIN_DEFAULT, whose meaning depends on the configuration.
            return Err(DdsError::InvalidArgument(format!(
                "domain id {domain_id} (max 232)"
            )));
        }
        let domain = DomainRef::acquire(domain_id, config)?;
        // SAFETY: NULL qos and listener mean defaults; the domain exists (we hold it).
        let handle = check("dds_create_participant", unsafe {
            cyclors::dds_create_participant(domain_id, std::ptr::null(), std::ptr::null())
        })?;
        let mut guid = dds_guid_t { v: [0; 16] };
        let mut ih: dds_instance_handle_t = 0;
        // SAFETY: `handle` is a live participant; both out-pointers point to owned locals.
        let ret = unsafe { cyclors::dds_get_guid(handle, &mut guid) };
        // SAFETY: as above.
        let ret2 = unsafe { cyclors::dds_get_instance_handle(handle, &mut ih) };
        let inner = Inner {
            handle,
            guid: guid.v,
            instance_handle: ih,
            domain_id,
            config: config.map(str::to_owned).or_else(config_from_env),
            sibling: Mutex::new(None),
            sibling_guid: OnceLock::new(),
            _domain: domain,
        };
        check("dds_get_guid", ret)?;
        check("dds_get_instance_handle", ret2)?;
        Ok(Participant {
            inner: Arc::new(inner),
        })
    }

    /// The participant's GUID. A discovered [`Endpoint`](crate::Endpoint) whose
    /// `participant_guid` equals this one is ours (never re-import what you exported).
    pub fn guid(&self) -> Guid {
        self.inner.guid
    }

    /// The participant's local instance handle (`participant_instance_handle` of the
    /// endpoints it owns, as seen by discovery in this process).
    pub fn instance_handle(&self) -> u64 {
        self.inner.instance_handle
    }

    /// The DDS domain id.
    pub fn domain_id(&self) -> u32 {
        self.inner.domain_id
    }

    /// True when `endpoint` belongs to this participant or to its [sibling](Self::sibling).
    pub fn owns(&self, endpoint: &crate::Endpoint) -> bool {
        endpoint.participant_guid == self.inner.guid
            || self.inner.sibling_guid.get() == Some(&endpoint.participant_guid)
    }

    /// A participant of the same DDS domain on a second CycloneDDS domain instance of this
    /// process, with its own sockets and receive threads (made on the first call, then the
    /// same one): a reader there whose callback waits does not hold this participant's
    /// readers. It is a participant of its own on the network (another GUID prefix), with
    /// this one's configuration (`crate::sibling`); [`owns`](Self::owns) counts its
    /// endpoints as this participant's. Refused when that configuration has a section for
    /// this domain id only (`<Domain id="N">`), which a second instance would not apply.
    pub fn sibling(&self) -> Result<Participant, DdsError> {
        let mut slot = self.inner.sibling.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = slot.as_ref() {
            return Ok(s.clone());
        }
        let config = crate::sibling::sibling_config(
            self.inner.config.as_deref(),
            self.inner.domain_id,
            |p| std::fs::read_to_string(p),
        )
        .map_err(|e| DdsError::InvalidArgument(format!("no second domain instance: {e}")))?;
        let made = Participant::on_free_domain_id(self.inner.domain_id, &config)?;
        let _ = self.inner.sibling_guid.set(made.guid());
        *slot = Some(made.clone());
        Ok(made)
    }

    /// A participant on the highest domain id this process does not use (an internal id:
    /// `config` says which domain it joins on the network).
    fn on_free_domain_id(taken: u32, config: &str) -> Result<Participant, DdsError> {
        let mut last = None;
        for id in (0..=MAX_DOMAIN_ID).rev().filter(|id| *id != taken) {
            let used = DOMAINS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .is_some_and(|d| d.contains_key(&id));
            if used {
                continue;
            }
            match Participant::new(id, Some(config)) {
                // Created implicitly elsewhere in this process since we looked: try another.
                Err(e @ DdsError::DomainConfigConflict(_)) => last = Some(e),
                other => return other,
            }
        }
        Err(last.unwrap_or_else(|| DdsError::InvalidArgument("no free domain id".into())))
    }

    pub(crate) fn handle(&self) -> dds_entity_t {
        self.inner.handle
    }
}

/// Creates the topic a reader or writer of `topic` needs: typed when the topic has a
/// descriptor, a blob (raw CDR) topic otherwise.
pub(crate) fn create_topic(
    participant: &Participant,
    topic: &crate::TopicInfo,
) -> Result<dds_entity_t, DdsError> {
    let Some(desc) = &topic.descriptor else {
        return create_blob_topic(participant, topic);
    };
    if desc.type_name() != topic.type_name {
        return Err(DdsError::InvalidArgument(format!(
            "topic {} has type {} but its descriptor describes {}",
            topic.name,
            topic.type_name,
            desc.type_name()
        )));
    }
    let name = CString::new(topic.name.as_str())
        .map_err(|_| DdsError::InvalidArgument("topic name contains a NUL byte".into()))?;
    // SAFETY: live participant; a valid descriptor (CycloneDDS built it) that outlives the call
    // and whose contents the topic copies; NUL-terminated name; NULL qos and listener.
    let ret = unsafe {
        cyclors::dds_create_topic(
            participant.handle(),
            desc.as_ptr(),
            name.as_ptr(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    check("dds_create_topic", ret)
}

/// Creates a blob (raw CDR) topic on `participant`.
fn create_blob_topic(
    participant: &Participant,
    topic: &crate::TopicInfo,
) -> Result<dds_entity_t, DdsError> {
    let name = CString::new(topic.name.as_str())
        .map_err(|_| DdsError::InvalidArgument("topic name contains a NUL byte".into()))?;
    let type_name = CString::new(topic.type_name.as_str())
        .map_err(|_| DdsError::InvalidArgument("type name contains a NUL byte".into()))?;
    if topic.name.is_empty() || topic.type_name.is_empty() {
        return Err(DdsError::InvalidArgument("empty topic or type name".into()));
    }
    // SAFETY: the participant is alive (we borrow it); both strings are NUL-terminated and
    // outlive the call, and cdds_create_blob_topic only reads them (it copies the type name
    // into the sertype and the topic name into the topic), despite the `*mut` in its signature.
    let ret = unsafe {
        cyclors::cdds_create_blob_topic(
            participant.handle(),
            name.as_ptr() as *mut _,
            type_name.as_ptr() as *mut _,
            topic.keyless,
        )
    };
    if ret < 0 {
        return Err(call_error("dds_create_topic_sertype", ret));
    }
    Ok(ret)
}

/// Deletes an entity we own, logging (not panicking on) failure. Returns true when the entity
/// is gone (deleted now, or already).
/// The GUID of a live entity (participant, reader or writer).
pub(crate) fn entity_guid(handle: dds_entity_t) -> Result<Guid, DdsError> {
    let mut guid = dds_guid_t { v: [0; 16] };
    // SAFETY: callers pass a handle they own and keep alive; the out-pointer is a local.
    check("dds_get_guid", unsafe {
        cyclors::dds_get_guid(handle, &mut guid)
    })?;
    Ok(guid.v)
}

pub(crate) fn delete_entity(what: &'static str, handle: dds_entity_t) -> bool {
    // SAFETY: callers own `handle` and call this once for it.
    let ret = unsafe { cyclors::dds_delete(handle) };
    if ret < 0 && ret != cyclors::DDS_RETCODE_ALREADY_DELETED {
        tracing::warn!(
            "dds_delete({what}) failed: {}",
            call_error("dds_delete", ret)
        );
        return ret == cyclors::DDS_RETCODE_BAD_PARAMETER;
    }
    true
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
