//! Frames waiting to be sent, with subscribe/unsubscribe batching.
//!
//! Control work often touches thousands of names at once (a topology change, a big
//! `Subscribe`); batching per link turns that into a few frames. Order per link is kept:
//! consecutive runs of the same kind become one frame each.

use std::collections::{BTreeMap, VecDeque};

use roam_proto::frame::Advert;
use roam_proto::{Frame, Name};

use crate::{LinkId, Transmit};

/// Names or adverts per frame; bounds frame size (1024 adverts is about 58 KB).
pub(crate) const MAX_BATCH: usize = 1024;

#[derive(Default)]
pub(crate) struct Outbox {
    queue: VecDeque<Transmit>,
    /// Per link, names to (un)subscribe, `true` = subscribe, in order.
    names: BTreeMap<LinkId, Vec<(Name, bool)>>,
}

impl Outbox {
    pub fn push(&mut self, link: LinkId, frame: Frame) {
        self.queue.push_back(Transmit { link, frame });
    }

    pub fn subscribe(&mut self, link: LinkId, name: Name) {
        self.names.entry(link).or_default().push((name, true));
    }

    pub fn unsubscribe(&mut self, link: LinkId, name: Name) {
        self.names.entry(link).or_default().push((name, false));
    }

    /// Drops batched names for a link that went down.
    pub fn forget(&mut self, link: LinkId) {
        self.names.remove(&link);
    }

    /// Queues `Advertise` frames for `adverts` on `link`.
    pub fn adverts(&mut self, link: LinkId, adverts: &[Advert]) {
        for chunk in adverts.chunks(MAX_BATCH) {
            self.push(link, Frame::Advertise(chunk.to_vec()));
        }
    }

    /// Turns batched names into frames.
    pub fn flush(&mut self) {
        for (link, items) in std::mem::take(&mut self.names) {
            let mut run: Vec<Name> = Vec::new();
            let mut kind = true;
            for (name, sub) in items {
                if (sub != kind && !run.is_empty()) || run.len() >= MAX_BATCH {
                    let names = std::mem::take(&mut run);
                    self.queue.push_back(Transmit {
                        link,
                        frame: names_frame(kind, names),
                    });
                }
                kind = sub;
                run.push(name);
            }
            if !run.is_empty() {
                self.queue.push_back(Transmit {
                    link,
                    frame: names_frame(kind, run),
                });
            }
        }
    }

    pub fn pop(&mut self) -> Option<Transmit> {
        self.queue.pop_front()
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.queue.len()
    }
}

fn names_frame(subscribe: bool, names: Vec<Name>) -> Frame {
    if subscribe {
        Frame::Subscribe(names)
    } else {
        Frame::Unsubscribe(names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_keep_order_per_link() {
        let mut o = Outbox::default();
        let (a, b) = (Name([1; 32]), Name([2; 32]));
        o.subscribe(1, a);
        o.subscribe(1, b);
        o.unsubscribe(1, a);
        o.subscribe(2, a);
        o.flush();
        let got: Vec<_> = std::iter::from_fn(|| o.pop()).collect();
        assert_eq!(
            got,
            vec![
                Transmit {
                    link: 1,
                    frame: Frame::Subscribe(vec![a, b])
                },
                Transmit {
                    link: 1,
                    frame: Frame::Unsubscribe(vec![a])
                },
                Transmit {
                    link: 2,
                    frame: Frame::Subscribe(vec![a])
                },
            ]
        );
    }

    #[test]
    fn big_batches_are_split() {
        let mut o = Outbox::default();
        for i in 0..(MAX_BATCH + 5) {
            let mut n = [0u8; 32];
            n[..8].copy_from_slice(&(i as u64).to_le_bytes());
            o.subscribe(1, Name(n));
        }
        o.flush();
        assert_eq!(o.len(), 2);
        let ads = vec![
            Advert {
                name: Name([0; 32]),
                origin: 1,
                seq: 1,
                lifetime_s: 1,
                withdrawn: false
            };
            MAX_BATCH * 2 + 1
        ];
        o.adverts(3, &ads);
        assert_eq!(o.len(), 5);
    }
}
