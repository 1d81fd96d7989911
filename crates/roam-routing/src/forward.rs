//! The data path: RPF check, then fan-out to subscribed tree children, client links and
//! in-process subscribers. Every copy shares the same `Bytes`; nothing is allocated here
//! beyond the transmit queue's own growth.

use std::time::Instant;

use bytes::Bytes;
use roam_proto::envelope::peek_name;
use roam_proto::frame::Role;
use roam_proto::{Frame, Name, RouterId};

use crate::{Event, LinkId, Router};

impl Router {
    pub(crate) fn on_data(
        &mut self,
        now: Instant,
        link: LinkId,
        origin: RouterId,
        envelope: Bytes,
    ) {
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
            Role::Client => {
                self.keep_lingering(now, name);
                self.me
            }
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
    pub(crate) fn fan_out(
        &mut self,
        incoming: Option<LinkId>,
        origin: RouterId,
        name: Name,
        envelope: Bytes,
    ) {
        let Some(st) = self.subs.get(&name) else {
            self.count_no_route(incoming);
            return;
        };
        let tree = self.lsdb.tree(origin);
        let mut sent = 0u64;
        for &(l, _) in &st.routers {
            if Some(l) == incoming {
                continue;
            }
            if self.links.get(&l).is_some_and(|i| tree.has_child(i.peer)) {
                self.out.push(
                    l,
                    Frame::Data {
                        origin,
                        envelope: envelope.clone(),
                    },
                );
                sent += 1;
            }
        }
        for &l in &st.clients {
            if Some(l) != incoming {
                self.out.push(
                    l,
                    Frame::Data {
                        origin,
                        envelope: envelope.clone(),
                    },
                );
                sent += 1;
            }
        }
        self.stats.data_forwarded += sent;
        if st.local > 0 {
            self.stats.data_delivered_local += 1;
            self.events.push_back(Event::Deliver {
                name,
                origin,
                envelope,
            });
        } else if sent == 0 {
            self.count_no_route(incoming);
        }
    }

    /// A message nobody wanted: counted in total and against the link it came from.
    fn count_no_route(&mut self, incoming: Option<LinkId>) {
        self.stats.data_no_route += 1;
        if let Some(info) = incoming.and_then(|l| self.links.get_mut(&l)) {
            info.no_route += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use bytes::Bytes;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use roam_proto::frame::{Lsa, Role};
    use roam_proto::{Frame, Name};

    use crate::sim::{config, envelope};
    use crate::{Router, Transmit};

    /// Router 1 in a triangle with routers 2 (link 12) and 3 (link 13), plus client link 100.
    fn triangle(now: Instant) -> Router {
        let mut r = Router::new(config(1, 1), now);
        r.link_up(now, 12, Role::Router, 2);
        r.link_up(now, 13, Role::Router, 3);
        r.link_up(now, 100, Role::Client, 0);
        for (o, n) in [(2, vec![1, 3]), (3, vec![1, 2])] {
            r.handle_frame(
                now,
                12,
                Frame::Lsa(Lsa {
                    origin: o,
                    seq: 5,
                    lifetime_s: 60,
                    neighbours: n,
                }),
            );
        }
        while r.poll_transmit().is_some() {}
        r
    }

    fn drain(r: &mut Router) -> Vec<Transmit> {
        std::iter::from_fn(|| r.poll_transmit()).collect()
    }

    #[test]
    fn data_nobody_wants_is_counted_against_the_link_it_came_from() {
        let now = Instant::now();
        let mut r = triangle(now);
        r.link_up(now, 101, Role::Client, 0);
        for seq in 1..=3 {
            r.handle_data(now, 100, 0, envelope(Name([9; 32]), 1, seq));
        }
        r.handle_data(now, 101, 0, envelope(Name([8; 32]), 2, 1));
        assert!(drain(&mut r).is_empty());
        assert_eq!(r.stats().data_no_route, 4);
        assert_eq!((r.no_route_from(100), r.no_route_from(101)), (3, 1));
        assert_eq!(r.no_route_from(12), 0);
        // A link that went down holds no count; one that comes up starts from zero.
        r.link_down(now, 100);
        assert_eq!(r.no_route_from(100), 0);
        r.link_up(now, 100, Role::Client, 0);
        assert_eq!(r.no_route_from(100), 0);
    }

    #[test]
    fn rpf_accepts_only_the_parent_link() {
        let now = Instant::now();
        let mut r = triangle(now);
        let n = Name([4; 32]);
        r.handle_frame(now, 100, Frame::Subscribe(vec![n]));
        drain(&mut r);
        let env = envelope(n, 1, 1);
        // Origin 2's data must come from router 2, not via 3.
        r.handle_data(now, 13, 2, env.clone());
        assert_eq!(r.stats().data_rpf_drop, 1);
        assert!(drain(&mut r).is_empty());
        r.handle_data(now, 12, 2, env.clone());
        assert_eq!(
            drain(&mut r),
            vec![Transmit {
                link: 100,
                frame: Frame::Data {
                    origin: 2,
                    envelope: env.clone()
                }
            }]
        );
        // Our own id coming back from the mesh is a loop.
        r.handle_data(now, 12, 1, env);
        assert_eq!(r.stats().data_rpf_drop, 2);
    }

    #[test]
    fn data_is_shared_not_copied() {
        let now = Instant::now();
        let mut r = triangle(now);
        let n = Name([4; 32]);
        r.subscribe_local(now, n);
        r.handle_frame(now, 100, Frame::Subscribe(vec![n]));
        drain(&mut r);
        let env = envelope(n, 1, 1);
        r.handle_data(now, 12, 2, env.clone());
        let t = drain(&mut r);
        let Some(Transmit {
            frame: Frame::Data { envelope, .. },
            ..
        }) = t.first()
        else {
            panic!("no data sent")
        };
        assert_eq!(envelope.as_ptr(), env.as_ptr());
        assert!(matches!(
            r.poll_event(),
            Some(crate::Event::Deliver { origin: 2, .. })
        ));
    }

    /// Whether `t` floods the withdrawal of `n`.
    fn withdraws(t: &[Transmit], n: Name) -> bool {
        t.iter().any(
            |t| matches!(&t.frame, Frame::Advertise(a) if a.iter().any(|a| a.name == n && a.withdrawn)),
        )
    }

    #[test]
    fn a_quit_publishers_late_data_keeps_its_name_advertised() {
        // The client's unpublish overtook its last messages (control goes first): each of
        // them, however late, keeps the name until a linger (500 ms here) after it.
        let t0 = Instant::now();
        let ms = std::time::Duration::from_millis;
        let mut r = triangle(t0);
        let n = Name([5; 32]);
        r.handle_frame(t0, 12, Frame::Subscribe(vec![n]));
        r.handle_frame(t0, 100, Frame::Publish(vec![n]));
        drain(&mut r);
        r.handle_frame(t0, 100, Frame::Unpublish(vec![n]));
        assert!(!withdraws(&drain(&mut r), n));
        for late in [400, 800, 1200] {
            r.handle_timeout(t0 + ms(late));
            r.handle_data(t0 + ms(late), 100, 0, envelope(n, 1, late));
            let t = drain(&mut r);
            assert!(!withdraws(&t, n), "withdrawn before the data at {late} ms");
            assert!(
                t.iter()
                    .any(|t| t.link == 12 && matches!(t.frame, Frame::Data { .. })),
                "the data at {late} ms was not forwarded"
            );
        }
        r.handle_timeout(t0 + ms(1600));
        assert!(
            !withdraws(&drain(&mut r), n),
            "withdrawn 400 ms after the last data"
        );
        r.handle_timeout(t0 + ms(1750));
        assert!(
            withdraws(&drain(&mut r), n),
            "not withdrawn after the linger"
        );
    }

    #[test]
    fn an_in_process_publishers_draining_backlog_keeps_its_name_advertised() {
        let t0 = Instant::now();
        let ms = std::time::Duration::from_millis;
        let mut r = triangle(t0);
        let n = Name([7; 32]);
        r.handle_frame(t0, 12, Frame::Subscribe(vec![n]));
        r.publish_local(t0, n);
        r.unpublish_local(t0, n);
        drain(&mut r);
        r.handle_timeout(t0 + ms(400));
        r.send_local(t0 + ms(400), n, envelope(n, 1, 1));
        r.handle_timeout(t0 + ms(800));
        assert!(
            !withdraws(&drain(&mut r), n),
            "withdrawn 400 ms after the last data"
        );
        r.handle_timeout(t0 + ms(950));
        assert!(
            withdraws(&drain(&mut r), n),
            "not withdrawn after the linger"
        );
    }

    #[test]
    fn a_quit_publishers_name_is_withdrawn_after_the_linger_without_data() {
        let t0 = Instant::now();
        let mut r = triangle(t0);
        let n = Name([6; 32]);
        r.handle_frame(t0, 100, Frame::Publish(vec![n]));
        r.handle_frame(t0, 100, Frame::Unpublish(vec![n]));
        drain(&mut r);
        r.handle_timeout(t0 + std::time::Duration::from_millis(600));
        assert!(withdraws(&drain(&mut r), n));
    }

    #[test]
    fn malformed_and_misplaced_data_is_dropped() {
        let now = Instant::now();
        let mut r = triangle(now);
        let n = Name([4; 32]);
        r.handle_frame(now, 100, Frame::Subscribe(vec![n]));
        drain(&mut r);
        let good = envelope(n, 1, 1);
        let mut bad_version = good.to_vec();
        bad_version[0] = 9;
        for env in [
            Bytes::new(),
            Bytes::from_static(&[1; 10]),
            Bytes::from(bad_version),
            good.slice(..40),
        ] {
            r.handle_data(now, 12, 2, env.clone());
            r.handle_frame(
                now,
                100,
                Frame::Data {
                    origin: u64::MAX,
                    envelope: env,
                },
            );
        }
        assert_eq!(r.stats().data_malformed, 8);
        // Links that are down or never existed.
        r.handle_data(now, 999, 2, good.clone());
        r.link_down(now, 13);
        r.handle_data(now, 13, 3, good);
        assert_eq!(r.stats().data_unknown_link, 2);
        assert!(drain(&mut r).iter().all(|t| !t.frame.is_data()));
    }

    #[test]
    fn random_frames_never_panic() {
        let now = Instant::now();
        let mut r = triangle(now);
        let mut rng = SmallRng::seed_from_u64(77);
        for i in 0..20_000u64 {
            let link = [12, 13, 100, 5000][rng.gen_range(0..4)];
            let name = Name([rng.gen_range(0..4u8); 32]);
            let frame = match rng.gen_range(0..9) {
                0 => Frame::Lsa(Lsa {
                    origin: rng.gen_range(0..6),
                    seq: rng.gen(),
                    lifetime_s: rng.gen(),
                    neighbours: (0..rng.gen_range(0..5))
                        .map(|_| rng.gen_range(0..6))
                        .collect(),
                }),
                1 => Frame::Advertise(vec![roam_proto::frame::Advert {
                    name,
                    origin: rng.gen_range(0..6),
                    seq: rng.gen(),
                    lifetime_s: rng.gen(),
                    withdrawn: rng.gen(),
                }]),
                2 => Frame::Subscribe(vec![name]),
                3 => Frame::Unsubscribe(vec![name]),
                4 => Frame::Publish(vec![name]),
                5 => Frame::Unpublish(vec![name]),
                6 => Frame::Query {
                    id: rng.gen_range(0..50),
                    ttl: rng.gen(),
                    name,
                },
                7 => Frame::Hello {
                    version: 1,
                    role: Role::Router,
                    id: 2,
                    name: String::new(),
                },
                _ => Frame::Data {
                    origin: rng.gen_range(0..6),
                    envelope: envelope(name, 1, i),
                },
            };
            r.handle_frame(now + std::time::Duration::from_millis(i), link, frame);
            if i % 1000 == 0 {
                r.handle_timeout(now + std::time::Duration::from_millis(i));
            }
            drain(&mut r);
            while r.poll_event().is_some() {}
        }
    }
}
