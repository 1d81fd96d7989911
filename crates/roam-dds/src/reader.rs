use std::collections::HashMap;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

use bytes::Bytes;
use cyclors::{
    dds_entity_t, dds_instance_handle_t, dds_sample_info_t, ddsi_serdata, ddsrt_iovec_t,
};

use crate::error::{check, DdsError};
use crate::participant::{create_topic, delete_entity, entity_guid, Participant};
use crate::qos::RawQos;
use crate::{Guid, Qos, TopicInfo};

/// What a received sample says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SampleKind {
    /// New data: `cdr` is the whole sample.
    Data,
    /// The instance was disposed: `cdr` is its serialized key.
    Disposed,
    /// The instance has no writer left (unregistered, or its writers are gone): `cdr` is its
    /// serialized key.
    Unregistered,
}

/// One received sample, as raw serialized bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Data, or a change of the instance's lifecycle (typed topics only: a blob topic cannot
    /// name an instance, so it reports data alone).
    pub kind: SampleKind,
    /// The complete serialized sample, 4-byte encapsulation header included, exactly as the
    /// writer sent it (for lifecycle changes: the serialized key, header included). On a blob
    /// topic the bytes are CycloneDDS's own buffer, not a copy, released when the last clone
    /// is dropped; on a typed topic they are a copy.
    pub cdr: Bytes,
    /// The writer's source timestamp, nanoseconds since the Unix epoch.
    pub source_timestamp_ns: i64,
    /// The GUID of the writer that published it (all zeros if the writer was already gone
    /// when the sample was taken).
    pub writer_guid: Guid,
}

type Callback = dyn Fn(Sample) + Send + Sync + 'static;

/// What the data-available listener reaches through its argument pointer.
struct ReaderState {
    on_sample: Box<Callback>,
    /// Typed topic: lifecycle samples carry a key serdata that can be serialized. (A blob
    /// topic's key serdata has no bytes: never touch it.)
    lifecycle: bool,
    /// publication_handle -> writer GUID; looked up once per writer. Also serialises
    /// take-and-deliver, so samples reach the callback in order even when the constructor's
    /// initial take and a listener invocation overlap.
    writers: Mutex<HashMap<dds_instance_handle_t, Guid>>,
}

/// Takes up to this many samples per `dds_takecdr` call.
const BATCH: usize = 32;
/// Forget the writer GUID cache past this many writers (they come and go over days).
const MAX_CACHED_WRITERS: usize = 4096;

/// Receives raw serialized samples on a blob topic and hands each to a callback.
///
/// The callback runs on a CycloneDDS thread (see the crate docs on threading). On a blob topic
/// it sees only valid samples (not the "writer left" / "disposed" notifications DDS also
/// queues); on a typed topic ([`TopicInfo::described`]) it also sees instance lifecycle
/// changes ([`SampleKind`]).
pub struct Reader {
    handle: dds_entity_t,
    topic: dds_entity_t,
    state: *const ReaderState,
    info: TopicInfo,
    _participant: Participant,
}

// SAFETY: `state` points to a `ReaderState`, which is Send + Sync (its closure is required to
// be, the rest is a Mutex); the pointer is only dereferenced shared, and freed in Drop after
// the reader entity is deleted. The handles are plain integers usable from any thread.
unsafe impl Send for Reader {}
// SAFETY: as above; `&Reader` exposes no interior mutation beyond thread-safe DDS calls.
unsafe impl Sync for Reader {}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader").field("topic", &self.info).finish()
    }
}

impl Reader {
    /// Creates a reader for `topic` with `qos` whose samples go to `on_sample`.
    ///
    /// `on_sample` may be called before this returns (a transient-local writer's history).
    pub fn new(
        participant: &Participant,
        topic: &TopicInfo,
        qos: &Qos,
        on_sample: impl Fn(Sample) + Send + Sync + 'static,
    ) -> Result<Reader, DdsError> {
        let topic_handle = create_topic(participant, topic)?;
        let state = Box::into_raw(Box::new(ReaderState {
            on_sample: Box::new(on_sample),
            lifecycle: topic.descriptor.is_some(),
            writers: Mutex::new(HashMap::new()),
        }));
        let raw = RawQos::new(qos);
        // SAFETY: dds_create_listener stores the argument pointer, it never dereferences it;
        // `state` stays valid until after the reader is deleted (see Drop).
        let listener = unsafe { cyclors::dds_create_listener(state as *mut c_void) };
        // SAFETY: the listener is valid; `on_data_available` has the C signature CycloneDDS
        // expects and never unwinds.
        unsafe { cyclors::dds_lset_data_available(listener, Some(on_data_available)) };
        // SAFETY: live participant and topic; qos and listener are copied by dds_create_reader.
        let ret = unsafe {
            cyclors::dds_create_reader(participant.handle(), topic_handle, raw.as_ptr(), listener)
        };
        // SAFETY: the reader copied the listener; we own it and delete it once.
        unsafe { cyclors::dds_delete_listener(listener) };
        if ret < 0 {
            delete_entity("topic", topic_handle);
            // SAFETY: no reader exists, so no callback can hold the pointer; reclaim the box.
            drop(unsafe { Box::from_raw(state) });
        }
        let handle = check("dds_create_reader", ret)?;
        // Samples that arrived while dds_create_reader ran (a transient-local writer's
        // history) raised "data available" before the listener was armed for a complete
        // entity, so no callback comes for them: take them now.
        // SAFETY: `state` is valid (freed only in Drop); the reader is live.
        take_all(handle, unsafe { &*state });
        Ok(Reader {
            handle,
            topic: topic_handle,
            state,
            info: topic.clone(),
            _participant: participant.clone(),
        })
    }

    /// How many writers are matched with this reader now.
    pub fn matched_writers(&self) -> Result<u32, DdsError> {
        // SAFETY: the status struct is plain integers, for which all-zero is valid.
        let mut st: cyclors::dds_subscription_matched_status_t = unsafe { std::mem::zeroed() };
        // SAFETY: live reader handle; out-pointer to a local.
        check("dds_get_subscription_matched_status", unsafe {
            cyclors::dds_get_subscription_matched_status(self.handle, &mut st)
        })?;
        Ok(st.current_count)
    }

    /// The reader's GUID, as discovery reports it (e.g. for `ros_discovery_info`).
    pub fn guid(&self) -> Result<Guid, DdsError> {
        entity_guid(self.handle)
    }

    /// The topic this reader subscribes to.
    pub fn topic(&self) -> &TopicInfo {
        &self.info
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        // dds_delete waits for a callback in progress and stops new ones; only then is the
        // state unreachable from C.
        let gone = delete_entity("reader", self.handle);
        delete_entity("topic", self.topic);
        if gone {
            // SAFETY: created by Box::into_raw in `new`, freed once, after the only other user
            // (the listener) can no longer run.
            drop(unsafe { Box::from_raw(self.state as *mut ReaderState) });
        }
        // Otherwise leak it: freeing memory a callback may still use is worse.
    }
}

unsafe extern "C" fn on_data_available(reader: dds_entity_t, arg: *mut c_void) {
    // SAFETY: `arg` is the `ReaderState` pointer given to dds_create_listener; it stays valid
    // while listener callbacks can run (freed only after dds_delete of the reader returned).
    let state = unsafe { &*(arg as *const ReaderState) };
    // Never unwind into C.
    let _ = catch_unwind(AssertUnwindSafe(|| take_all(reader, state)));
}

fn take_all(reader: dds_entity_t, state: &ReaderState) {
    let mut writers = state.writers.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let mut bufs: [*mut ddsi_serdata; BATCH] = [std::ptr::null_mut(); BATCH];
        // SAFETY: dds_sample_info_t is integers and a bool; all-zero is a valid value.
        let mut infos: [dds_sample_info_t; BATCH] = unsafe { std::mem::zeroed() };
        // SAFETY: `reader` is the live reader this callback belongs to; both arrays hold BATCH
        // elements. On success the first n entries are serdata references we now own.
        let n = unsafe {
            cyclors::dds_takecdr(
                reader,
                bufs.as_mut_ptr(),
                BATCH as u32,
                infos.as_mut_ptr(),
                cyclors::DDS_ANY_STATE,
            )
        };
        if n <= 0 {
            if n < 0 {
                tracing::debug!(
                    "dds_takecdr: {}",
                    crate::error::call_error("dds_takecdr", n)
                );
            }
            return;
        }
        let n = n as usize;
        let mut samples = Vec::with_capacity(n);
        for (sd, info) in bufs[..n].iter().zip(&infos[..n]) {
            if sd.is_null() {
                continue;
            }
            let kind = if info.valid_data {
                SampleKind::Data
            } else if !state.lifecycle {
                continue;
            } else if info.instance_state == cyclors::dds_instance_state_DDS_IST_NOT_ALIVE_DISPOSED
            {
                SampleKind::Disposed
            } else if info.instance_state
                == cyclors::dds_instance_state_DDS_IST_NOT_ALIVE_NO_WRITERS
            {
                SampleKind::Unregistered
            } else {
                continue;
            };
            // SAFETY: `sd` is a valid serdata reference from takecdr: a full sample (valid
            // data), or the key of a typed topic's instance (whose sertype serializes keys).
            let lent = unsafe { serdata_bytes(*sd) };
            // A typed topic's serdata goes back to its domain's pool when freed, so it must
            // not outlive the domain: copied. A blob serdata is plain heap memory: lent.
            let cdr = match state.lifecycle {
                true => Bytes::copy_from_slice(&lent),
                false => lent,
            };
            samples.push((kind, cdr, info.source_timestamp, info.publication_handle));
        }
        for sd in &bufs[..n] {
            if !sd.is_null() {
                // SAFETY: releases the reference takecdr gave us, exactly once.
                unsafe { cyclors::ddsi_serdata_unref(*sd) };
            }
        }
        for (kind, cdr, ts, ph) in samples {
            let writer_guid = writer_guid(reader, &mut writers, ph);
            let sample = Sample {
                kind,
                cdr,
                source_timestamp_ns: ts,
                writer_guid,
            };
            if catch_unwind(AssertUnwindSafe(|| (state.on_sample)(sample))).is_err() {
                tracing::error!("roam-dds: a Reader callback panicked; sample dropped");
            }
        }
        if n < BATCH {
            return;
        }
    }
}

/// A serdata's serialized form (header included), lent: the bytes stay where CycloneDDS put
/// them and the reference that keeps them is released when the last `Bytes` over them goes.
/// Sealing reads them there, so a sample is not copied on its way out of the DDS domain.
///
/// # Safety
/// `sd` must be a valid serdata holding a full sample. The result must not outlive the
/// domain unless the serdata is a blob one (cyclors' `cdds` serdata frees to the heap;
/// CycloneDDS's default serdata frees into its domain's pool).
unsafe fn serdata_bytes(sd: *mut ddsi_serdata) -> Bytes {
    // SAFETY: valid serdata per the contract.
    let size = unsafe { cyclors::ddsi_serdata_size(sd) } as usize;
    let mut iov = ddsrt_iovec_t {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    };
    // SAFETY: asks for a reference to bytes [0, size) of the serialized form; the blob
    // sertype points `iov` into its own payload and returns an extra serdata reference,
    // which the loan now owns.
    let held = unsafe { cyclors::ddsi_serdata_to_ser_ref(sd, 0, size, &mut iov) };
    Bytes::from_owner(SerdataLoan { held, iov })
}

/// An extra serdata reference and the bytes of its serialized form it keeps readable.
struct SerdataLoan {
    held: *mut ddsi_serdata,
    iov: ddsrt_iovec_t,
}

// SAFETY: a serdata reference may be released from any thread (CycloneDDS counts them
// atomically), and the bytes it keeps are never written while it is held.
unsafe impl Send for SerdataLoan {}

impl AsRef<[u8]> for SerdataLoan {
    fn as_ref(&self) -> &[u8] {
        if self.iov.iov_base.is_null() || self.iov.iov_len == 0 {
            return &[];
        }
        // SAFETY: `iov` describes iov_len readable bytes kept alive and unchanged by `held`
        // until drop.
        unsafe { std::slice::from_raw_parts(self.iov.iov_base as *const u8, self.iov.iov_len) }
    }
}

impl Drop for SerdataLoan {
    fn drop(&mut self) {
        // SAFETY: releases the reference and the iovec from to_ser_ref, once.
        unsafe { cyclors::ddsi_serdata_to_ser_unref(self.held, &self.iov) };
    }
}

fn writer_guid(
    reader: dds_entity_t,
    cache: &mut HashMap<dds_instance_handle_t, Guid>,
    ph: dds_instance_handle_t,
) -> Guid {
    if let Some(g) = cache.get(&ph) {
        return *g;
    }
    // SAFETY: live reader (we are in its callback); returns NULL for an unknown handle, or an
    // endpoint we own and free below.
    let ep = unsafe { cyclors::dds_get_matched_publication_data(reader, ph) };
    if ep.is_null() {
        return [0; 16];
    }
    // SAFETY: non-NULL result of dds_get_matched_publication_data: a valid endpoint.
    let guid = unsafe { (*ep).key.v };
    // SAFETY: frees what dds_get_matched_publication_data allocated, once.
    unsafe { cyclors::dds_builtintopic_free_endpoint(ep) };
    if cache.len() >= MAX_CACHED_WRITERS {
        cache.clear();
    }
    cache.insert(ph, guid);
    guid
}
