//! One process's entry in one realm's directory. Several parts of a process list things in
//! it (a proxy's exports and imports, the clients of the gateway doors it opens): each part
//! holds its own [`DirectoryAnnouncer`], and the process sends one entry, the union of what
//! the parts list. Two entries under one member name would replace each other in every view,
//! and the realm's listing would flip between them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use roam_proto::directory::{
    DirectoryEntry, DirectoryItem, MAX_ITEMS, MAX_MEMBER, MAX_NAME, MAX_QOS, MAX_TYPES,
    MAX_TYPE_NAME,
};
use roam_proto::Name;
use tokio::sync::watch;
use tracing::warn;

use super::{directory_name, directory_topic, lock, DIRECTORY_PERIOD, DIRECTORY_TYPE};
use crate::edge::{Edge, EdgeError};
use crate::publisher::{Publisher, StreamSpec};
use crate::realm::Realm;

/// The process's entries, by directory name (one per realm), while any part holds one.
pub(crate) type Entries = Mutex<HashMap<Name, Weak<Entry>>>;

/// The entry of this process in one realm: every part's items and the task that sends
/// their union. The task sends a last, empty entry when this is dropped (the last part went).
pub(crate) struct Entry {
    parts: Mutex<Parts>,
    items: watch::Sender<Vec<DirectoryItem>>,
    task: tokio::task::JoinHandle<()>,
    /// The process is leaving the realm: the entry lists nothing from now on.
    leaving: AtomicBool,
    /// What sends the entry, for [`DirectoryAnnouncer::leave`]'s last one.
    publisher: Arc<Publisher>,
    member: String,
}

#[derive(Default)]
struct Parts {
    next: u64,
    items: BTreeMap<u64, Vec<DirectoryItem>>,
}

impl Entry {
    /// Changes the parts' items with `f` and hands the union to the task if it changed.
    fn update(&self, f: impl FnOnce(&mut Parts)) {
        let mut parts = lock(&self.parts);
        f(&mut parts);
        let mut seen = HashSet::new();
        let union: Vec<DirectoryItem> = parts
            .items
            .values()
            .flatten()
            .filter(|i| seen.insert(*i))
            .cloned()
            .collect();
        let union = if self.leaving.load(Ordering::Acquire) {
            Vec::new()
        } else {
            within_limits(union)
        };
        self.items.send_if_modified(|now| {
            if *now == union {
                return false;
            }
            *now = union;
            true
        });
    }
}

/// Says, for one part of a process in one realm, what it offers and imports; the process's
/// entry lists what all its parts say. Dropping it takes its items out of the entry; the
/// last part's going empties the entry at once in every view.
pub struct DirectoryAnnouncer {
    entry: Arc<Entry>,
    part: u64,
}

impl Edge {
    /// Starts announcing this process (by its name) in `realm`'s directory, or joins the
    /// entry another part of the process announces there; this part lists nothing until
    /// [`DirectoryAnnouncer::set`].
    pub async fn directory_announcer(
        &self,
        realm: Arc<Realm>,
    ) -> Result<DirectoryAnnouncer, EdgeError> {
        let name = directory_name(&realm.secret);
        if let Some(entry) = lock(&self.inner.directories)
            .get(&name)
            .and_then(Weak::upgrade)
        {
            return Ok(DirectoryAnnouncer::join(entry));
        }
        let publisher = self
            .publisher(&directory_topic(realm), StreamSpec::new(DIRECTORY_TYPE))
            .await?;
        let mut entries = lock(&self.inner.directories);
        // Another part started the entry meanwhile: this publisher is not needed.
        if let Some(entry) = entries.get(&name).and_then(Weak::upgrade) {
            return Ok(DirectoryAnnouncer::join(entry));
        }
        let member = truncate(self.name(), MAX_MEMBER).to_string();
        if member.len() < self.name().len() {
            warn!(name = %self.name(), "the directory names this process by the first {MAX_MEMBER} bytes of its name");
        }
        let (items, rx) = watch::channel(Vec::new());
        let publisher = Arc::new(publisher);
        let entry = Arc::new(Entry {
            parts: Mutex::new(Parts::default()),
            items,
            task: tokio::spawn(announce(publisher.clone(), member.clone(), rx)),
            leaving: AtomicBool::new(false),
            publisher,
            member,
        });
        entries.retain(|_, e| e.strong_count() > 0);
        entries.insert(name, Arc::downgrade(&entry));
        Ok(DirectoryAnnouncer::join(entry))
    }
}

impl DirectoryAnnouncer {
    fn join(entry: Arc<Entry>) -> DirectoryAnnouncer {
        let part = {
            let mut parts = lock(&entry.parts);
            parts.next += 1;
            parts.next
        };
        DirectoryAnnouncer { entry, part }
    }

    /// Replaces what this part lists; the entry is announced at once if it changed. Items
    /// beyond the entry format's limits are left out (and said so in the log).
    pub fn set(&self, items: Vec<DirectoryItem>) {
        self.entry.update(|p| {
            p.items.insert(self.part, items);
        });
    }

    /// Takes this part's items out of the entry. The last part sends the last, empty entry
    /// (if anyone listens) and waits until it is handed to the router; dropping it sends it
    /// too, without waiting.
    pub async fn close(self) {
        let entry = self.entry.clone();
        drop(self);
        // Only the last holder gets the entry itself (no part can join it any more).
        if let Ok(Entry { items, task, .. }) = Arc::try_unwrap(entry) {
            drop(items);
            let _ = task.await;
        }
    }
}

impl DirectoryAnnouncer {
    /// Says that the whole process leaves the realm (it is stopping): its entry lists nothing
    /// from now on, whatever other parts list, and the empty entry is handed to the router
    /// (if anyone listens) before this returns. Views forget the member at once.
    pub async fn leave(self) {
        let entry = self.entry.clone();
        entry.leaving.store(true, Ordering::Release);
        drop(self);
        let listening = *entry.publisher.demand().borrow();
        if listening {
            let last = DirectoryEntry {
                member: entry.member.clone(),
                period_ms: DIRECTORY_PERIOD.as_millis() as u32,
                items: Vec::new(),
            };
            if let Err(e) = entry.publisher.publish(&last.encode()).await {
                warn!("cannot send this process's last directory entry: {e}");
            }
        }
    }
}

impl Drop for DirectoryAnnouncer {
    fn drop(&mut self) {
        let part = self.part;
        self.entry.update(|p| {
            p.items.remove(&part);
        });
    }
}

async fn announce(
    publisher: Arc<Publisher>,
    member: String,
    mut items: watch::Receiver<Vec<DirectoryItem>>,
) {
    let mut demand = publisher.demand();
    let mut tick = tokio::time::interval(DIRECTORY_PERIOD);
    let period_ms = DIRECTORY_PERIOD.as_millis() as u32;
    let mut warned = false;
    loop {
        let send = tokio::select! {
            changed = items.changed() => {
                if changed.is_err() {
                    break;
                }
                true
            }
            changed = demand.changed() => {
                if changed.is_err() {
                    // The port is gone: nobody is left to tell.
                    return;
                }
                true
            }
            _ = tick.tick() => true,
        };
        if send && *demand.borrow() {
            let entry = DirectoryEntry {
                member: member.clone(),
                period_ms,
                items: items.borrow_and_update().clone(),
            };
            if let Err(e) = publisher.publish(&entry.encode()).await {
                if !std::mem::replace(&mut warned, true) {
                    warn!("cannot send this process's directory entry: {e} (said once)");
                }
            }
        }
    }
    // Closed: say at once that this member has nothing left to list.
    if *demand.borrow() {
        let last = DirectoryEntry {
            member,
            period_ms,
            items: Vec::new(),
        };
        if let Err(e) = publisher.publish(&last.encode()).await {
            warn!("cannot send this process's last directory entry: {e}");
        }
    }
}

/// The items an entry can carry: at most [`MAX_ITEMS`], each with a name and types no longer
/// than the format allows, at most [`MAX_TYPES`] types and [`MAX_QOS`] QoS summaries.
fn within_limits(mut items: Vec<DirectoryItem>) -> Vec<DirectoryItem> {
    let before = items.len();
    items.retain(|i| !i.name.is_empty() && i.name.len() <= MAX_NAME);
    let mut trimmed = items.len() != before || items.len() > MAX_ITEMS;
    items.truncate(MAX_ITEMS);
    for i in &mut items {
        let n = (i.types.len(), i.qos.len());
        i.types
            .retain(|t| !t.is_empty() && t.len() <= MAX_TYPE_NAME);
        i.types.truncate(MAX_TYPES);
        i.qos.truncate(MAX_QOS);
        trimmed |= n != (i.types.len(), i.qos.len());
    }
    if trimmed {
        warn!("the directory entry leaves out what is over its limits ({MAX_ITEMS} items, names of {MAX_NAME} bytes, {MAX_TYPES} types per item)");
    }
    items
}

fn truncate(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use roam_proto::directory::{ItemKind, Role};

    #[test]
    fn items_over_the_limits_are_left_out() {
        let item = |name: &str, types: usize| DirectoryItem {
            kind: ItemKind::Topic,
            role: Role::Offers,
            name: name.into(),
            types: (0..types).map(|i| format!("p/msg/T{i}")).collect(),
            qos: vec![],
        };
        let long = "/".repeat(MAX_NAME + 1);
        let mut items = vec![item("/a", MAX_TYPES + 3), item(&long, 1), item("", 0)];
        items.extend((0..MAX_ITEMS + 5).map(|i| item(&format!("/t{i}"), 1)));
        let kept = within_limits(items);
        assert_eq!(kept.len(), MAX_ITEMS);
        assert_eq!(kept[0].types.len(), MAX_TYPES);
        assert!(kept
            .iter()
            .all(|i| i.name.len() <= MAX_NAME && !i.name.is_empty()));
        let e = DirectoryEntry {
            member: "m".into(),
            period_ms: 2000,
            items: kept,
        };
        assert_eq!(DirectoryEntry::decode(&e.encode()).unwrap(), e);
        assert_eq!(truncate("aé", 2), "a");
    }
}
