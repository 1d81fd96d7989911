//! Link-state database of the router mesh and the per-origin shortest-path trees.
//!
//! An edge A-B exists only when both A's and B's newest LSAs list each other, so a half-up
//! link (or a stale LSA) never attracts traffic. Every router with the same LSDB computes the
//! same tree for an origin: BFS with unit cost, and among equal-distance parents the smallest
//! [`RouterId`] wins.

use std::collections::VecDeque;
use std::time::Instant;

use roam_proto::frame::Lsa;
use roam_proto::RouterId;

use crate::hash::{Map, Seeded};

/// This router's place in one origin's tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Tree {
    /// Whether the origin and this router are connected.
    pub reachable: bool,
    /// The RPF neighbour: data from the origin must arrive from it.
    pub parent: Option<RouterId>,
    /// Neighbours that take the origin's data from this router (sorted).
    pub children: Vec<RouterId>,
}

impl Tree {
    pub fn has_child(&self, id: RouterId) -> bool {
        self.children.binary_search(&id).is_ok()
    }
}

static UNREACHABLE: Tree = Tree {
    reachable: false,
    parent: None,
    children: Vec::new(),
};

struct Entry {
    seq: u64,
    lifetime_s: u32,
    /// Sorted and deduplicated, so edge checks are binary searches.
    neighbours: Vec<RouterId>,
    expires: Option<Instant>,
}

/// What [`Lsdb::insert`] did with an LSA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Insert {
    /// Not newer than what we hold: drop, do not flood.
    Stale,
    /// Newer: flood it on.
    Newer,
}

pub(crate) struct Lsdb {
    me: RouterId,
    entries: Map<RouterId, Entry>,
    adj: Map<RouterId, Vec<RouterId>>,
    trees: Map<RouterId, Tree>,
    dirty: bool,
    /// The graph changed since [`Lsdb::take_changed`] last looked.
    changed: bool,
    hasher: Seeded,
}

impl Lsdb {
    pub fn new(me: RouterId, hasher: Seeded) -> Self {
        Self {
            me,
            entries: Map::with_hasher(hasher),
            adj: Map::with_hasher(hasher),
            trees: Map::with_hasher(hasher),
            dirty: true,
            changed: false,
            hasher,
        }
    }

    /// Installs this router's own LSA; it never expires (it is refreshed instead).
    pub fn set_own(&mut self, seq: u64, lifetime_s: u32, neighbours: &[RouterId]) {
        let mut n = neighbours.to_vec();
        n.sort_unstable();
        n.dedup();
        self.entries.insert(
            self.me,
            Entry {
                seq,
                lifetime_s,
                neighbours: n,
                expires: None,
            },
        );
        self.dirty = true;
    }

    /// Whether `peer`'s newest LSA names a neighbour other than this router: whether data
    /// sent to it may go on to others (`None`: no LSA from it yet).
    pub fn has_others(&self, peer: RouterId) -> Option<bool> {
        let e = self.entries.get(&peer)?;
        Some(e.neighbours.iter().any(|n| *n != self.me))
    }

    /// Stores a received LSA if it is newer than what we hold for its origin.
    pub fn insert(&mut self, now: Instant, lsa: &Lsa) -> Insert {
        if lsa.origin == self.me {
            return Insert::Stale;
        }
        if let Some(e) = self.entries.get(&lsa.origin) {
            if e.seq >= lsa.seq {
                return Insert::Stale;
            }
        }
        let mut n = lsa.neighbours.clone();
        n.sort_unstable();
        n.dedup();
        let expires = now.checked_add(std::time::Duration::from_secs(lsa.lifetime_s.into()));
        let changed = self
            .entries
            .get(&lsa.origin)
            .is_none_or(|e| e.neighbours != n);
        self.entries.insert(
            lsa.origin,
            Entry {
                seq: lsa.seq,
                lifetime_s: lsa.lifetime_s,
                neighbours: n,
                expires,
            },
        );
        self.dirty |= changed;
        Insert::Newer
    }

    /// Drops LSAs whose lifetime ended without a refresh.
    pub fn expire(&mut self, now: Instant) {
        let before = self.entries.len();
        self.entries
            .retain(|_, e| e.expires.is_none_or(|t| t > now));
        self.dirty |= self.entries.len() != before;
    }

    /// Every LSA held, own included, as frames (lifetimes as originally announced).
    pub fn all(&self) -> impl Iterator<Item = Lsa> + '_ {
        self.entries.iter().map(|(&origin, e)| Lsa {
            origin,
            seq: e.seq,
            lifetime_s: e.lifetime_s,
            neighbours: e.neighbours.clone(),
        })
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Rebuilds the adjacency if any LSA changed; true if the graph itself changed, in which
    /// case every cached tree is dropped.
    pub fn settle(&mut self) -> bool {
        if !self.dirty {
            return false;
        }
        self.dirty = false;
        let mut adj: Map<RouterId, Vec<RouterId>> = Map::with_hasher(self.hasher);
        for (&a, e) in &self.entries {
            for &b in &e.neighbours {
                if b == a {
                    continue;
                }
                let mutual = self
                    .entries
                    .get(&b)
                    .is_some_and(|eb| eb.neighbours.binary_search(&a).is_ok());
                if mutual {
                    adj.entry(a).or_default().push(b);
                }
            }
        }
        // Entries iterate in hash order but each list comes from one sorted neighbour list.
        if adj == self.adj {
            return false;
        }
        self.adj = adj;
        self.trees.clear();
        self.changed = true;
        true
    }

    /// Whether the graph changed since the last call (settling pending LSA changes first).
    pub fn take_changed(&mut self) -> bool {
        self.settle();
        std::mem::take(&mut self.changed)
    }

    /// Whether `origin` is connected to this router in the current graph.
    pub fn reachable(&mut self, origin: RouterId) -> bool {
        origin == self.me || self.tree(origin).reachable
    }

    /// This router's place in `origin`'s shortest-path tree (cached until the graph changes).
    pub fn tree(&mut self, origin: RouterId) -> &Tree {
        if self.dirty {
            self.settle();
        }
        if origin != self.me && !self.entries.contains_key(&origin) {
            // Not cached: data or adverts naming made-up origins must not grow the cache.
            return &UNREACHABLE;
        }
        if !self.trees.contains_key(&origin) {
            let t = self.compute(origin);
            self.trees.insert(origin, t);
        }
        // Just inserted if it was missing.
        &self.trees[&origin]
    }

    fn compute(&self, origin: RouterId) -> Tree {
        let mut dist: Map<RouterId, u32> = Map::with_hasher(self.hasher);
        let mut q = VecDeque::new();
        dist.insert(origin, 0);
        q.push_back(origin);
        while let Some(u) = q.pop_front() {
            let d = dist.get(&u).copied().unwrap_or(0);
            for &v in self.adj.get(&u).map(Vec::as_slice).unwrap_or(&[]) {
                if let std::collections::hash_map::Entry::Vacant(e) = dist.entry(v) {
                    e.insert(d + 1);
                    q.push_back(v);
                }
            }
        }
        let Some(&dme) = dist.get(&self.me) else {
            return Tree::default();
        };
        let parent_of = |v: RouterId, dv: u32| -> Option<RouterId> {
            self.adj
                .get(&v)?
                .iter()
                .copied()
                .filter(|u| dv > 0 && dist.get(u) == Some(&(dv - 1)))
                .min()
        };
        let parent = parent_of(self.me, dme);
        let mut children = Vec::new();
        for &v in self.adj.get(&self.me).map(Vec::as_slice).unwrap_or(&[]) {
            if dist.get(&v) == Some(&(dme + 1)) && parent_of(v, dme + 1) == Some(self.me) {
                children.push(v);
            }
        }
        children.sort_unstable();
        Tree {
            reachable: true,
            parent,
            children,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lsa(origin: RouterId, seq: u64, n: &[RouterId]) -> Lsa {
        Lsa {
            origin,
            seq,
            lifetime_s: 60,
            neighbours: n.to_vec(),
        }
    }

    /// An LSDB as seen by `me` for an undirected edge list.
    fn db(me: RouterId, edges: &[(RouterId, RouterId)]) -> Lsdb {
        let now = Instant::now();
        let mut nodes: Map<RouterId, Vec<RouterId>> = Map::with_hasher(Seeded(0));
        for &(a, b) in edges {
            nodes.entry(a).or_default().push(b);
            nodes.entry(b).or_default().push(a);
        }
        let mut l = Lsdb::new(me, Seeded(9));
        for (&o, n) in &nodes {
            if o == me {
                l.set_own(1, 60, n);
            } else {
                l.insert(now, &lsa(o, 1, n));
            }
        }
        l
    }

    #[test]
    fn a_peer_linked_to_this_router_alone_has_no_others() {
        let now = Instant::now();
        let mut l = Lsdb::new(1, Seeded(0));
        l.set_own(1, 60, &[2, 3]);
        assert_eq!(l.has_others(2), None, "no LSA from it yet");
        l.insert(now, &lsa(2, 1, &[1]));
        assert_eq!(l.has_others(2), Some(false), "a proxy linked to us alone");
        l.insert(now, &lsa(3, 1, &[1, 4]));
        assert_eq!(
            l.has_others(3),
            Some(true),
            "a router with another neighbour"
        );
        l.insert(now, &lsa(2, 2, &[1, 5]));
        assert_eq!(l.has_others(2), Some(true), "its newest LSA counts");
        l.insert(now, &lsa(2, 3, &[]));
        assert_eq!(l.has_others(2), Some(false), "a peer that lost its links");
    }

    #[test]
    fn one_sided_edge_does_not_count() {
        let now = Instant::now();
        let mut l = Lsdb::new(1, Seeded(0));
        l.set_own(1, 60, &[2]);
        l.insert(now, &lsa(2, 1, &[]));
        assert!(!l.reachable(2));
        l.insert(now, &lsa(2, 2, &[1]));
        assert!(l.reachable(2));
        assert_eq!(l.tree(2).parent, Some(2));
    }

    #[test]
    fn older_lsa_is_stale() {
        let now = Instant::now();
        let mut l = Lsdb::new(1, Seeded(0));
        assert_eq!(l.insert(now, &lsa(2, 5, &[1])), Insert::Newer);
        assert_eq!(l.insert(now, &lsa(2, 5, &[1])), Insert::Stale);
        assert_eq!(l.insert(now, &lsa(2, 4, &[])), Insert::Stale);
        assert_eq!(l.insert(now, &lsa(1, 99, &[])), Insert::Stale);
    }

    #[test]
    fn square_ties_break_to_smallest_id() {
        // 1 - 2 - 4 and 1 - 3 - 4: from 1, node 4 has parents 2 and 3 at equal distance.
        let e = [(1, 2), (1, 3), (2, 4), (3, 4)];
        let mut at4 = db(4, &e);
        assert_eq!(at4.tree(1).parent, Some(2));
        let mut at2 = db(2, &e);
        assert_eq!(at2.tree(1).children, vec![4]);
        let mut at3 = db(3, &e);
        assert!(at3.tree(1).children.is_empty());
        assert_eq!(at3.tree(1).parent, Some(1));
        let mut at1 = db(1, &e);
        assert_eq!(at1.tree(1).children, vec![2, 3]);
        assert_eq!(at1.tree(1).parent, None);
    }

    #[test]
    fn chain_and_partition() {
        let e = [(1, 2), (2, 3)];
        let mut at2 = db(2, &e);
        assert_eq!(
            at2.tree(1),
            &Tree {
                reachable: true,
                parent: Some(1),
                children: vec![3]
            }
        );
        assert_eq!(
            at2.tree(3),
            &Tree {
                reachable: true,
                parent: Some(3),
                children: vec![1]
            }
        );
        assert!(!at2.reachable(7));
        assert!(
            !at2.trees.contains_key(&7),
            "unknown origins are not cached"
        );
        // Router 3 drops the edge: the graph changes once, trees are recomputed.
        at2.insert(Instant::now(), &lsa(3, 2, &[]));
        assert!(at2.settle());
        assert!(!at2.settle());
        assert!(!at2.reachable(3));
        assert!(at2.tree(1).children.is_empty());
    }

    #[test]
    fn expiry_removes_entries_but_not_own() {
        let now = Instant::now();
        let mut l = Lsdb::new(1, Seeded(0));
        l.set_own(1, 60, &[2]);
        l.insert(
            now,
            &Lsa {
                origin: 2,
                seq: 1,
                lifetime_s: 10,
                neighbours: vec![1],
            },
        );
        assert!(l.reachable(2));
        l.expire(now + std::time::Duration::from_secs(11));
        assert_eq!(l.len(), 1);
        assert!(!l.reachable(2));
    }
}
