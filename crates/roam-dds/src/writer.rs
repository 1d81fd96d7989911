use std::ffi::c_void;

use cyclors::{dds_entity_t, ddsi_sertype, ddsrt_iovec_t};

use crate::error::{check, DdsError};
use crate::participant::{create_topic, delete_entity, entity_guid, Participant};
use crate::qos::RawQos;
use crate::{Guid, Qos, TopicInfo};

/// How a [`Writer`] behaves beyond its [`Qos`].
#[derive(Clone, Copy, Debug, Default)]
pub struct WriterOptions<'a> {
    /// USER_DATA announced in discovery, where every peer's
    /// [`Endpoint::user_data`](crate::Endpoint::user_data) shows it. Empty: none.
    pub user_data: &'a [u8],
    /// Batch samples: a write queues the sample in the writer's outgoing packet, and
    /// [`Writer::flush`] (or a full packet) sends it. Many small samples then share one
    /// packet, one system call on this side and one on each reader's, instead of one each.
    /// The caller must flush once it has written what it has.
    pub batching: bool,
    /// A reliable write that the readers are not ready for (too much unacknowledged data)
    /// fails at once with a timeout ([`DdsError::is_timeout`]) instead of blocking the
    /// calling thread for up to a second: for callers on an async runtime, which retry later.
    pub non_blocking: bool,
    /// Dispose instances only when told ([`Writer::dispose_cdr`]), never because they are
    /// unregistered (DDS's default disposes them then): for writers that replay another
    /// publisher's lifecycle, where an unregister must stay an unregister.
    pub explicit_dispose: bool,
    /// Called with the topic's name and how many readers the writer reaches now, each time
    /// that changes (a reader matched or left), on a CycloneDDS thread: to say when a
    /// writer's readers come and go. It must return quickly and never block.
    pub on_readers: Option<OnReaders>,
}

/// See [`WriterOptions::on_readers`].
pub type OnReaders = fn(topic: &str, readers: u32);

/// What the publication-matched listener reaches through its argument pointer.
struct MatchState {
    topic: String,
    on_readers: OnReaders,
}

/// Publishes raw serialized samples on a blob topic.
pub struct Writer {
    handle: dds_entity_t,
    topic: dds_entity_t,
    info: TopicInfo,
    /// The listener's state when [`WriterOptions::on_readers`] is set, else null.
    matches: *const MatchState,
    /// The writer's sertype, looked up once: every write builds its serdata from it, and
    /// `dds_get_entity_sertype` pins the entity through the handle table (two lock round
    /// trips) each time it is asked.
    sertype: *const ddsi_sertype,
    // Keeps the participant (and so the domain) alive as long as this writer.
    _participant: Participant,
}

// SAFETY: `matches` points to a `MatchState` (a String and a fn pointer: Send + Sync), only
// read, and freed in Drop after the writer entity is deleted. `sertype` is CycloneDDS's
// immutable, reference-counted type description, valid while the writer (and so its topic)
// exists, and CycloneDDS uses it from every thread. The handles are plain integers usable
// from any thread.
unsafe impl Send for Writer {}
// SAFETY: as above.
unsafe impl Sync for Writer {}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer").field("topic", &self.info).finish()
    }
}

impl Writer {
    /// Creates a writer for `topic` with `qos`. A transient-local writer keeps its last
    /// `history` samples for late-joining readers.
    pub fn new(
        participant: &Participant,
        topic: &TopicInfo,
        qos: &Qos,
    ) -> Result<Writer, DdsError> {
        Self::with_options(participant, topic, qos, WriterOptions::default())
    }

    /// Like [`Writer::new`], with [`WriterOptions`].
    pub fn with_options(
        participant: &Participant,
        topic: &TopicInfo,
        qos: &Qos,
        options: WriterOptions<'_>,
    ) -> Result<Writer, DdsError> {
        let topic_handle = create_topic(participant, topic)?;
        let raw = RawQos::new(qos);
        if !options.user_data.is_empty() {
            raw.set_user_data(options.user_data);
        }
        if options.batching {
            raw.set_writer_batching();
        }
        if options.non_blocking {
            raw.set_max_blocking_time(qos, 0);
        }
        if options.explicit_dispose {
            raw.set_no_autodispose();
        }
        let matches = match options.on_readers {
            Some(on_readers) => Box::into_raw(Box::new(MatchState {
                topic: topic.name.clone(),
                on_readers,
            })),
            None => std::ptr::null_mut(),
        };
        let listener = if matches.is_null() {
            std::ptr::null_mut()
        } else {
            // SAFETY: dds_create_listener only stores the argument pointer; `matches` stays
            // valid until after the writer is deleted (see Drop).
            let l = unsafe { cyclors::dds_create_listener(matches as *mut c_void) };
            // SAFETY: valid listener; the callback has the C signature CycloneDDS expects
            // and never unwinds.
            unsafe { cyclors::dds_lset_publication_matched(l, Some(on_publication_matched)) };
            l
        };
        // SAFETY: participant and topic handles are live; the qos and the listener (NULL:
        // none) are valid for the call and copied by CycloneDDS.
        let ret = unsafe {
            cyclors::dds_create_writer(participant.handle(), topic_handle, raw.as_ptr(), listener)
        };
        if !listener.is_null() {
            // SAFETY: the writer copied the listener; we own it and delete it once.
            unsafe { cyclors::dds_delete_listener(listener) };
        }
        if ret < 0 {
            delete_entity("topic", topic_handle);
            if !matches.is_null() {
                // SAFETY: no writer exists, so no callback holds the pointer; reclaim the box.
                drop(unsafe { Box::from_raw(matches) });
            }
        }
        let handle = check("dds_create_writer", ret)?;
        let mut writer = Writer {
            handle,
            topic: topic_handle,
            info: topic.clone(),
            matches,
            sertype: std::ptr::null(),
            _participant: participant.clone(),
        };
        // SAFETY: `handle` is the live writer just created; the out-pointer is its field. The
        // sertype stays valid while the writer (which references its topic) exists. On an
        // error, dropping `writer` deletes what was made here.
        check("dds_get_entity_sertype", unsafe {
            cyclors::dds_get_entity_sertype(handle, &mut writer.sertype)
        })?;
        Ok(writer)
    }

    /// Publishes one sample: `cdr` is the complete serialized sample as it goes on the wire,
    /// starting with the 4-byte encapsulation header (e.g. `00 01 00 00` for plain CDR,
    /// little endian). For a keyed topic the key is whatever the bytes hold.
    ///
    /// A reliable write blocks (up to one second, then `DDS_RETCODE_TIMEOUT`, see
    /// [`DdsError::is_timeout`]) while the readers have too much unacknowledged data; a
    /// [non-blocking](WriterOptions::non_blocking) one fails with the timeout at once.
    pub fn write_cdr(&self, cdr: &[u8]) -> Result<(), DdsError> {
        self.write_cdr_at(cdr, None)
    }

    /// Like [`Self::write_cdr`], with the sample's source timestamp (nanoseconds since the
    /// Unix epoch) given rather than read from the clock: a forwarded sample keeps the one
    /// its publisher gave it, as readers see within one DDS domain.
    pub fn write_cdr_at(&self, cdr: &[u8], source_time_ns: Option<u64>) -> Result<(), DdsError> {
        let serdata = self.serdata(cyclors::ddsi_serdata_kind_SDK_DATA, cdr)?;
        self.forward(serdata, 0, source_time_ns)
    }

    /// Disposes the instance whose serialized key (4-byte header included, as a
    /// [`SampleKind::Disposed`](crate::SampleKind) sample carries it) is `key`. Typed topics
    /// only ([`TopicInfo::described`]).
    pub fn dispose_cdr(&self, key: &[u8]) -> Result<(), DdsError> {
        self.dispose_cdr_at(key, None)
    }

    /// Like [`Self::dispose_cdr`], with the source timestamp given (see [`Self::write_cdr_at`]).
    pub fn dispose_cdr_at(&self, key: &[u8], source_time_ns: Option<u64>) -> Result<(), DdsError> {
        self.write_key(key, cyclors::DDSI_STATUSINFO_DISPOSE, source_time_ns)
    }

    /// Unregisters the instance whose serialized key is `key`: this writer no longer updates
    /// it (a transient-local writer forgets its history). Typed topics only.
    pub fn unregister_cdr(&self, key: &[u8]) -> Result<(), DdsError> {
        self.unregister_cdr_at(key, None)
    }

    /// Like [`Self::unregister_cdr`], with the source timestamp given (see
    /// [`Self::write_cdr_at`]).
    pub fn unregister_cdr_at(
        &self,
        key: &[u8],
        source_time_ns: Option<u64>,
    ) -> Result<(), DdsError> {
        self.write_key(key, cyclors::DDSI_STATUSINFO_UNREGISTER, source_time_ns)
    }

    fn write_key(
        &self,
        key: &[u8],
        statusinfo: u32,
        source_time_ns: Option<u64>,
    ) -> Result<(), DdsError> {
        if self.info.descriptor.is_none() {
            return Err(DdsError::InvalidArgument(format!(
                "topic {}: instance lifecycle needs the topic's type (a blob topic has no keys)",
                self.info.name
            )));
        }
        let serdata = self.serdata(cyclors::ddsi_serdata_kind_SDK_KEY, key)?;
        self.forward(serdata, statusinfo, source_time_ns)
    }

    /// Writes `serdata` (a fresh one, whose only reference we hand over) with the status
    /// (0: data) and source timestamp given, the clock's when none is: what `dds_writecdr`
    /// does with the clock, and CycloneDDS's own dispose with a status.
    fn forward(
        &self,
        serdata: *mut cyclors::ddsi_serdata,
        statusinfo: u32,
        source_time_ns: Option<u64>,
    ) -> Result<(), DdsError> {
        // SAFETY: `serdata` is a fresh serdata we hold the only reference to.
        unsafe {
            (*serdata).statusinfo = statusinfo;
            (*serdata).timestamp.v = match source_time_ns {
                Some(t) => dds_timestamp(t),
                None => cyclors::dds_time(),
            };
        }
        // SAFETY: dds_forwardcdr takes over our reference to `serdata` (it is released by
        // the writer history), on success and on failure once the writer is locked; the
        // writer is ours and alive, so the lock cannot fail. Unlike dds_writecdr it keeps
        // the status and timestamp set above.
        check("dds_forwardcdr", unsafe {
            cyclors::dds_forwardcdr(self.handle, serdata)
        })?;
        Ok(())
    }

    /// A new serdata of `kind` holding a copy of `cdr`, with one reference that the caller
    /// must hand to a write.
    fn serdata(
        &self,
        kind: cyclors::ddsi_serdata_kind,
        cdr: &[u8],
    ) -> Result<*mut cyclors::ddsi_serdata, DdsError> {
        if cdr.len() < 4 {
            return Err(DdsError::InvalidArgument(format!(
                "a serialized sample is at least the 4-byte encapsulation header, got {} bytes",
                cdr.len()
            )));
        }
        if u32::try_from(cdr.len()).is_err() {
            return Err(DdsError::InvalidArgument("sample larger than 4 GiB".into()));
        }
        let sertype = self.sertype;
        let iov = ddsrt_iovec_t {
            iov_base: cdr.as_ptr() as *mut _,
            iov_len: cdr.len(),
        };
        // SAFETY: from_ser_iov copies `size` bytes out of the one iovec (it only reads
        // iov_base, despite the `*mut`) and returns a new serdata holding one reference. The
        // blob sertype never returns NULL short of OOM (which aborts); a typed topic's
        // sertype validates the bytes against the type and returns NULL if they do not fit.
        let serdata =
            unsafe { cyclors::ddsi_serdata_from_ser_iov(sertype, kind, 1, &iov, cdr.len()) };
        if serdata.is_null() {
            return Err(DdsError::InvalidArgument(format!(
                "topic {}: the bytes are not a valid sample of {}",
                self.info.name, self.info.type_name
            )));
        }
        Ok(serdata)
    }

    /// Sends what batched writes queued (see [`WriterOptions::batching`]); a no-op otherwise.
    pub fn flush(&self) -> Result<(), DdsError> {
        // SAFETY: `self.handle` is our live writer.
        check("dds_write_flush", unsafe {
            cyclors::dds_write_flush(self.handle)
        })?;
        Ok(())
    }

    /// How many readers are matched with this writer now (in this and other processes).
    pub fn matched_readers(&self) -> Result<u32, DdsError> {
        // SAFETY: the status struct is plain integers, for which all-zero is valid.
        let mut st: cyclors::dds_publication_matched_status_t = unsafe { std::mem::zeroed() };
        // SAFETY: live writer handle; out-pointer to a local.
        check("dds_get_publication_matched_status", unsafe {
            cyclors::dds_get_publication_matched_status(self.handle, &mut st)
        })?;
        Ok(st.current_count)
    }

    /// The writer's GUID, as discovery reports it (e.g. for `ros_discovery_info`).
    pub fn guid(&self) -> Result<Guid, DdsError> {
        entity_guid(self.handle)
    }

    /// The topic this writer publishes on.
    pub fn topic(&self) -> &TopicInfo {
        &self.info
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // dds_delete waits for a callback in progress and stops new ones.
        let gone = delete_entity("writer", self.handle);
        delete_entity("topic", self.topic);
        if gone && !self.matches.is_null() {
            // SAFETY: created by Box::into_raw in `with_options`, freed once, after the
            // listener can no longer run.
            drop(unsafe { Box::from_raw(self.matches as *mut MatchState) });
        }
        // Otherwise leak it: freeing memory a callback may still use is worse.
    }
}

unsafe extern "C" fn on_publication_matched(
    _writer: dds_entity_t,
    status: cyclors::dds_publication_matched_status_t,
    arg: *mut c_void,
) {
    // SAFETY: `arg` is the MatchState given to dds_create_listener, valid while callbacks
    // can run (freed only after the writer is deleted).
    let state = unsafe { &*(arg as *const MatchState) };
    if status.current_count_change == 0 {
        return;
    }
    // A panic must not unwind into C.
    let call = || (state.on_readers)(&state.topic, status.current_count);
    if std::panic::catch_unwind(call).is_err() {
        tracing::error!("roam-dds: an on_readers callback panicked");
    }
}

/// A source time as CycloneDDS's timestamp: nanoseconds since the Unix epoch, below
/// `DDS_NEVER` (i64::MAX), which is not a time.
fn dds_timestamp(ns: u64) -> i64 {
    i64::try_from(ns).unwrap_or(i64::MAX).min(i64::MAX - 1)
}
