//! Per-name subscription state: who wants a name here, and where we asked for it upstream.
//!
//! Only names with some interest have an entry. Router-link subscriptions are soft state that
//! lapses unless the downstream router refreshes it; client and in-process subscriptions last
//! until withdrawn or the link goes down.

use std::collections::BTreeMap;

use roam_proto::Name;

use crate::hash::{Map, Seeded};
use crate::LinkId;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct NameState {
    /// In-process subscribers (counted).
    pub local: u32,
    /// Client links subscribed.
    pub clients: Vec<LinkId>,
    /// Router links subscribed, with the second at which each subscription lapses.
    pub routers: Vec<(LinkId, u32)>,
    /// Router links we sent `Subscribe` for this name on.
    pub upstream: Vec<LinkId>,
    /// Interest without any live origin: queried, waiting for an advert.
    pub pending: bool,
}

impl NameState {
    /// Whether this router itself (not a downstream router) wants the name.
    pub fn wants_here(&self) -> bool {
        self.local > 0 || !self.clients.is_empty()
    }

    fn is_empty(&self) -> bool {
        !self.wants_here() && self.routers.is_empty() && self.upstream.is_empty() && !self.pending
    }
}

pub(crate) struct Subs {
    names: Map<Name, NameState>,
    max_names: usize,
}

impl Subs {
    pub fn new(hasher: Seeded, max_names: usize) -> Self {
        Self {
            names: Map::with_hasher(hasher),
            max_names,
        }
    }

    pub fn get(&self, name: &Name) -> Option<&NameState> {
        self.names.get(name)
    }

    pub fn get_mut(&mut self, name: &Name) -> Option<&mut NameState> {
        self.names.get_mut(name)
    }

    /// The entry for `name`, created if there is room.
    fn entry(&mut self, name: Name) -> Option<&mut NameState> {
        if self.names.len() >= self.max_names && !self.names.contains_key(&name) {
            return None;
        }
        Some(self.names.entry(name).or_default())
    }

    /// Adds an in-process subscriber; true if this was the first one.
    pub fn add_local(&mut self, name: Name) -> bool {
        self.entry(name).is_some_and(|s| {
            s.local += 1;
            s.local == 1
        })
    }

    /// Removes an in-process subscriber; true if that was the last one.
    pub fn remove_local(&mut self, name: &Name) -> bool {
        let Some(s) = self.names.get_mut(name) else {
            return false;
        };
        if s.local == 0 {
            return false;
        }
        s.local -= 1;
        s.local == 0
    }

    /// True if the link was not subscribed before.
    pub fn add_client(&mut self, name: Name, link: LinkId) -> bool {
        self.entry(name).is_some_and(|s| {
            let new = !s.clients.contains(&link);
            if new {
                s.clients.push(link);
            }
            new
        })
    }

    pub fn remove_client(&mut self, name: &Name, link: LinkId) -> bool {
        let Some(s) = self.names.get_mut(name) else {
            return false;
        };
        let before = s.clients.len();
        s.clients.retain(|&l| l != link);
        s.clients.len() != before
    }

    /// Adds or refreshes a router-link subscription; true if it is new.
    pub fn add_router(&mut self, name: Name, link: LinkId, expires_s: u32) -> bool {
        self.entry(name)
            .is_some_and(|s| match s.routers.iter_mut().find(|(l, _)| *l == link) {
                Some(r) => {
                    r.1 = expires_s;
                    false
                }
                None => {
                    s.routers.push((link, expires_s));
                    true
                }
            })
    }

    pub fn remove_router(&mut self, name: &Name, link: LinkId) -> bool {
        let Some(s) = self.names.get_mut(name) else {
            return false;
        };
        let before = s.routers.len();
        s.routers.retain(|&(l, _)| l != link);
        s.routers.len() != before
    }

    /// Forgets everything involving `link`; `out` gets each name that changed.
    pub fn drop_link(&mut self, link: LinkId, out: &mut Vec<Name>) {
        for (name, s) in self.names.iter_mut() {
            let before = (s.clients.len(), s.routers.len(), s.upstream.len());
            s.clients.retain(|&l| l != link);
            s.routers.retain(|&(l, _)| l != link);
            s.upstream.retain(|&l| l != link);
            if before != (s.clients.len(), s.routers.len(), s.upstream.len()) {
                out.push(*name);
            }
        }
    }

    /// Drops router-link subscriptions that were not refreshed; `out` gets the names.
    pub fn sweep(&mut self, now_s: u32, out: &mut Vec<Name>) {
        for (name, s) in self.names.iter_mut() {
            let before = s.routers.len();
            s.routers.retain(|&(_, exp)| exp > now_s);
            if s.routers.len() != before {
                out.push(*name);
            }
        }
    }

    /// Removes the entry for `name` if nothing is left in it.
    pub fn tidy(&mut self, name: &Name) {
        if self.names.get(name).is_some_and(NameState::is_empty) {
            self.names.remove(name);
        }
    }

    pub fn names(&self) -> impl Iterator<Item = Name> + '_ {
        self.names.keys().copied()
    }

    /// For the periodic refresh: per upstream link, the names we subscribed there.
    pub fn upstream_by_link(&self) -> BTreeMap<LinkId, Vec<Name>> {
        let mut out: BTreeMap<LinkId, Vec<Name>> = BTreeMap::new();
        for (name, s) in &self.names {
            for &l in &s.upstream {
                out.entry(l).or_default().push(*name);
            }
        }
        out
    }

    pub fn pending(&self) -> Vec<Name> {
        self.names
            .iter()
            .filter(|(_, s)| s.pending)
            .map(|(n, _)| *n)
            .collect()
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: Name = Name([1; 32]);

    fn subs() -> Subs {
        Subs::new(Seeded(0), 10)
    }

    #[test]
    fn local_is_counted() {
        let mut s = subs();
        assert!(s.add_local(N));
        assert!(!s.add_local(N));
        assert!(!s.remove_local(&N));
        assert!(s.remove_local(&N));
        assert!(!s.remove_local(&N));
        s.tidy(&N);
        assert_eq!(s.len(), 0);
    }

    #[test]
    fn router_subscriptions_refresh_and_lapse() {
        let mut s = subs();
        assert!(s.add_router(N, 3, 10));
        assert!(!s.add_router(N, 3, 20));
        let mut out = Vec::new();
        s.sweep(15, &mut out);
        assert!(out.is_empty());
        s.sweep(20, &mut out);
        assert_eq!(out, vec![N]);
        s.tidy(&N);
        assert!(s.get(&N).is_none());
    }

    #[test]
    fn drop_link_clears_every_role() {
        let mut s = subs();
        s.add_client(N, 4);
        s.add_router(Name([2; 32]), 4, 99);
        if let Some(st) = s.get_mut(&Name([3; 32])) {
            st.upstream.push(4);
        }
        s.add_local(Name([3; 32]));
        if let Some(st) = s.get_mut(&Name([3; 32])) {
            st.upstream.push(4);
        }
        let mut out = Vec::new();
        s.drop_link(4, &mut out);
        out.sort();
        assert_eq!(out, vec![N, Name([2; 32]), Name([3; 32])]);
        assert!(s
            .get(&Name([3; 32]))
            .is_some_and(|st| st.upstream.is_empty() && st.local == 1));
    }

    #[test]
    fn cap_refuses_new_names() {
        let mut s = Subs::new(Seeded(0), 1);
        assert!(s.add_client(N, 1));
        assert!(!s.add_client(Name([2; 32]), 1));
        assert!(s.add_client(N, 2));
    }
}
