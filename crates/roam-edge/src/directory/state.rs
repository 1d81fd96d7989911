//! What a view keeps of a realm's directory: every member's latest entry, forgotten when the
//! member says it has nothing left (an empty entry) or stays silent for [`EXPIRY_PERIODS`] of
//! its own repeat period; and the listing built from them. Pure: fed entries and the time, no
//! I/O, so it is tested with an injected clock.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use roam_proto::directory::{DirectoryEntry, ItemKind, Role};
use roam_proto::meta::StreamQos;
use serde::Serialize;

/// A member silent for this many of its periods is forgotten.
pub const EXPIRY_PERIODS: u32 = 4;
/// Most members a view keeps; entries of further members are refused.
pub const MAX_MEMBERS: usize = 1024;
/// Most entry bytes a view keeps, all members together; larger entries are refused.
pub const MAX_RETAINED_BYTES: usize = 64 << 20;
/// The repeat periods a view believes: a member's announced period is clamped into these
/// bounds, so that no member can make a view forget it at once or keep it for ever.
const MIN_PERIOD: Duration = Duration::from_millis(250);
const MAX_PERIOD: Duration = Duration::from_secs(60);

/// Why a view did not take an entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("the view already keeps {MAX_MEMBERS} members")]
    TooManyMembers,
    #[error("keeping this entry would take the view over {MAX_RETAINED_BYTES} bytes")]
    TooLarge,
}

struct Member {
    entry: DirectoryEntry,
    /// The entry's encoded size, counted against [`MAX_RETAINED_BYTES`].
    size: usize,
    expires: Instant,
}

/// Every member's latest entry in one realm.
#[derive(Default)]
pub struct Directory {
    members: BTreeMap<String, Member>,
    retained: usize,
}

impl Directory {
    /// Takes a member's entry (`size`: its encoded length); says whether the listing changed.
    pub fn handle_entry(
        &mut self,
        now: Instant,
        entry: DirectoryEntry,
        size: usize,
    ) -> Result<bool, Refused> {
        if entry.items.is_empty() {
            // The member has nothing (left) to list: forget it at once.
            return Ok(self.forget(&entry.member));
        }
        let period = Duration::from_millis(entry.period_ms.into()).clamp(MIN_PERIOD, MAX_PERIOD);
        let expires = now + period * EXPIRY_PERIODS;
        let previous = self.members.get(&entry.member).map(|m| m.size);
        if previous.is_none() && self.members.len() >= MAX_MEMBERS {
            return Err(Refused::TooManyMembers);
        }
        if self.retained - previous.unwrap_or(0) + size > MAX_RETAINED_BYTES {
            return Err(Refused::TooLarge);
        }
        self.retained = self.retained - previous.unwrap_or(0) + size;
        if let Some(m) = self.members.get_mut(&entry.member) {
            m.expires = expires;
            m.size = size;
            if m.entry == entry {
                return Ok(false);
            }
            m.entry = entry;
            return Ok(true);
        }
        self.members.insert(
            entry.member.clone(),
            Member {
                entry,
                size,
                expires,
            },
        );
        Ok(true)
    }

    /// Forgets members silent past their expiry; true if any was forgotten.
    pub fn handle_timeout(&mut self, now: Instant) -> bool {
        let before = self.members.len();
        let mut freed = 0;
        self.members.retain(|_, m| {
            let keep = now < m.expires;
            if !keep {
                freed += m.size;
            }
            keep
        });
        self.retained -= freed;
        self.members.len() != before
    }

    /// When [`Self::handle_timeout`] has something to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.members.values().map(|m| m.expires).min()
    }

    fn forget(&mut self, member: &str) -> bool {
        match self.members.remove(member) {
            Some(m) => {
                self.retained -= m.size;
                true
            }
            None => false,
        }
    }

    /// The latest entry of every member, by member name.
    pub fn entries(&self) -> impl Iterator<Item = &DirectoryEntry> {
        self.members.values().map(|m| &m.entry)
    }

    /// Every topic, service and action with its types and who offers and imports it.
    pub fn listing(&self) -> Listing {
        #[derive(Default)]
        struct Acc {
            offered: BTreeMap<String, PartyAcc>,
            imported: BTreeMap<String, PartyAcc>,
        }
        #[derive(Default)]
        struct PartyAcc {
            types: BTreeSet<String>,
            qos: BTreeSet<StreamQos>,
        }
        let mut all: BTreeMap<(ItemKind, &str), Acc> = BTreeMap::new();
        for e in self.entries() {
            for item in &e.items {
                let acc = all.entry((item.kind, item.name.as_str())).or_default();
                let side = match item.role {
                    Role::Offers => &mut acc.offered,
                    Role::Imports => &mut acc.imported,
                };
                let party = side.entry(e.member.clone()).or_default();
                party.types.extend(item.types.iter().cloned());
                party.qos.extend(item.qos.iter().copied());
            }
        }
        let parties = |side: BTreeMap<String, PartyAcc>| -> Vec<Party> {
            side.into_iter()
                .map(|(member, p)| Party {
                    member,
                    types: p.types.into_iter().collect(),
                    qos: p.qos.into_iter().map(QosSummary::from).collect(),
                })
                .collect()
        };
        let mut listing = Listing {
            members: self.members.keys().cloned().collect(),
            ..Listing::default()
        };
        for ((kind, name), acc) in all {
            let types: BTreeSet<String> = acc
                .offered
                .values()
                .chain(acc.imported.values())
                .flat_map(|p| p.types.iter().cloned())
                .collect();
            let listed = Listed {
                name: name.to_string(),
                types: types.into_iter().collect(),
                offered_by: parties(acc.offered),
                imported_by: parties(acc.imported),
            };
            match kind {
                ItemKind::Topic => listing.topics.push(listed),
                ItemKind::Service => listing.services.push(listed),
                ItemKind::Action => listing.actions.push(listed),
            }
        }
        listing
    }
}

/// What a realm's members offer and import, by name (sorted).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Listing {
    /// The members heard (with something to list).
    pub members: Vec<String>,
    pub topics: Vec<Listed>,
    pub services: Vec<Listed>,
    pub actions: Vec<Listed>,
}

/// One topic, service or action of a realm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listed {
    /// Its realm-side name.
    pub name: String,
    /// Every type any member gave for it (more than one is a mismatch worth a look).
    pub types: Vec<String>,
    /// The members that bring it into the realm (publish, serve).
    pub offered_by: Vec<Party>,
    /// The members that take it from the realm (subscribe, call).
    pub imported_by: Vec<Party>,
}

/// One member's side of a topic, service or action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Party {
    pub member: String,
    pub types: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub qos: Vec<QosSummary>,
}

/// A topic's QoS as its directory entry gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct QosSummary {
    pub reliable: bool,
    pub transient_local: bool,
    /// History depth; 0 keeps all.
    pub depth: u32,
}

impl From<StreamQos> for QosSummary {
    fn from(q: StreamQos) -> Self {
        QosSummary {
            reliable: q.reliable,
            transient_local: q.transient_local,
            depth: q.depth,
        }
    }
}

impl std::fmt::Display for QosSummary {
    /// As ROS 2 tools say it: `reliable, transient-local, depth 1`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = if self.reliable {
            "reliable"
        } else {
            "best-effort"
        };
        let d = if self.transient_local {
            "transient-local"
        } else {
            "volatile"
        };
        match self.depth {
            0 => write!(f, "{r}, {d}, keep all"),
            n => write!(f, "{r}, {d}, depth {n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use roam_proto::directory::{DirectoryItem, DEFAULT_PERIOD_MS};

    const S: Duration = Duration::from_secs(1);

    fn item(kind: ItemKind, role: Role, name: &str, ty: &str) -> DirectoryItem {
        DirectoryItem {
            kind,
            role,
            name: name.into(),
            types: if ty.is_empty() {
                vec![]
            } else {
                vec![ty.into()]
            },
            qos: vec![],
        }
    }

    fn entry(member: &str, items: Vec<DirectoryItem>) -> DirectoryEntry {
        DirectoryEntry {
            member: member.into(),
            period_ms: DEFAULT_PERIOD_MS,
            items,
        }
    }

    fn take(d: &mut Directory, now: Instant, e: DirectoryEntry) -> bool {
        let size = e.encode().len();
        d.handle_entry(now, e, size).unwrap()
    }

    const STRING: &str = "std_msgs/msg/String";

    #[test]
    fn entries_merge_by_name_with_who_offers_and_imports_each() {
        let t0 = Instant::now();
        let mut d = Directory::default();
        let mut chatter = item(ItemKind::Topic, Role::Offers, "/chatter", STRING);
        chatter.qos.push(StreamQos {
            reliable: true,
            transient_local: false,
            depth: 10,
        });
        assert!(take(
            &mut d,
            t0,
            entry(
                "robot",
                vec![
                    chatter,
                    item(
                        ItemKind::Service,
                        Role::Offers,
                        "/add",
                        "example_interfaces/srv/AddTwoInts"
                    ),
                ]
            )
        ));
        assert!(take(
            &mut d,
            t0,
            entry(
                "base",
                vec![
                    item(ItemKind::Topic, Role::Imports, "/chatter", ""),
                    item(ItemKind::Topic, Role::Imports, "/scan", ""),
                    item(ItemKind::Service, Role::Imports, "/add", ""),
                ]
            )
        ));
        let l = d.listing();
        assert_eq!(l.members, ["base", "robot"]);
        let names: Vec<&str> = l.topics.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["/chatter", "/scan"]);
        let chatter = &l.topics[0];
        assert_eq!(chatter.types, [STRING]);
        assert_eq!(chatter.offered_by[0].member, "robot");
        assert_eq!(
            chatter.offered_by[0].qos[0].to_string(),
            "reliable, volatile, depth 10"
        );
        assert_eq!(chatter.imported_by[0].member, "base");
        assert!(chatter.imported_by[0].types.is_empty());
        assert!(l.topics[1].offered_by.is_empty() && l.topics[1].types.is_empty());
        assert_eq!(l.services[0].types, ["example_interfaces/srv/AddTwoInts"]);
        assert_eq!(l.services[0].imported_by[0].member, "base");
        assert!(l.actions.is_empty());

        // Two types for one name: both are listed.
        take(
            &mut d,
            t0,
            entry(
                "rogue",
                vec![item(ItemKind::Topic, Role::Offers, "/chatter", "x/msg/Y")],
            ),
        );
        assert_eq!(d.listing().topics[0].types, [STRING, "x/msg/Y"]);
    }

    #[test]
    fn an_entry_replaces_the_members_previous_one_and_an_empty_one_removes_it() {
        let t0 = Instant::now();
        let mut d = Directory::default();
        let a = entry("a", vec![item(ItemKind::Topic, Role::Offers, "/x", STRING)]);
        assert!(take(&mut d, t0, a.clone()));
        assert!(
            !take(&mut d, t0 + S, a),
            "the same entry again changes nothing"
        );
        assert!(take(
            &mut d,
            t0 + S,
            entry("a", vec![item(ItemKind::Topic, Role::Offers, "/y", STRING)])
        ));
        assert_eq!(d.listing().topics.len(), 1);
        assert_eq!(d.listing().topics[0].name, "/y");
        assert!(take(&mut d, t0 + S, entry("a", vec![])));
        assert_eq!(d.listing(), Listing::default());
        assert_eq!(d.retained, 0);
        assert!(!take(&mut d, t0 + S, entry("a", vec![])));
    }

    #[test]
    fn a_silent_member_expires_after_a_few_of_its_periods() {
        let t0 = Instant::now();
        let mut d = Directory::default();
        take(
            &mut d,
            t0,
            entry("a", vec![item(ItemKind::Topic, Role::Offers, "/x", STRING)]),
        );
        let mut slow = entry("b", vec![item(ItemKind::Topic, Role::Offers, "/y", STRING)]);
        slow.period_ms = 10_000;
        take(&mut d, t0, slow);
        let a_expires = t0 + 2 * S * EXPIRY_PERIODS;
        assert_eq!(d.poll_timeout(), Some(a_expires));
        // Hearing it again pushes its expiry out.
        take(
            &mut d,
            t0 + S,
            entry("a", vec![item(ItemKind::Topic, Role::Offers, "/x", STRING)]),
        );
        assert_eq!(d.poll_timeout(), Some(a_expires + S));
        assert!(!d.handle_timeout(a_expires));
        assert!(d.handle_timeout(a_expires + S));
        assert_eq!(d.listing().members, ["b"]);
        // The slow member announced a 10 s period: it stays for four of them.
        assert!(!d.handle_timeout(t0 + 39 * S));
        assert!(d.handle_timeout(t0 + 40 * S));
        assert_eq!(d.poll_timeout(), None);
        assert_eq!(d.retained, 0);

        // A period of 0 or of a day is clamped.
        let mut odd = entry("c", vec![item(ItemKind::Topic, Role::Offers, "/z", STRING)]);
        odd.period_ms = 0;
        take(&mut d, t0, odd.clone());
        assert_eq!(d.poll_timeout(), Some(t0 + MIN_PERIOD * EXPIRY_PERIODS));
        odd.period_ms = u32::MAX;
        take(&mut d, t0, odd);
        assert_eq!(d.poll_timeout(), Some(t0 + MAX_PERIOD * EXPIRY_PERIODS));
    }

    #[test]
    fn members_and_retained_bytes_are_bounded() {
        let t0 = Instant::now();
        let mut d = Directory::default();
        for i in 0..MAX_MEMBERS {
            let e = entry(
                &format!("m{i}"),
                vec![item(ItemKind::Topic, Role::Offers, "/x", "")],
            );
            d.handle_entry(t0, e, 10).unwrap();
        }
        let one_more = entry("late", vec![item(ItemKind::Topic, Role::Offers, "/x", "")]);
        assert_eq!(
            d.handle_entry(t0, one_more, 10),
            Err(Refused::TooManyMembers)
        );
        // A known member may still update its entry.
        let again = entry("m0", vec![item(ItemKind::Topic, Role::Offers, "/y", "")]);
        assert_eq!(d.handle_entry(t0, again, 10), Ok(true));

        let mut d = Directory::default();
        let big = entry("big", vec![item(ItemKind::Topic, Role::Offers, "/x", "")]);
        d.handle_entry(t0, big.clone(), MAX_RETAINED_BYTES - 5)
            .unwrap();
        let other = entry("other", vec![item(ItemKind::Topic, Role::Offers, "/x", "")]);
        assert_eq!(
            d.handle_entry(t0, other.clone(), 10),
            Err(Refused::TooLarge)
        );
        // Replacing its own entry counts the new size instead of the old one.
        assert_eq!(d.handle_entry(t0, big, 100), Ok(false));
        assert_eq!(d.handle_entry(t0, other, 10), Ok(true));
        assert_eq!(d.retained, 110);
    }
}
