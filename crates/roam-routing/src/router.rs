//! See the crate documentation. Public API skeleton; the implementation fills these in.

use std::time::{Duration, Instant};

use bytes::Bytes;
use roam_proto::frame::Role;
use roam_proto::{Frame, Name, RouterId};

/// The shell's handle for one link (assigned by the shell, never reused while up).
pub type LinkId = u32;

#[derive(Debug, Clone)]
pub struct Config {
    pub router_id: RouterId,
    /// First LSA/advert sequence number; the shell passes wall-clock microseconds so a
    /// restarted router's announcements supersede its previous life's.
    pub initial_seq: u64,
    pub lsa_refresh: Duration,
    pub lsa_lifetime: Duration,
    pub advert_refresh: Duration,
    pub advert_lifetime: Duration,
    pub sub_refresh: Duration,
    pub sub_lifetime: Duration,
    pub query_ttl: u8,
}

/// A frame to send on a link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    pub link: LinkId,
    pub frame: Frame,
}

/// Something for the in-process endpoints of this router.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Data for a name that an in-process subscriber ([`Router::subscribe_local`]) wants.
    Deliver { name: Name, origin: RouterId, envelope: Bytes },
    /// Whether anyone (remote or another local endpoint) now wants a name this router's
    /// in-process publisher ([`Router::publish_local`]) publishes.
    Demand { name: Name, wanted: bool },
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub data_in: u64,
    pub data_forwarded: u64,
    pub data_delivered_local: u64,
    /// Data for a name nobody wants here.
    pub data_no_route: u64,
    /// Data that arrived on a link other than the reverse path to its origin (dropped).
    pub data_rpf_drop: u64,
    pub frames_control_in: u64,
    pub names: u64,
    pub routers_known: u64,
}

pub struct Router {
    _private: (),
}

impl Router {
    pub fn new(config: Config, now: Instant) -> Self {
        let _ = (config, now);
        todo!()
    }
    pub fn id(&self) -> RouterId {
        todo!()
    }
    pub fn link_up(&mut self, now: Instant, link: LinkId, role: Role, peer: RouterId) {
        let _ = (now, link, role, peer);
        todo!()
    }
    pub fn link_down(&mut self, now: Instant, link: LinkId) {
        let _ = (now, link);
        todo!()
    }
    /// Any frame received on `link` (control or data).
    pub fn handle_frame(&mut self, now: Instant, link: LinkId, frame: Frame) {
        let _ = (now, link, frame);
        todo!()
    }
    /// The data fast path: no allocation beyond pushing transmits.
    pub fn handle_data(&mut self, now: Instant, link: LinkId, origin: RouterId, envelope: Bytes) {
        let _ = (now, link, origin, envelope);
        todo!()
    }
    pub fn publish_local(&mut self, now: Instant, name: Name) {
        let _ = (now, name);
        todo!()
    }
    pub fn unpublish_local(&mut self, now: Instant, name: Name) {
        let _ = (now, name);
        todo!()
    }
    pub fn subscribe_local(&mut self, now: Instant, name: Name) {
        let _ = (now, name);
        todo!()
    }
    pub fn unsubscribe_local(&mut self, now: Instant, name: Name) {
        let _ = (now, name);
        todo!()
    }
    /// Data from an in-process publisher; this router is its origin.
    pub fn send_local(&mut self, now: Instant, name: Name, envelope: Bytes) {
        let _ = (now, name, envelope);
        todo!()
    }
    pub fn handle_timeout(&mut self, now: Instant) {
        let _ = now;
        todo!()
    }
    pub fn poll_timeout(&self) -> Option<Instant> {
        todo!()
    }
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        todo!()
    }
    pub fn poll_event(&mut self) -> Option<Event> {
        todo!()
    }
    pub fn stats(&self) -> Stats {
        todo!()
    }
}
