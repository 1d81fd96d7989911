//! The data path: RPF check, then fan-out to subscribed tree children, client links and
//! in-process subscribers. Every copy shares the same `Bytes`; nothing is allocated here
//! beyond the transmit queue's own growth.

use bytes::Bytes;
use roam_proto::envelope::peek_name;
use roam_proto::frame::Role;
use roam_proto::{Frame, Name, RouterId};

use crate::{Event, LinkId, Router};

impl Router {
    pub(crate) fn on_data(&mut self, link: LinkId, origin: RouterId, envelope: Bytes) {
        self.stats.data_in += 1;
        let Some(info) = self.links.get(&link).copied() else {
            self.stats.data_unknown_link += 1;
            return;
        };
        let Some(name) = peek_name(&envelope) else {
            self.stats.data_malformed += 1;
            return;
        };
        let origin = match info.role {
            // Clients cannot speak for other routers: their data originates here.
            Role::Client => self.me,
            Role::Router => {
                // Only the reverse path to the origin is accepted, so in a mesh with cycles
                // each router takes every message exactly once.
                if origin == self.me || self.lsdb.tree(origin).parent != Some(info.peer) {
                    self.stats.data_rpf_drop += 1;
                    return;
                }
                origin
            }
        };
        self.fan_out(Some(link), origin, name, envelope);
    }

    /// Sends data from `origin` on to whoever wants it here, except back on `incoming`.
    pub(crate) fn fan_out(&mut self, incoming: Option<LinkId>, origin: RouterId, name: Name, envelope: Bytes) {
        let Some(st) = self.subs.get(&name) else {
            self.stats.data_no_route += 1;
            return;
        };
        let tree = self.lsdb.tree(origin);
        let mut sent = 0u64;
        for &(l, _) in &st.routers {
            if Some(l) == incoming {
                continue;
            }
            if self.links.get(&l).is_some_and(|i| tree.has_child(i.peer)) {
                self.out.push(l, Frame::Data { origin, envelope: envelope.clone() });
                sent += 1;
            }
        }
        for &l in &st.clients {
            if Some(l) != incoming {
                self.out.push(l, Frame::Data { origin, envelope: envelope.clone() });
                sent += 1;
            }
        }
        self.stats.data_forwarded += sent;
        if st.local > 0 {
            self.stats.data_delivered_local += 1;
            self.events.push_back(Event::Deliver { name, origin, envelope });
        } else if sent == 0 {
            self.stats.data_no_route += 1;
        }
    }
}
