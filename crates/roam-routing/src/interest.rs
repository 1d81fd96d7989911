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
                || st
                    .routers
                    .iter()
                    .any(|(l, _)| links.get(l).is_some_and(|i| tree.has_child(i.peer)));
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
            s.routers
                .iter()
                .any(|(l, _)| links.get(l).is_some_and(|i| tree.has_child(i.peer)))
        });
        let Some(p) = self.published.get_mut(&name) else {
            return;
        };
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

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use roam_proto::frame::{Advert, Lsa, Role};
    use roam_proto::{Frame, Name};

    use crate::sim::config;
    use crate::{Event, Router, Transmit};

    const N: Name = Name([3; 32]);

    fn drain(r: &mut Router) -> Vec<Transmit> {
        std::iter::from_fn(|| r.poll_transmit()).collect()
    }

    #[test]
    fn client_publisher_is_not_its_own_audience() {
        let now = Instant::now();
        let mut r = Router::new(config(1, 1), now);
        r.link_up(now, 1, Role::Client, 0);
        r.link_up(now, 2, Role::Client, 0);
        r.handle_frame(now, 1, Frame::Publish(vec![N]));
        r.handle_frame(now, 1, Frame::Subscribe(vec![N]));
        assert!(drain(&mut r).is_empty());
        r.handle_frame(now, 2, Frame::Subscribe(vec![N]));
        assert_eq!(
            drain(&mut r),
            vec![Transmit {
                link: 1,
                frame: Frame::Subscribe(vec![N])
            }]
        );
        r.link_down(now, 2);
        assert_eq!(
            drain(&mut r),
            vec![Transmit {
                link: 1,
                frame: Frame::Unsubscribe(vec![N])
            }]
        );
    }

    #[test]
    fn demand_follows_tree_children_only() {
        let now = Instant::now();
        let mut r = Router::new(config(1, 1), now);
        crate::sim::add_neighbour(&mut r, now, 12, 2);
        r.publish_local(now, N);
        drain(&mut r);
        assert_eq!(r.poll_event(), None);
        r.handle_frame(now, 12, Frame::Subscribe(vec![N]));
        assert_eq!(
            r.poll_event(),
            Some(Event::Demand {
                name: N,
                wanted: true
            })
        );
        // Router 2 loses the edge: it is no longer our child, so it is no audience.
        r.handle_frame(
            now,
            12,
            Frame::Lsa(Lsa {
                origin: 2,
                seq: 2,
                lifetime_s: 60,
                neighbours: vec![],
            }),
        );
        assert_eq!(
            r.poll_event(),
            Some(Event::Demand {
                name: N,
                wanted: false
            })
        );
        r.unpublish_local(now, N);
        assert_eq!(r.poll_event(), None);
        // The withdrawal waits for the linger, so data already in flight is delivered.
        assert!(!drain(&mut r)
            .iter()
            .any(|t| matches!(&t.frame, Frame::Advertise(_))));
        let later = now + std::time::Duration::from_secs(1);
        assert_eq!(
            r.poll_timeout(),
            Some(now + std::time::Duration::from_millis(500))
        );
        r.handle_timeout(later);
        let t = drain(&mut r);
        assert!(t
            .iter()
            .any(|t| matches!(&t.frame, Frame::Advertise(a) if a[0].withdrawn)));
    }

    #[test]
    fn parent_change_moves_the_subscription() {
        // 1 - 2 - 4 and 1 - 3 - 4: from origin 4, our parent is 2 until the 2-4 edge goes.
        let now = Instant::now();
        let mut r = Router::new(config(1, 1), now);
        r.link_up(now, 12, Role::Router, 2);
        r.link_up(now, 13, Role::Router, 3);
        let lsa = |o, s, n: Vec<u64>| {
            Frame::Lsa(Lsa {
                origin: o,
                seq: s,
                lifetime_s: 60,
                neighbours: n,
            })
        };
        r.handle_frame(now, 12, lsa(2, 1, vec![1, 4]));
        r.handle_frame(now, 13, lsa(3, 1, vec![1, 4]));
        r.handle_frame(now, 12, lsa(4, 1, vec![2, 3]));
        r.handle_frame(
            now,
            12,
            Frame::Advertise(vec![Advert {
                name: N,
                origin: 4,
                seq: 1,
                lifetime_s: 60,
                withdrawn: false,
            }]),
        );
        r.subscribe_local(now, N);
        assert!(drain(&mut r).contains(&Transmit {
            link: 12,
            frame: Frame::Subscribe(vec![N])
        }));
        r.handle_frame(now, 12, lsa(4, 2, vec![3]));
        let t = drain(&mut r);
        assert!(t.contains(&Transmit {
            link: 12,
            frame: Frame::Unsubscribe(vec![N])
        }));
        assert!(t.contains(&Transmit {
            link: 13,
            frame: Frame::Subscribe(vec![N])
        }));
        assert_eq!(r.parent_of(4), Some(3));
    }
}
