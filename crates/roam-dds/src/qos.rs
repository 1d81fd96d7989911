use cyclors::dds_qos_t;

/// How many samples a writer keeps for late joiners and retransmits, or a reader keeps unread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum History {
    /// Keep the last N (N >= 1) samples per instance.
    KeepLast(u32),
    /// Keep everything until delivered / taken (bounded by resource limits).
    KeepAll,
}

/// The QoS that matter for forwarding ROS 2 topics, as plain Rust. Everything else is left at
/// CycloneDDS's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Qos {
    /// RELIABLE (true) or BEST_EFFORT (false).
    pub reliable: bool,
    /// TRANSIENT_LOCAL (true: the writer keeps its history for late-joining readers) or
    /// VOLATILE. Discovered TRANSIENT and PERSISTENT endpoints report true as well.
    pub transient_local: bool,
    /// History kind and depth.
    pub history: History,
}

impl Default for Qos {
    /// The ROS 2 default profile: reliable, volatile, keep last 10.
    fn default() -> Self {
        Qos {
            reliable: true,
            transient_local: false,
            history: History::KeepLast(10),
        }
    }
}

impl Qos {
    /// Reliable, transient-local, keep last `depth` (e.g. `/tf_static`, `/robot_description`).
    pub fn latched(depth: u32) -> Self {
        Qos {
            reliable: true,
            transient_local: true,
            history: History::KeepLast(depth),
        }
    }

    /// Best effort, volatile, keep last `depth` (the ROS 2 sensor-data profile uses 5).
    pub fn best_effort(depth: u32) -> Self {
        Qos {
            reliable: false,
            transient_local: false,
            history: History::KeepLast(depth),
        }
    }
}

/// How long a reliable write may block when the readers do not acknowledge fast enough before
/// it fails with `DDS_RETCODE_TIMEOUT`.
const MAX_BLOCKING_TIME_NS: i64 = 1_000_000_000;

/// An owned `dds_qos_t`, deleted on drop.
pub(crate) struct RawQos(*mut dds_qos_t);

impl RawQos {
    pub(crate) fn new(qos: &Qos) -> RawQos {
        // SAFETY: dds_create_qos allocates a fresh, default-initialised qos (it aborts on OOM
        // rather than returning NULL).
        let raw = RawQos(unsafe { cyclors::dds_create_qos() });
        let (kind, depth) = match qos.history {
            History::KeepLast(n) => (
                cyclors::dds_history_kind_DDS_HISTORY_KEEP_LAST,
                i32::try_from(n.max(1)).unwrap_or(i32::MAX),
            ),
            History::KeepAll => (cyclors::dds_history_kind_DDS_HISTORY_KEEP_ALL, -1),
        };
        let reliability = if qos.reliable {
            cyclors::dds_reliability_kind_DDS_RELIABILITY_RELIABLE
        } else {
            cyclors::dds_reliability_kind_DDS_RELIABILITY_BEST_EFFORT
        };
        let durability = if qos.transient_local {
            cyclors::dds_durability_kind_DDS_DURABILITY_TRANSIENT_LOCAL
        } else {
            cyclors::dds_durability_kind_DDS_DURABILITY_VOLATILE
        };
        // SAFETY: `raw.0` is a valid qos owned by us; the setters only write into it.
        unsafe {
            cyclors::dds_qset_reliability(raw.0, reliability, MAX_BLOCKING_TIME_NS);
            cyclors::dds_qset_durability(raw.0, durability);
            cyclors::dds_qset_history(raw.0, kind, depth);
            if qos.transient_local {
                // What a transient-local writer keeps for late joiners is governed by the
                // durability-service history, which defaults to keep-last 1 whatever the
                // history QoS says: make it the same (as rmw_cyclonedds does).
                cyclors::dds_qset_durability_service(raw.0, 0, kind, depth, -1, -1, -1);
            }
        }
        raw
    }

    pub(crate) fn as_ptr(&self) -> *const dds_qos_t {
        self.0
    }

    /// Sets how long a reliable write may block (see [`crate::WriterOptions::non_blocking`]).
    pub(crate) fn set_max_blocking_time(&self, qos: &Qos, ns: i64) {
        let reliability = if qos.reliable {
            cyclors::dds_reliability_kind_DDS_RELIABILITY_RELIABLE
        } else {
            cyclors::dds_reliability_kind_DDS_RELIABILITY_BEST_EFFORT
        };
        // SAFETY: `self.0` is a valid qos owned by us; the setter only writes into it.
        unsafe { cyclors::dds_qset_reliability(self.0, reliability, ns) };
    }

    /// Enables CycloneDDS's writer batching (samples wait in the outgoing packet until a
    /// flush or a full packet).
    pub(crate) fn set_writer_batching(&self) {
        // SAFETY: `self.0` is a valid qos owned by us; the setter only writes into it.
        unsafe { cyclors::dds_qset_writer_batching(self.0, true) };
    }

    /// Turns off disposing an instance when it is unregistered (WRITER_DATA_LIFECYCLE
    /// autodispose_unregistered_instances, true by default).
    pub(crate) fn set_no_autodispose(&self) {
        // SAFETY: `self.0` is a valid qos owned by us; the setter only writes into it.
        unsafe { cyclors::dds_qset_writer_data_lifecycle(self.0, false) };
    }

    /// Sets the USER_DATA policy (opaque bytes that discovery shows to every peer).
    pub(crate) fn set_user_data(&self, data: &[u8]) {
        // SAFETY: `self.0` is a valid qos owned by us; CycloneDDS copies `sz` bytes from
        // `value`, which points to `data` for the duration of the call.
        unsafe { cyclors::dds_qset_userdata(self.0, data.as_ptr().cast(), data.len()) };
    }
}

/// The USER_DATA of a discovered endpoint's qos (empty when absent).
///
/// # Safety
/// `qos` must be NULL or point to a valid `dds_qos_t` for the duration of the call.
pub(crate) unsafe fn user_data(qos: *const dds_qos_t) -> Vec<u8> {
    if qos.is_null() {
        return Vec::new();
    }
    let mut value: *mut std::os::raw::c_void = std::ptr::null_mut();
    let mut sz: usize = 0;
    // SAFETY: valid qos per the caller; on success CycloneDDS allocates a copy of the bytes
    // into `value`, which we own and free with dds_free below.
    let present = unsafe { cyclors::dds_qget_userdata(qos, &mut value, &mut sz) };
    if !present || value.is_null() {
        return Vec::new();
    }
    // SAFETY: `value` points to `sz` initialised bytes allocated by CycloneDDS.
    let out = unsafe { std::slice::from_raw_parts(value as *const u8, sz) }.to_vec();
    // SAFETY: allocated by CycloneDDS for us, freed exactly once.
    unsafe { cyclors::dds_free(value) };
    out
}

impl Drop for RawQos {
    fn drop(&mut self) {
        // SAFETY: created by dds_create_qos, deleted once here.
        unsafe { cyclors::dds_delete_qos(self.0) };
    }
}

/// Reads the forwarding-relevant QoS out of a discovered endpoint's qos. Missing policies take
/// the DDS defaults for the endpoint kind (a writer defaults to reliable, a reader to best
/// effort; both to volatile and keep last 1).
///
/// # Safety
/// `qos` must be NULL or point to a valid `dds_qos_t` for the duration of the call.
pub(crate) unsafe fn from_raw(qos: *const dds_qos_t, is_writer: bool) -> Qos {
    let mut out = Qos {
        reliable: is_writer,
        transient_local: false,
        history: History::KeepLast(1),
    };
    if qos.is_null() {
        return out;
    }
    let mut rel = 0;
    let mut blocking = 0i64;
    // SAFETY: `qos` is valid per this function's contract; out-pointers are locals.
    if unsafe { cyclors::dds_qget_reliability(qos, &mut rel, &mut blocking) } {
        out.reliable = rel == cyclors::dds_reliability_kind_DDS_RELIABILITY_RELIABLE;
    }
    let mut dur = 0;
    // SAFETY: as above.
    if unsafe { cyclors::dds_qget_durability(qos, &mut dur) } {
        out.transient_local = dur != cyclors::dds_durability_kind_DDS_DURABILITY_VOLATILE;
    }
    let mut kind = 0;
    let mut depth = 0i32;
    // SAFETY: as above.
    if unsafe { cyclors::dds_qget_history(qos, &mut kind, &mut depth) } {
        out.history = if kind == cyclors::dds_history_kind_DDS_HISTORY_KEEP_ALL {
            History::KeepAll
        } else {
            History::KeepLast(depth.max(1) as u32)
        };
    }
    out
}
