//! Control frames (LSAs, adverts, subscriptions, queries) and the periodic timers.

use std::time::Instant;

use roam_proto::frame::{Advert, Lsa, Role};
use roam_proto::{Frame, Name};

use crate::lsdb::Insert;
use crate::outbox::MAX_BATCH;
use crate::rib::Applied;
use crate::router::{secs, Source};
use crate::{LinkId, Router};

impl Router {
    pub(crate) fn on_control(&mut self, now: Instant, link: LinkId, frame: Frame) {
        let Some(info) = self.links.get(&link).copied() else {
            return;
        };
        let from_router = info.role == Role::Router && info.peer != self.me;
        match frame {
            Frame::Lsa(lsa) if from_router => self.on_lsa(now, link, lsa),
            Frame::Advertise(ads) if from_router => self.on_adverts(now, link, &ads),
            Frame::Subscribe(names) => self.on_subscribe(now, link, from_router, &names, true),
            Frame::Unsubscribe(names) => self.on_subscribe(now, link, from_router, &names, false),
            Frame::Publish(names) if !from_router => self.on_publish(now, link, &names, true),
            Frame::Unpublish(names) if !from_router => self.on_publish(now, link, &names, false),
            Frame::Query { id, ttl, name } => self.on_query(now, link, id, ttl, name),
            // Hello is the shell's business; the rest is not valid on this kind of link.
            _ => {}
        }
    }

    fn on_lsa(&mut self, now: Instant, link: LinkId, lsa: Lsa) {
        if lsa.origin == self.me {
            // Our previous life's LSA is still around: jump past it so ours wins. Our own
            // current LSA echoes back through every cycle; that one is not news.
            if lsa.seq > self.lsa_seq {
                self.lsa_seq = lsa.seq;
                self.originate_lsa();
            }
            return;
        }
        if self.lsdb.insert(now, &lsa) == Insert::Newer {
            for &l in self.router_links.values() {
                if l != link {
                    self.out.push(l, Frame::Lsa(lsa.clone()));
                }
            }
        }
    }

    fn on_adverts(&mut self, now: Instant, link: LinkId, ads: &[Advert]) {
        let now_s = self.now_s(now);
        let mut flood = Vec::new();
        let mut changed = Vec::new();
        let mut own = Vec::new();
        for a in ads {
            if a.origin == self.me {
                own.extend(self.on_own_advert(now, a));
                continue;
            }
            if let Applied::Newer { live_changed } = self.rib.apply(now_s, a) {
                flood.push(*a);
                if live_changed {
                    changed.push(a.name);
                }
            }
        }
        self.flood_adverts(&flood, Some(link));
        self.flood_adverts(&own, None);
        for n in changed {
            self.recompute(now, n);
        }
    }

    /// An advert naming us as origin came back. If it is newer than ours it is from a previous
    /// life of this router: supersede it with the truth (live if we publish, else withdrawn).
    fn on_own_advert(&mut self, now: Instant, a: &Advert) -> Option<Advert> {
        self.advert_seq = self.advert_seq.max(a.seq);
        let ours = self.rib.seq_of(&a.name, self.me);
        if ours.is_some_and(|s| s >= a.seq) {
            return None;
        }
        let publishing = self.is_published(&a.name);
        if a.withdrawn && !publishing {
            return None;
        }
        Some(self.originate_advert(now, a.name, !publishing))
    }

    fn on_subscribe(
        &mut self,
        now: Instant,
        link: LinkId,
        from_router: bool,
        names: &[Name],
        add: bool,
    ) {
        let expires_s = self.now_s(now).saturating_add(secs(self.cfg.sub_lifetime));
        for &n in names {
            let changed = match (from_router, add) {
                (true, true) => self.subs.add_router(n, link, expires_s),
                (true, false) => self.subs.remove_router(&n, link),
                (false, true) => {
                    let known = self.subs.get(&n).is_some_and(|s| s.clients.contains(&link));
                    if !known && !self.take_name(link) {
                        continue;
                    }
                    let added = self.subs.add_client(n, link);
                    if !known && !added {
                        // The subscription table is full: nothing is held.
                        self.give_back_name(link);
                    }
                    added
                }
                (false, false) => {
                    let removed = self.subs.remove_client(&n, link);
                    if removed {
                        self.give_back_name(link);
                    }
                    removed
                }
            };
            if changed {
                self.recompute(now, n);
            }
        }
    }

    fn on_publish(&mut self, now: Instant, link: LinkId, names: &[Name], add: bool) {
        let mut ads = Vec::new();
        for &n in names {
            let who = Source::Client(link);
            let held = self
                .published
                .get(&n)
                .is_some_and(|p| p.clients.iter().any(|&(c, _)| c == link));
            if add {
                if !held && !self.take_name(link) {
                    continue;
                }
                ads.extend(self.add_publisher(now, n, who));
            } else {
                if held {
                    self.give_back_name(link);
                }
                ads.extend(self.remove_publisher(now, n, who));
            }
            self.recompute(now, n);
        }
        self.flood_adverts(&ads, None);
    }

    /// Counts one more name held by client `link`; false (and the refusal counted) when it
    /// holds its limit already.
    fn take_name(&mut self, link: LinkId) -> bool {
        let max = self.cfg.client_max_names;
        let Some(info) = self.links.get_mut(&link) else {
            return false;
        };
        if max > 0 && info.names >= max {
            info.names_refused += 1;
            return false;
        }
        info.names += 1;
        true
    }

    fn give_back_name(&mut self, link: LinkId) {
        if let Some(info) = self.links.get_mut(&link) {
            info.names = info.names.saturating_sub(1);
        }
    }

    fn on_query(&mut self, now: Instant, link: LinkId, id: u64, ttl: u8, name: Name) {
        let now_s = self.now_s(now);
        let known: Vec<Advert> = self.rib.live_adverts(&name, now_s).collect();
        if !known.is_empty() {
            self.out.adverts(link, &known);
            return;
        }
        if ttl > 1 && self.remember_query(id) {
            for &l in self.router_links.values() {
                if l != link {
                    self.out.push(
                        l,
                        Frame::Query {
                            id,
                            ttl: ttl - 1,
                            name,
                        },
                    );
                }
            }
        }
    }

    pub(crate) fn on_timeout(&mut self, now: Instant) {
        self.withdraw_lingering(now);
        if now >= self.next_lsa {
            self.next_lsa = now + self.cfg.lsa_refresh;
            self.originate_lsa();
        }
        if now >= self.next_advert {
            self.next_advert = now + self.cfg.advert_refresh;
            self.refresh_adverts(now);
        }
        if now >= self.next_sub {
            self.next_sub = now + self.cfg.sub_refresh;
            self.refresh_subscriptions();
        }
        if now >= self.next_sweep {
            self.next_sweep = now + self.cfg.sweep_interval();
            self.sweep(now);
        }
    }

    /// Re-announces every name we publish with a new sequence number.
    fn refresh_adverts(&mut self, now: Instant) {
        let names: Vec<Name> = self.published.keys().copied().collect();
        for chunk in names.chunks(MAX_BATCH) {
            let ads: Vec<Advert> = chunk
                .iter()
                .map(|&n| self.originate_advert(now, n, false))
                .collect();
            self.flood_adverts(&ads, None);
        }
    }

    /// Re-sends our upstream subscriptions (they are soft state upstream) and re-queries
    /// names that still have no origin.
    fn refresh_subscriptions(&mut self) {
        for (link, names) in self.subs.upstream_by_link() {
            for chunk in names.chunks(MAX_BATCH) {
                self.out.push(link, Frame::Subscribe(chunk.to_vec()));
            }
        }
        for n in self.subs.pending() {
            self.send_query(n);
        }
    }

    fn sweep(&mut self, now: Instant) {
        let now_s = self.now_s(now);
        self.lsdb.expire(now);
        let mut changed = Vec::new();
        self.rib.sweep(now_s, &mut changed);
        self.subs.sweep(now_s, &mut changed);
        for n in changed {
            self.recompute(now, n);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use roam_proto::frame::{Advert, Lsa, Role};
    use roam_proto::{Frame, Name};

    use crate::sim::{add_neighbour, config};
    use crate::{Router, Transmit};

    const N: Name = Name([9; 32]);

    fn drain(r: &mut Router) -> Vec<Transmit> {
        std::iter::from_fn(|| r.poll_transmit()).collect()
    }

    /// Router 1 with router neighbours 2 (link 12) and 3 (link 13), edges confirmed.
    fn router(now: Instant) -> Router {
        let mut r = Router::new(config(1, 1), now);
        add_neighbour(&mut r, now, 12, 2);
        add_neighbour(&mut r, now, 13, 3);
        drain(&mut r);
        r
    }

    fn advert(origin: u64, seq: u64, withdrawn: bool) -> Advert {
        Advert {
            name: N,
            origin,
            seq,
            lifetime_s: 60,
            withdrawn,
        }
    }

    #[test]
    fn a_client_holds_at_most_its_limit_of_names_and_gets_room_back() {
        let now = Instant::now();
        let mut cfg = config(1, 1);
        cfg.client_max_names = 3;
        let mut r = Router::new(cfg, now);
        r.link_up(now, 100, Role::Client, 0);
        r.link_up(now, 101, Role::Client, 0);
        let name = |i: u8| Name([i; 32]);
        r.handle_frame(now, 100, Frame::Subscribe(vec![name(1), name(2)]));
        // Subscribing again to a name it holds takes no room.
        r.handle_frame(now, 100, Frame::Subscribe(vec![name(1)]));
        r.handle_frame(now, 100, Frame::Publish(vec![name(3), name(4), name(5)]));
        assert_eq!(r.names_held_by(100), 3);
        assert_eq!(r.names_refused_from(100), 2);
        assert!(
            !r.published.contains_key(&name(4)),
            "a refused publication is held"
        );
        // Its neighbour's room is its own.
        r.handle_frame(now, 101, Frame::Subscribe(vec![name(4), name(5), name(6)]));
        assert_eq!((r.names_held_by(101), r.names_refused_from(101)), (3, 0));
        // Letting a name go makes room for another; unknown names give nothing back.
        r.handle_frame(now, 100, Frame::Unsubscribe(vec![name(2), name(9)]));
        r.handle_frame(now, 100, Frame::Unpublish(vec![name(8)]));
        assert_eq!(r.names_held_by(100), 2);
        r.handle_frame(now, 100, Frame::Publish(vec![name(4)]));
        assert_eq!(r.names_held_by(100), 3);
        assert!(r.published.contains_key(&name(4)));
        // A link that comes up again starts from nothing.
        r.link_down(now, 100);
        r.link_up(now, 100, Role::Client, 0);
        assert_eq!((r.names_held_by(100), r.names_refused_from(100)), (0, 0));
        // Router links have no such limit.
        add_neighbour(&mut r, now, 12, 2);
        let many: Vec<Name> = (10..20).map(name).collect();
        r.handle_frame(now, 12, Frame::Subscribe(many));
        assert_eq!(r.names_refused_from(12), 0);
    }

    #[test]
    fn new_router_link_gets_lsdb_and_adverts() {
        let now = Instant::now();
        let mut r = router(now);
        r.handle_frame(now, 12, Frame::Advertise(vec![advert(2, 1, false)]));
        drain(&mut r);
        r.link_up(now, 14, Role::Router, 4);
        let t = drain(&mut r);
        let to4: Vec<&Frame> = t
            .iter()
            .filter(|t| t.link == 14)
            .map(|t| &t.frame)
            .collect();
        let lsas = to4.iter().filter(|f| matches!(f, Frame::Lsa(_))).count();
        assert_eq!(lsas, 3, "own LSA plus those of 2 and 3");
        assert!(to4
            .iter()
            .any(|f| matches!(f, Frame::Advertise(a) if a[0] == advert(2, 1, false))));
    }

    #[test]
    fn pending_interest_queries_then_subscribes() {
        let now = Instant::now();
        let mut r = router(now);
        r.subscribe_local(now, N);
        let t = drain(&mut r);
        assert_eq!(
            t.iter()
                .filter(|t| matches!(
                    t.frame,
                    Frame::Query {
                        ttl: 16,
                        name: N,
                        ..
                    }
                ))
                .count(),
            2
        );
        r.handle_frame(now, 12, Frame::Advertise(vec![advert(2, 1, false)]));
        let t = drain(&mut r);
        assert!(t.contains(&Transmit {
            link: 12,
            frame: Frame::Subscribe(vec![N])
        }));
        // The advert is flooded on, not back.
        assert!(t
            .iter()
            .any(|t| t.link == 13 && matches!(t.frame, Frame::Advertise(_))));
        assert!(!t
            .iter()
            .any(|t| t.link == 12 && matches!(t.frame, Frame::Advertise(_))));
        // Withdrawal: unsubscribe upstream, pending again.
        r.handle_frame(now, 12, Frame::Advertise(vec![advert(2, 2, true)]));
        let t = drain(&mut r);
        assert!(t.contains(&Transmit {
            link: 12,
            frame: Frame::Unsubscribe(vec![N])
        }));
        // An old live advert cannot resurrect the withdrawn name.
        r.handle_frame(now, 13, Frame::Advertise(vec![advert(2, 1, false)]));
        assert!(!r.has_route(now, &N));
        assert!(drain(&mut r).is_empty());
    }

    #[test]
    fn queries_are_answered_or_forwarded_once() {
        let now = Instant::now();
        let mut r = router(now);
        r.handle_frame(
            now,
            12,
            Frame::Query {
                id: 7,
                ttl: 3,
                name: N,
            },
        );
        assert_eq!(
            drain(&mut r),
            vec![Transmit {
                link: 13,
                frame: Frame::Query {
                    id: 7,
                    ttl: 2,
                    name: N
                }
            }]
        );
        r.handle_frame(
            now,
            13,
            Frame::Query {
                id: 7,
                ttl: 3,
                name: N,
            },
        );
        assert!(drain(&mut r).is_empty(), "seen id is not forwarded again");
        r.handle_frame(
            now,
            12,
            Frame::Query {
                id: 8,
                ttl: 1,
                name: N,
            },
        );
        assert!(drain(&mut r).is_empty(), "ttl exhausted");
        r.handle_frame(now, 12, Frame::Advertise(vec![advert(2, 1, false)]));
        drain(&mut r);
        r.handle_frame(
            now,
            13,
            Frame::Query {
                id: 9,
                ttl: 3,
                name: N,
            },
        );
        let t = drain(&mut r);
        assert_eq!(t.len(), 1);
        assert!(
            matches!(&t[0], Transmit { link: 13, frame: Frame::Advertise(a) } if a[0].origin == 2)
        );
    }

    #[test]
    fn query_dedupe_is_bounded() {
        let now = Instant::now();
        let mut r = router(now);
        for id in 0..100_000u64 {
            r.handle_frame(
                now,
                12,
                Frame::Query {
                    id,
                    ttl: 2,
                    name: N,
                },
            );
        }
        drain(&mut r);
        assert!(r.seen_order.len() <= super::super::router::MAX_SEEN_QUERIES);
    }

    #[test]
    fn stale_own_lsa_from_previous_life_is_superseded() {
        let now = Instant::now();
        let mut r = router(now);
        r.handle_frame(
            now,
            12,
            Frame::Lsa(Lsa {
                origin: 1,
                seq: 500,
                lifetime_s: 60,
                neighbours: vec![],
            }),
        );
        let t = drain(&mut r);
        assert!(t
            .iter()
            .any(|t| matches!(&t.frame, Frame::Lsa(l) if l.origin == 1 && l.seq == 501)));
        // The echo of our current LSA is not news.
        r.handle_frame(
            now,
            13,
            Frame::Lsa(Lsa {
                origin: 1,
                seq: 501,
                lifetime_s: 60,
                neighbours: vec![2, 3],
            }),
        );
        assert!(drain(&mut r).is_empty());
    }

    #[test]
    fn router_subscriptions_lapse_without_refresh() {
        let now = Instant::now();
        let mut r = router(now);
        r.handle_frame(now, 12, Frame::Subscribe(vec![N]));
        assert_eq!(r.stats().subscribed_names, 1);
        let mut t = now;
        while t < now + Duration::from_secs(60) {
            t += Duration::from_secs(5);
            r.handle_timeout(t);
        }
        assert_eq!(r.stats().subscribed_names, 0);
    }

    #[test]
    fn refresh_batches_adverts() {
        let now = Instant::now();
        let mut r = router(now);
        for i in 0..3000u32 {
            let mut n = [0u8; 32];
            n[..4].copy_from_slice(&i.to_le_bytes());
            r.publish_local(now, Name(n));
        }
        drain(&mut r);
        r.handle_timeout(now + Duration::from_secs(10));
        let t = drain(&mut r);
        let ads: Vec<usize> = t
            .iter()
            .filter(|t| t.link == 12)
            .filter_map(|t| match &t.frame {
                Frame::Advertise(a) => Some(a.len()),
                _ => None,
            })
            .collect();
        assert_eq!(ads, vec![1024, 1024, 952]);
    }
}
