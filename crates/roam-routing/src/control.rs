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
        let Some(info) = self.links.get(&link).copied() else { return };
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

    fn on_subscribe(&mut self, now: Instant, link: LinkId, from_router: bool, names: &[Name], add: bool) {
        let expires_s = self.now_s(now).saturating_add(secs(self.cfg.sub_lifetime));
        for &n in names {
            let changed = match (from_router, add) {
                (true, true) => self.subs.add_router(n, link, expires_s),
                (true, false) => self.subs.remove_router(&n, link),
                (false, true) => self.subs.add_client(n, link),
                (false, false) => self.subs.remove_client(&n, link),
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
            ads.extend(if add { self.add_publisher(now, n, who) } else { self.remove_publisher(now, n, who) });
            self.recompute(now, n);
        }
        self.flood_adverts(&ads, None);
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
                    self.out.push(l, Frame::Query { id, ttl: ttl - 1, name });
                }
            }
        }
    }

    pub(crate) fn on_timeout(&mut self, now: Instant) {
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
            let ads: Vec<Advert> = chunk.iter().map(|&n| self.originate_advert(now, n, false)).collect();
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
