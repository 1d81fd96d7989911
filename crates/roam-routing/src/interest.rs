//! Interest: which upstream links we subscribe a name on, pending names, and demand for the
//! names this router publishes.
//!
//! `need(N, O)`: this router wants N itself, or a router link subscribed to N is one of our
//! children in O's tree. For every live, reachable origin O with `need(N, O)` we subscribe N
//! on the link to our parent in O's tree. Subscriptions are per name, not per origin; the
//! data path filters by tree children, so a link subscribed for one origin never gets another
//! origin's data unless it is a child in that origin's tree too.

use std::time::Instant;

use roam_proto::Name;

use crate::{Event, LinkId, Router};

impl Router {
    /// Brings upstream subscriptions, pending state and demand for `name` up to date.
    pub(crate) fn recompute(&mut self, now: Instant, name: Name) {
        let now_s = self.now_s(now);
        let me = self.me;
        let Some(st) = self.subs.get(&name) else {
            self.update_demand(name);
            return;
        };
        let wants_here = st.wants_here();
        let mut desired: Vec<LinkId> = Vec::new();
        let mut any_origin = false;
        for o in self.rib.origins(&name) {
            if !o.is_live(now_s) {
                continue;
            }
            if o.origin == me {
                any_origin = true;
                continue;
            }
            let tree = self.lsdb.tree(o.origin);
            if !tree.reachable {
                continue;
            }
            any_origin = true;
            let links = &self.links;
            let need = wants_here
                || st.routers.iter().any(|(l, _)| links.get(l).is_some_and(|i| tree.has_child(i.peer)));
            if !need {
                continue;
            }
            if let Some(l) = tree.parent.and_then(|p| self.router_links.get(&p).copied()) {
                if !desired.contains(&l) {
                    desired.push(l);
                }
            }
        }
        let pending = wants_here && !any_origin;
        let mut query = false;
        if let Some(st) = self.subs.get_mut(&name) {
            for &l in &desired {
                if !st.upstream.contains(&l) {
                    self.out.subscribe(l, name);
                }
            }
            for &l in &st.upstream {
                if !desired.contains(&l) {
                    self.out.unsubscribe(l, name);
                }
            }
            st.upstream = desired;
            query = pending && !st.pending;
            st.pending = pending;
        }
        if query {
            self.send_query(name);
        }
        self.subs.tidy(&name);
        self.update_demand(name);
    }

    /// Tells our publishers of `name` whether anyone wants it from this router.
    fn update_demand(&mut self, name: Name) {
        if !self.published.contains_key(&name) {
            return;
        }
        let me = self.me;
        let st = self.subs.get(&name);
        let local = st.is_some_and(|s| s.local > 0);
        let tree = self.lsdb.tree(me);
        let links = &self.links;
        let routers = st.is_some_and(|s| {
            s.routers.iter().any(|(l, _)| links.get(l).is_some_and(|i| tree.has_child(i.peer)))
        });
        let Some(p) = self.published.get_mut(&name) else { return };
        for (link, wanted) in p.clients.iter_mut() {
            // A client that subscribes to its own name is not an audience for itself.
            let w = local || routers || st.is_some_and(|s| s.clients.iter().any(|c| c != link));
            if w != *wanted {
                *wanted = w;
                if w {
                    self.out.subscribe(*link, name);
                } else {
                    self.out.unsubscribe(*link, name);
                }
            }
        }
        if p.local > 0 {
            let w = local || routers || st.is_some_and(|s| !s.clients.is_empty());
            if w != p.local_wanted {
                p.local_wanted = w;
                self.events.push_back(Event::Demand { name, wanted: w });
            }
        }
    }
}
