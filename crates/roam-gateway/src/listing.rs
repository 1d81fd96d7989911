//! What the gateway's clients offer and import, announced in the realm's directory as this
//! member's entry: a topic a client advertises or a service it serves is offered, a topic it
//! subscribes to or a service it calls is imported. So `roam topics`, other gateways'
//! `/rosapi/*` and callers that give no type see them. Each item is held by a guard; the
//! entry drops it when the last client holding it lets go.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use roam_edge::directory::DirectoryAnnouncer;
use roam_proto::directory::{DirectoryItem, ItemKind, Role};

type Key = (ItemKind, Role, String, String);

/// The gateway's directory entry, shared by its clients.
pub struct Listing {
    announcer: Option<DirectoryAnnouncer>,
    items: Mutex<BTreeMap<Key, usize>>,
}

/// Keeps one item listed while it lives.
pub struct Listed {
    listing: Arc<Listing>,
    key: Key,
}

impl Drop for Listed {
    fn drop(&mut self) {
        let mut items = self.listing.items();
        if let Some(n) = items.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                items.remove(&self.key);
            }
        }
        self.listing.announce(&items);
    }
}

impl Listing {
    /// A listing announced by `announcer` (None: kept, not announced; for tests).
    pub fn new(announcer: Option<DirectoryAnnouncer>) -> Arc<Listing> {
        Arc::new(Listing {
            announcer,
            items: Mutex::new(BTreeMap::new()),
        })
    }

    fn items(&self) -> MutexGuard<'_, BTreeMap<Key, usize>> {
        self.items.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Lists `name` (a full ROS name) with its ROS type until the guard is dropped.
    pub fn add(self: &Arc<Self>, kind: ItemKind, role: Role, name: &str, ros_type: &str) -> Listed {
        let key = (kind, role, name.to_string(), ros_type.to_string());
        let mut items = self.items();
        *items.entry(key.clone()).or_insert(0) += 1;
        self.announce(&items);
        Listed {
            listing: self.clone(),
            key,
        }
    }

    /// What is listed now.
    pub fn items_now(&self) -> Vec<DirectoryItem> {
        Self::entry(&self.items())
    }

    fn entry(items: &BTreeMap<Key, usize>) -> Vec<DirectoryItem> {
        items
            .keys()
            .map(|(kind, role, name, ty)| DirectoryItem {
                kind: *kind,
                role: *role,
                name: name.clone(),
                types: vec![ty.clone()],
                qos: Vec::new(),
            })
            .collect()
    }

    fn announce(&self, items: &BTreeMap<Key, usize>) {
        if let Some(a) = &self.announcer {
            a.set(Self::entry(items));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_stays_listed_while_any_client_holds_it() {
        let l = Listing::new(None);
        let a = l.add(
            ItemKind::Topic,
            Role::Imports,
            "/chatter",
            "std_msgs/msg/String",
        );
        let b = l.add(
            ItemKind::Topic,
            Role::Imports,
            "/chatter",
            "std_msgs/msg/String",
        );
        let c = l.add(
            ItemKind::Service,
            Role::Offers,
            "/add",
            "example_interfaces/srv/AddTwoInts",
        );
        assert_eq!(l.items_now().len(), 2);
        drop(a);
        assert_eq!(l.items_now().len(), 2);
        drop(b);
        let now = l.items_now();
        assert_eq!(now.len(), 1);
        assert_eq!(
            (now[0].kind, now[0].role, now[0].name.as_str()),
            (ItemKind::Service, Role::Offers, "/add")
        );
        drop(c);
        assert!(l.items_now().is_empty());
    }
}
