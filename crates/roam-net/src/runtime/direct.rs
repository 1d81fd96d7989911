//! Routing on the caller's thread.
//!
//! The routing core sits behind a lock, and whoever brings it a message routes it there and
//! then: a link's reader with the frame it read, a DDS listener thread with the envelope it
//! sealed. Each message then wakes only the task that takes it on (a lane's writer, an
//! in-process subscriber), not the routing loop first: a hop less on every side of a proxy
//! and in every router (`bench/results/profile-echo.md`: a hop and its scheduling are a few
//! per cent of the CPU of a round trip, and a wake-up of latency each).
//!
//! The routing loop ([`super::routing_loop::run`]) keeps what needs a task: its timers, and the commands
//! and link inputs sent to it. Order is kept with one count: whatever is sent to the loop is
//! counted until the loop has carried it out, and while anything is, a caller queues behind
//! it instead of routing itself, so nothing a caller sends overtakes what it sent before.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use tokio::sync::Notify;

use super::Runtime;
use crate::inbound::RouteHere;
pub(crate) use crate::inbound::{Queue, Routed};
use crate::link::{LinkId, LinkInput};

/// The routing core, shared by the loop and every caller.
pub(crate) struct Direct {
    runtime: Mutex<Option<Runtime>>,
    /// Commands and link inputs sent to the loop and not yet carried out.
    queued: Arc<AtomicUsize>,
    /// Woken when a caller's message set a routing timer earlier than the loop sleeps to.
    pub(super) timer_moved: Notify,
    /// Spawns from threads outside the runtime (a lane's first message starts its writer).
    tokio: tokio::runtime::Handle,
}

impl Direct {
    pub(super) fn new(runtime: Runtime, queued: Arc<AtomicUsize>) -> Self {
        Self {
            runtime: Mutex::new(Some(runtime)),
            queued,
            timer_moved: Notify::new(),
            tokio: tokio::runtime::Handle::current(),
        }
    }

    /// The core, for the loop (`None` once stopped).
    pub(super) fn lock(&self) -> MutexGuard<'_, Option<Runtime>> {
        self.runtime.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The loop carried out `n` of what was sent to it. Called with the lock held, so a caller
    /// that finds the count at zero knows the loop has nothing of its own left to do first.
    pub(super) fn carried_out(&self, n: usize) {
        self.queued.fetch_sub(n, Ordering::SeqCst);
    }

    /// Routes `msg` with `route` on this thread, unless the loop has something to do first.
    pub(super) fn route<T>(
        &self,
        msg: T,
        route: impl FnOnce(&mut Runtime, T, Instant),
    ) -> Routed<T> {
        let _in_runtime = self.tokio.enter();
        let mut guard = self.lock();
        let Some(rt) = guard.as_mut() else {
            return Routed::Stopped;
        };
        if self.queued.load(Ordering::SeqCst) != 0 {
            return Routed::Queue(msg);
        }
        route(rt, msg, Instant::now());
        rt.flush();
        if rt.timer_moved_earlier() {
            self.timer_moved.notify_one();
        }
        Routed::Done
    }
}

impl RouteHere for Direct {
    fn input(&self, link: LinkId, input: LinkInput) -> Routed<LinkInput> {
        self.route(input, |rt, input, now| rt.input(link, input, now))
    }
}
