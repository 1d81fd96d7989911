use std::collections::HashMap;
use std::ffi::{c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

use cyclors::{dds_builtintopic_endpoint_t, dds_entity_t, dds_sample_info_t};

use crate::error::{check, DdsError};
use crate::participant::{delete_entity, Participant};
use crate::{Guid, Qos};

/// A publication (DDS writer) or subscription (DDS reader) somewhere in the domain, as DDS
/// discovery describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The endpoint's GUID.
    pub guid: Guid,
    /// The GUID of the participant that owns it. Equal to [`Participant::guid`] for our own.
    pub participant_guid: Guid,
    /// The owning participant's local instance handle.
    pub participant_instance_handle: u64,
    /// DDS topic name (`rt/chatter` for the ROS 2 topic `/chatter`).
    pub topic_name: String,
    /// DDS type name (`std_msgs::msg::dds_::String_`).
    pub type_name: String,
    /// Reliability, durability and history as the endpoint announced them (DDS defaults for
    /// policies it left out).
    pub qos: Qos,
    /// The endpoint's USER_DATA QoS (empty when it has none).
    pub user_data: Vec<u8>,
    /// The XTypes type information the endpoint announced, if any: with it the full type can
    /// be resolved ([`TypeDescriptor::resolve`](crate::TypeDescriptor::resolve)).
    pub type_info: Option<crate::TypeInfo>,
    /// True when the endpoint exists; false when it went away (deleted, or its participant
    /// was lost). The other fields of a false event repeat what was last known.
    pub alive: bool,
}

impl Endpoint {
    /// Whether the topic is keyless, from the entity kind in the GUID (DDSI: writer 0x03 and
    /// reader 0x04 are "no key"; 0x02 and 0x07 "with key").
    pub fn keyless(&self) -> bool {
        matches!(self.guid[15], 0x03 | 0x04)
    }
}

/// Something DDS discovery learned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiscoveryEvent {
    /// A writer appeared (`alive`) or went away (`!alive`).
    Publication(Endpoint),
    /// A reader appeared (`alive`) or went away (`!alive`).
    Subscription(Endpoint),
}

impl DiscoveryEvent {
    /// The endpoint, whichever kind.
    pub fn endpoint(&self) -> &Endpoint {
        match self {
            DiscoveryEvent::Publication(e) | DiscoveryEvent::Subscription(e) => e,
        }
    }
}

type Callback = dyn Fn(DiscoveryEvent) + Send + Sync + 'static;

struct DiscoveryState {
    on_event: Box<Callback>,
    /// Endpoints alive now, by GUID: a "gone" notification carries only the key, this fills in
    /// the rest.
    known: Mutex<HashMap<Guid, Endpoint>>,
    /// Held across take-and-deliver, so events reach the callback in order even when the
    /// constructor's initial take and listener invocations overlap.
    deliver: Mutex<()>,
}

/// One built-in-topic reader plus which kind it reports.
struct ListenerArg {
    state: *const DiscoveryState,
    publications: bool,
}

const BATCH: usize = 32;

/// Watches the DDS built-in topics `DCPSPublication` and `DCPSSubscription` and reports every
/// endpoint of the domain (ours included; filter with [`Participant::owns`]), those that existed
/// before it was created too.
pub struct Discovery {
    readers: Vec<dds_entity_t>,
    state: *const DiscoveryState,
    args: Vec<*mut ListenerArg>,
    _participant: Participant,
}

// SAFETY: the raw pointers are to a `DiscoveryState` (Send + Sync: Send + Sync closure and a
// Mutex) and to immutable `ListenerArg`s; they are only read, and freed in Drop after the
// readers that use them are deleted.
unsafe impl Send for Discovery {}
// SAFETY: as above.
unsafe impl Sync for Discovery {}

impl Discovery {
    /// Starts reporting discovery events to `on_event` (on CycloneDDS threads, possibly before
    /// this returns).
    pub fn new(
        participant: &Participant,
        on_event: impl Fn(DiscoveryEvent) + Send + Sync + 'static,
    ) -> Result<Discovery, DdsError> {
        let state = Box::into_raw(Box::new(DiscoveryState {
            on_event: Box::new(on_event),
            known: Mutex::new(HashMap::new()),
            deliver: Mutex::new(()),
        }));
        let mut disco = Discovery {
            readers: Vec::new(),
            state,
            args: Vec::new(),
            _participant: participant.clone(),
        };
        for (topic, publications) in [
            (cyclors::DDS_BUILTIN_TOPIC_DCPSPUBLICATION, true),
            (cyclors::DDS_BUILTIN_TOPIC_DCPSSUBSCRIPTION, false),
        ] {
            let arg = Box::into_raw(Box::new(ListenerArg {
                state,
                publications,
            }));
            disco.args.push(arg);
            // SAFETY: the listener only stores `arg`, valid until after the reader is deleted.
            let listener = unsafe { cyclors::dds_create_listener(arg as *mut c_void) };
            // SAFETY: valid listener; the callback has the expected C signature, never unwinds.
            unsafe { cyclors::dds_lset_data_available(listener, Some(on_builtin_data)) };
            // SAFETY: live participant; built-in topic pseudo handle; NULL qos = the built-in
            // readers' defaults (reliable, transient-local: existing endpoints are reported).
            let ret = unsafe {
                cyclors::dds_create_reader(participant.handle(), topic, std::ptr::null(), listener)
            };
            // SAFETY: copied by dds_create_reader; ours to delete once.
            unsafe { cyclors::dds_delete_listener(listener) };
            // On error `disco`'s Drop deletes what exists and frees the states.
            let reader = check("dds_create_reader(builtin)", ret)?;
            disco.readers.push(reader);
            // Endpoints known before the reader existed raised "data available" while it was
            // being created, before its listener was armed: no callback comes for those.
            // SAFETY: `state` is valid until Drop.
            take_all(reader, unsafe { &*state }, publications);
        }
        Ok(disco)
    }

    /// The endpoints alive now, as far as this `Discovery` has seen.
    pub fn endpoints(&self) -> Vec<Endpoint> {
        // SAFETY: `state` is valid for our lifetime (freed in Drop).
        let state = unsafe { &*self.state };
        state
            .known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }
}

impl Drop for Discovery {
    fn drop(&mut self) {
        let mut all_gone = true;
        for r in &self.readers {
            all_gone &= delete_entity("builtin reader", *r);
        }
        if !all_gone {
            return; // leak rather than free what a callback may still use
        }
        for a in &self.args {
            // SAFETY: from Box::into_raw in `new`; its reader is deleted (or was never
            // created), so no callback can use it; freed once.
            drop(unsafe { Box::from_raw(*a) });
        }
        // SAFETY: as above, for the shared state.
        drop(unsafe { Box::from_raw(self.state as *mut DiscoveryState) });
    }
}

unsafe extern "C" fn on_builtin_data(reader: dds_entity_t, arg: *mut c_void) {
    // SAFETY: `arg` is the ListenerArg given to dds_create_listener, valid while callbacks can
    // run; it points to a DiscoveryState with the same lifetime.
    let (state, publications) = unsafe {
        let a = &*(arg as *const ListenerArg);
        (&*a.state, a.publications)
    };
    let _ = catch_unwind(AssertUnwindSafe(|| take_all(reader, state, publications)));
}

fn take_all(reader: dds_entity_t, state: &DiscoveryState, publications: bool) {
    let _order = state.deliver.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let mut samples: [*mut c_void; BATCH] = [std::ptr::null_mut(); BATCH];
        // SAFETY: integers and a bool; all-zero is valid.
        let mut infos: [dds_sample_info_t; BATCH] = unsafe { std::mem::zeroed() };
        // SAFETY: live built-in reader; NULL entries ask CycloneDDS to loan sample memory,
        // returned below with dds_return_loan. Built-in topics have a real sertype, so loans
        // are fine here (unlike blob topics).
        let n = unsafe {
            cyclors::dds_take(
                reader,
                samples.as_mut_ptr(),
                infos.as_mut_ptr(),
                BATCH,
                BATCH as u32,
            )
        };
        if n <= 0 {
            return;
        }
        let n = n as usize;
        let mut events = Vec::with_capacity(n);
        for (s, info) in samples[..n].iter().zip(&infos[..n]) {
            if s.is_null() {
                continue;
            }
            // SAFETY: a loaned, initialised dds_builtintopic_endpoint_t (the key at least;
            // strings and qos may be NULL for an invalid sample, checked below).
            let ep = unsafe { &*(*s as *const dds_builtintopic_endpoint_t) };
            let alive =
                info.valid_data && info.instance_state == cyclors::dds_instance_state_DDS_IST_ALIVE;
            let mut known = state.known.lock().unwrap_or_else(|e| e.into_inner());
            if alive {
                let endpoint = Endpoint {
                    guid: ep.key.v,
                    participant_guid: ep.participant_key.v,
                    participant_instance_handle: ep.participant_instance_handle,
                    // SAFETY: NUL-terminated strings owned by the loan, or NULL.
                    topic_name: unsafe { opt_str(ep.topic_name) },
                    // SAFETY: as above.
                    type_name: unsafe { opt_str(ep.type_name) },
                    // SAFETY: qos owned by the loan, or NULL.
                    qos: unsafe { crate::qos::from_raw(ep.qos, publications) },
                    // SAFETY: as above.
                    user_data: unsafe { crate::qos::user_data(ep.qos) },
                    // SAFETY: `*s` is the loaned endpoint, valid until the loan is returned
                    // below; the type information is copied before that.
                    type_info: unsafe {
                        endpoint_type_info(*s as *mut dds_builtintopic_endpoint_t)
                    },
                    alive: true,
                };
                if known.get(&endpoint.guid) != Some(&endpoint) {
                    known.insert(endpoint.guid, endpoint.clone());
                    events.push(endpoint);
                }
            } else if let Some(mut endpoint) = known.remove(&ep.key.v) {
                endpoint.alive = false;
                events.push(endpoint);
            }
        }
        // SAFETY: returns the loan dds_take gave us, once, for the n samples.
        unsafe { cyclors::dds_return_loan(reader, samples.as_mut_ptr(), n as i32) };
        for e in events {
            let event = if publications {
                DiscoveryEvent::Publication(e)
            } else {
                DiscoveryEvent::Subscription(e)
            };
            if catch_unwind(AssertUnwindSafe(|| (state.on_event)(event))).is_err() {
                tracing::error!("roam-dds: a Discovery callback panicked; event dropped");
            }
        }
        if n < BATCH {
            return;
        }
    }
}

/// A copy of the XTypes type information a discovered endpoint announced.
///
/// # Safety
/// `ep` must be a valid endpoint sample for the duration of the call.
unsafe fn endpoint_type_info(ep: *mut dds_builtintopic_endpoint_t) -> Option<crate::TypeInfo> {
    let mut ti: *const cyclors::dds_typeinfo_t = std::ptr::null();
    // SAFETY: valid endpoint per the contract; `ti` is set to NULL or to type information
    // owned by the endpoint's qos.
    if unsafe { cyclors::dds_builtintopic_get_endpoint_type_info(ep, &mut ti) } < 0 {
        return None;
    }
    // SAFETY: NULL or valid while the endpoint is; copied here.
    unsafe { crate::TypeInfo::copy_from(ti) }
}

/// # Safety
/// `p` is NULL or a valid NUL-terminated string.
unsafe fn opt_str(p: *const std::os::raw::c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        // SAFETY: per the contract.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}
