//! Per-topic back-pressure in the router runtime: reliable data that finds its link's lane
//! full waits here, in order, while its topic is paused (see [`crate::pause`]).

use std::collections::VecDeque;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use tokio::sync::mpsc::error::TrySendError;

use roam_proto::Name;
use tracing::warn;

use super::{Command, LinkId, LocalId, Runtime};
use crate::lane::Pushed;
use crate::link::{is_best_effort, is_keep_latest, wire_size};

pub(super) struct Stall {
    pub(super) frames: std::collections::VecDeque<roam_proto::Frame>,
    pub(super) bytes: usize,
    /// The topic's publisher keeps only its newest samples: once the lane is full again the
    /// topic stays held back, with nothing queued here (see [`Runtime::hold_back`]).
    pub(super) keep_latest: bool,
}

/// Bytes a stall may hold beyond the full lane: what was already in the router's inbound
/// channel or in readers' hands when the topic paused. Past it, messages are dropped (counted).
const MAX_STALL_BYTES: usize = 256 << 20;

impl Runtime {
    /// Sends a frame on a link. Reliable data that finds its lane full waits in a stall and
    /// pauses its topic (see [`crate::pause`]) instead of being dropped.
    pub(super) fn transmit(&mut self, link: LinkId, frame: roam_proto::Frame) {
        let Some(l) = self.links.get(&link) else {
            return;
        };
        let reliable = match &frame {
            roam_proto::Frame::Data { envelope, .. } if !is_best_effort(envelope) => {
                roam_proto::envelope::peek_name(envelope).map(|n| (n, is_keep_latest(envelope)))
            }
            _ => None,
        };
        let Some((name, keep_latest)) = reliable else {
            l.tx.send(frame);
            return;
        };
        if let Some(stall) = self.stalls.get_mut(&(link, name)) {
            // Keep order: nothing overtakes what is already waiting.
            let size = wire_size(&frame);
            if stall.bytes + size > MAX_STALL_BYTES {
                l.tx.stats().dropped_full.fetch_add(1, Ordering::Relaxed);
            } else {
                stall.bytes += size;
                stall.frames.push_back(frame);
            }
            return;
        }
        let size = wire_size(&frame);
        if l.tx.0.send_reliable(frame.clone()) == Pushed::Refused {
            l.tx.stats().stalls.fetch_add(1, Ordering::Relaxed);
            let mut frames = std::collections::VecDeque::new();
            frames.push_back(frame);
            self.stalls.insert(
                (link, name),
                Stall {
                    frames,
                    bytes: size,
                    keep_latest,
                },
            );
            self.pauses.pause(name);
            self.wait_for_room(link, name);
        } else if keep_latest && !l.tx.0.has_space(name) {
            self.hold_back(link, name);
        }
    }

    /// Pauses a keep-latest topic whose lane toward `link` has just filled, before it refuses
    /// a sample: the topic's next sample then waits at its publisher, where a newer one can
    /// still replace it, instead of here behind the full lane (where it would be older by a
    /// whole lane's worth of sending when it leaves). Resumes when the lane has room.
    fn hold_back(&mut self, link: LinkId, name: Name) {
        self.stalls.insert(
            (link, name),
            Stall {
                frames: VecDeque::new(),
                bytes: 0,
                keep_latest: true,
            },
        );
        self.pauses.pause(name);
        self.wait_for_room(link, name);
    }

    fn wait_for_room(&self, link: LinkId, name: Name) {
        let Some(l) = self.links.get(&link) else {
            return;
        };
        let (tx, cmd, timeout) = (l.tx.clone(), self.cmd.clone(), self.stall_timeout);
        tokio::spawn(async move {
            let gave_up = tokio::time::timeout(timeout, tx.wait_space(name))
                .await
                .is_err();
            let _ = cmd
                .send(Command::Unstall {
                    link,
                    name,
                    gave_up,
                })
                .await;
        });
    }

    /// Moves a stall's frames into its lane as room allows; resumes the topic once no stall
    /// holds it. A lane that stayed full for `stall_timeout` (a subscriber that stopped
    /// reading) loses what waited, counted as `dropped_full`, so it cannot hold the topic up
    /// for everyone else forever.
    pub(super) fn unstall(&mut self, link: LinkId, name: Name, gave_up: bool) {
        let Some(mut stall) = self.stalls.remove(&(link, name)) else {
            return;
        };
        if let Some(l) = self.links.get(&link) {
            if gave_up {
                l.tx.stats()
                    .dropped_full
                    .fetch_add(stall.frames.len() as u64, Ordering::Relaxed);
                warn!(peer = %l.peer.name, "a subscriber link stayed full for {:?}: dropped {} messages", self.stall_timeout, stall.frames.len());
                stall.frames.clear();
            }
            while let Some(f) = stall.frames.pop_front() {
                let size = wire_size(&f);
                if l.tx.0.send_reliable(f.clone()) == Pushed::Refused {
                    stall.frames.push_front(f);
                    break;
                }
                stall.bytes -= size;
            }
            if !stall.frames.is_empty() {
                self.stalls.insert((link, name), stall);
                self.wait_for_room(link, name);
                return;
            }
            if stall.keep_latest && !gave_up && !l.tx.0.has_space(name) {
                self.hold_back(link, name);
                return;
            }
        }
        self.resume_if_unstalled(name);
    }

    /// Resumes a paused topic once nothing waits for room on its behalf.
    pub(super) fn resume_if_unstalled(&self, name: Name) {
        if !self.stalls.keys().any(|(_, n)| *n == name)
            && !self.local_stalls.keys().any(|(n, _)| *n == name)
        {
            self.pauses.resume(name);
        }
    }

    /// Hands an envelope to every in-process subscriber of `name` (e.g. a proxy's importer, a
    /// gateway's clients). A reliable envelope that finds a subscriber's queue full waits
    /// for it, in order, and pauses the topic like a full lane does, so the back-pressure
    /// reaches the publisher instead of losing data.
    pub(super) fn deliver_local(&mut self, name: Name, envelope: Bytes) {
        let subs: Vec<(LocalId, crate::envelope_queue::QueueSender)> =
            self.local.subscribers(&name).to_vec();
        for (id, tx) in subs {
            let env = envelope.clone();
            if let Some(st) = self.local_stalls.get_mut(&(name, id)) {
                if st.bytes + env.len() > MAX_STALL_BYTES {
                    self.local_dropped += 1;
                } else {
                    st.bytes += env.len();
                    st.queue.push_back(env);
                }
                continue;
            }
            match tx.try_send(env) {
                Ok(()) => {}
                Err(TrySendError::Full(env)) if !is_best_effort(&env) => {
                    let mut queue = VecDeque::new();
                    let bytes = env.len();
                    queue.push_back(env);
                    self.local_stalls
                        .insert((name, id), LocalStall { queue, bytes });
                    self.pauses.pause(name);
                    self.wait_for_local_room(name, id);
                }
                Err(_) => self.local_dropped += 1,
            }
        }
    }

    fn wait_for_local_room(&self, name: Name, id: LocalId) {
        let Some(tx) = self.local.subscriber(&name, id).cloned() else {
            return;
        };
        let next = self
            .local_stalls
            .get(&(name, id))
            .and_then(|st| st.queue.front())
            .map_or(0, |e| e.len());
        let (cmd, timeout) = (self.cmd.clone(), self.stall_timeout);
        tokio::spawn(async move {
            // Only the runtime sends on `tx`: room seen here is still there when it drains.
            let gave_up = !matches!(
                tokio::time::timeout(timeout, tx.wait_room(next)).await,
                Ok(Ok(_))
            );
            let _ = cmd.send(Command::LocalUnstall { name, id, gave_up }).await;
        });
    }

    /// Moves waiting envelopes to an in-process subscriber as room allows. One that stayed
    /// full for `stall_timeout` (stopped reading) loses what waited, counted.
    pub(super) fn local_unstall(&mut self, name: Name, id: LocalId, gave_up: bool) {
        let Some(mut st) = self.local_stalls.remove(&(name, id)) else {
            return;
        };
        match self.local.subscriber(&name, id) {
            Some(tx) if !gave_up => {
                while let Some(env) = st.queue.pop_front() {
                    let len = env.len();
                    match tx.try_send(env) {
                        Ok(()) => st.bytes -= len,
                        Err(TrySendError::Full(env)) => {
                            st.queue.push_front(env);
                            break;
                        }
                        Err(TrySendError::Closed(_)) => {
                            self.local_dropped += 1 + st.queue.len() as u64;
                            st.queue.clear();
                        }
                    }
                }
                if !st.queue.is_empty() {
                    self.local_stalls.insert((name, id), st);
                    self.wait_for_local_room(name, id);
                    return;
                }
            }
            _ => {
                if !st.queue.is_empty() {
                    warn!(
                        "an in-process subscriber stayed full for {:?}: dropped {} messages",
                        self.stall_timeout,
                        st.queue.len()
                    );
                }
                self.local_dropped += st.queue.len() as u64;
            }
        }
        self.resume_if_unstalled(name);
    }
}

/// Reliable envelopes waiting for an in-process subscriber's queue.
pub(super) struct LocalStall {
    pub(super) queue: VecDeque<Bytes>,
    pub(super) bytes: usize,
}
