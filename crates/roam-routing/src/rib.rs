//! The name RIB: for each name, the origin routers that advertised it.
//!
//! Per (name, origin) the higher sequence number wins. Withdrawals stay as tombstones until
//! their lifetime ends so that an older advert still in flight cannot resurrect the name.
//! Times are whole seconds since the router started (`u32`), which keeps an entry at 24
//! bytes; almost every name has exactly one origin, stored inline.

use roam_proto::frame::Advert;
use roam_proto::{Name, RouterId};

use crate::hash::{Map, Seeded};

/// One origin's advert for a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Origin {
    pub origin: RouterId,
    pub seq: u64,
    /// Seconds since router start when the advert lapses.
    pub expires_s: u32,
    pub withdrawn: bool,
}

impl Origin {
    pub fn is_live(&self, now_s: u32) -> bool {
        !self.withdrawn && self.expires_s > now_s
    }

    fn advert(&self, name: Name, now_s: u32) -> Advert {
        Advert {
            name,
            origin: self.origin,
            seq: self.seq,
            lifetime_s: self.expires_s.saturating_sub(now_s),
            withdrawn: self.withdrawn,
        }
    }
}

#[derive(Debug, Clone)]
enum Origins {
    One(Origin),
    Many(Vec<Origin>),
}

impl Origins {
    fn as_slice(&self) -> &[Origin] {
        match self {
            Origins::One(o) => std::slice::from_ref(o),
            Origins::Many(v) => v,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [Origin] {
        match self {
            Origins::One(o) => std::slice::from_mut(o),
            Origins::Many(v) => v,
        }
    }

    fn push(&mut self, o: Origin) {
        match self {
            Origins::One(first) => *self = Origins::Many(vec![*first, o]),
            Origins::Many(v) => v.push(o),
        }
    }

    /// Drops entries that are not wanted; false if none is left.
    fn retain(&mut self, mut keep: impl FnMut(&Origin) -> bool) -> bool {
        match self {
            Origins::One(o) => keep(o),
            Origins::Many(v) => {
                v.retain(|o| keep(o));
                match v.len() {
                    0 => false,
                    1 => {
                        *self = Origins::One(v[0]);
                        true
                    }
                    _ => true,
                }
            }
        }
    }
}

/// What [`Rib::apply`] did with an advert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Applied {
    /// Not newer than what we hold: drop, do not flood.
    Stale,
    /// Stored; flood it on. `live_changed`: whether the origin's liveness for the name flipped.
    Newer { live_changed: bool },
    /// The table is at its size limit and this is a new name: dropped.
    Full,
}

pub(crate) struct Rib {
    names: Map<Name, Origins>,
    max_names: usize,
}

impl Rib {
    pub fn new(hasher: Seeded, max_names: usize) -> Self {
        Self {
            names: Map::with_hasher(hasher),
            max_names,
        }
    }

    /// Stores `a` if it is newer than what we hold for (name, origin).
    pub fn apply(&mut self, now_s: u32, a: &Advert) -> Applied {
        let new = Origin {
            origin: a.origin,
            seq: a.seq,
            expires_s: now_s.saturating_add(a.lifetime_s),
            withdrawn: a.withdrawn,
        };
        match self.names.get_mut(&a.name) {
            Some(os) => {
                if let Some(o) = os.as_mut_slice().iter_mut().find(|o| o.origin == a.origin) {
                    if o.seq >= a.seq {
                        return Applied::Stale;
                    }
                    let was = o.is_live(now_s);
                    *o = new;
                    Applied::Newer {
                        live_changed: was != new.is_live(now_s),
                    }
                } else {
                    os.push(new);
                    Applied::Newer {
                        live_changed: new.is_live(now_s),
                    }
                }
            }
            None => {
                if self.names.len() >= self.max_names {
                    return Applied::Full;
                }
                self.names.insert(a.name, Origins::One(new));
                Applied::Newer {
                    live_changed: new.is_live(now_s),
                }
            }
        }
    }

    /// The newest sequence number held for (name, origin).
    pub fn seq_of(&self, name: &Name, origin: RouterId) -> Option<u64> {
        self.origins(name)
            .iter()
            .find(|o| o.origin == origin)
            .map(|o| o.seq)
    }

    pub fn origins(&self, name: &Name) -> &[Origin] {
        self.names.get(name).map(Origins::as_slice).unwrap_or(&[])
    }

    /// Live adverts for `name` with their remaining lifetimes (to answer a query).
    pub fn live_adverts(&self, name: &Name, now_s: u32) -> impl Iterator<Item = Advert> + '_ {
        let name = *name;
        self.origins(&name)
            .iter()
            .filter(move |o| o.is_live(now_s))
            .map(move |o| o.advert(name, now_s))
    }

    /// Every entry, tombstones included, with remaining lifetimes (for a new neighbour).
    pub fn all(&self, now_s: u32) -> impl Iterator<Item = Advert> + '_ {
        self.names.iter().flat_map(move |(&name, os)| {
            os.as_slice()
                .iter()
                .filter(move |o| o.expires_s > now_s)
                .map(move |o| o.advert(name, now_s))
        })
    }

    /// Removes lapsed entries; `changed` gets each name that lost a live origin.
    pub fn sweep(&mut self, now_s: u32, changed: &mut Vec<Name>) {
        self.names.retain(|name, os| {
            let mut lost_live = false;
            let keep = os.retain(|o| {
                let keep = o.expires_s > now_s;
                lost_live |= !keep && !o.withdrawn;
                keep
            });
            if lost_live {
                changed.push(*name);
            }
            keep
        });
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Approximate heap bytes: table slots (key, value, control byte) plus spilled origins.
    pub fn memory_estimate(&self) -> usize {
        let slot = std::mem::size_of::<(Name, Origins)>() + 1;
        let spilled: usize = self
            .names
            .values()
            .map(|os| match os {
                Origins::One(_) => 0,
                Origins::Many(v) => v.capacity() * std::mem::size_of::<Origin>(),
            })
            .sum();
        // hashbrown keeps capacity at a power of two of buckets, at most 7/8 full.
        let buckets = (self.names.capacity() * 8 / 7).next_power_of_two();
        buckets * slot + spilled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ad(n: u8, origin: RouterId, seq: u64, withdrawn: bool) -> Advert {
        Advert {
            name: Name([n; 32]),
            origin,
            seq,
            lifetime_s: 30,
            withdrawn,
        }
    }

    fn live(r: &Rib, n: u8, now_s: u32) -> Vec<RouterId> {
        r.origins(&Name([n; 32]))
            .iter()
            .filter(|o| o.is_live(now_s))
            .map(|o| o.origin)
            .collect()
    }

    #[test]
    fn newer_wins_per_origin() {
        let mut r = Rib::new(Seeded(0), 100);
        assert_eq!(
            r.apply(0, &ad(1, 10, 5, false)),
            Applied::Newer { live_changed: true }
        );
        assert_eq!(r.apply(0, &ad(1, 10, 5, false)), Applied::Stale);
        assert_eq!(r.apply(0, &ad(1, 10, 4, true)), Applied::Stale);
        assert_eq!(
            r.apply(0, &ad(1, 10, 6, false)),
            Applied::Newer {
                live_changed: false
            }
        );
        assert_eq!(
            r.apply(0, &ad(1, 11, 1, false)),
            Applied::Newer { live_changed: true }
        );
        assert_eq!(live(&r, 1, 0), vec![10, 11]);
    }

    #[test]
    fn tombstone_blocks_resurrection_until_it_lapses() {
        let mut r = Rib::new(Seeded(0), 100);
        r.apply(0, &ad(1, 10, 5, false));
        assert_eq!(
            r.apply(0, &ad(1, 10, 6, true)),
            Applied::Newer { live_changed: true }
        );
        assert_eq!(r.apply(1, &ad(1, 10, 5, false)), Applied::Stale);
        assert!(live(&r, 1, 1).is_empty());
        let mut changed = Vec::new();
        r.sweep(31, &mut changed);
        // A lapsed tombstone is not a lost live origin.
        assert!(changed.is_empty());
        assert_eq!(r.len(), 0);
    }

    #[test]
    fn sweep_reports_lost_live_origins() {
        let mut r = Rib::new(Seeded(0), 100);
        r.apply(0, &ad(1, 10, 1, false));
        r.apply(20, &ad(1, 11, 1, false));
        let mut changed = Vec::new();
        r.sweep(30, &mut changed);
        assert_eq!(changed, vec![Name([1; 32])]);
        assert_eq!(live(&r, 1, 30), vec![11]);
    }

    #[test]
    fn full_table_refuses_new_names_only() {
        let mut r = Rib::new(Seeded(0), 1);
        r.apply(0, &ad(1, 10, 1, false));
        assert_eq!(r.apply(0, &ad(2, 10, 1, false)), Applied::Full);
        assert!(matches!(
            r.apply(0, &ad(1, 11, 1, false)),
            Applied::Newer { .. }
        ));
    }

    #[test]
    fn huge_lifetime_saturates() {
        let mut r = Rib::new(Seeded(0), 10);
        let mut a = ad(1, 10, 1, false);
        a.lifetime_s = u32::MAX;
        r.apply(100, &a);
        assert_eq!(r.live_adverts(&Name([1; 32]), 100).count(), 1);
    }

    #[test]
    fn entry_is_compact() {
        assert!(std::mem::size_of::<Origin>() <= 24);
        assert!(std::mem::size_of::<(Name, Origins)>() <= 64);
    }

    #[test]
    fn million_inserts_timing() {
        // Prints a figure for the report; no assertion on time.
        let n: u32 = if cfg!(debug_assertions) {
            200_000
        } else {
            1_000_000
        };
        let mut r = Rib::new(Seeded(3), usize::MAX);
        let t = std::time::Instant::now();
        for i in 0..n {
            let mut name = [0u8; 32];
            name[..4].copy_from_slice(&i.to_le_bytes());
            name[31] = 0x5a;
            r.apply(
                0,
                &Advert {
                    name: Name(name),
                    origin: 7,
                    seq: 1,
                    lifetime_s: 60,
                    withdrawn: false,
                },
            );
        }
        let ins = t.elapsed();
        let t = std::time::Instant::now();
        let mut found = 0usize;
        for i in 0..n {
            let mut name = [0u8; 32];
            name[..4].copy_from_slice(&i.to_le_bytes());
            name[31] = 0x5a;
            found += r.origins(&Name(name)).len();
        }
        let look = t.elapsed();
        assert_eq!(found, n as usize);
        println!(
            "rib: {n} inserts {:?} ({:?}/op), lookups {:?}/op, ~{} bytes/name",
            ins,
            ins / n,
            look / n,
            r.memory_estimate() / n as usize
        );
    }
}
