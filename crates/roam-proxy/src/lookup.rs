//! How the proxy's validated configuration answers for a local name that appeared (a topic
//! read or written, a service or action served or called): whether it is forwarded, into
//! which realm and under which realm-side name. Exact entries win over patterns.

use super::config::{Mapping, ProxyConfig, What};
use super::entries::{check_entry_name, entry_mappings, in_namespace, Entry};
use super::patterns::{Kind, Side};

impl ProxyConfig {
    /// The realm and realm-side name a local topic is exported under, if any. Exact entries
    /// win over patterns; topics this proxy imports are never exported back.
    pub fn export_of(&self, local_topic: &str) -> Option<(String, String)> {
        if let Some(m) = self
            .exports
            .iter()
            .find(|m| m.what == What::Topic && m.local == local_topic)
        {
            return Some((m.realm.clone(), m.remote.clone()));
        }
        if self
            .imports
            .iter()
            .any(|m| m.what == What::Topic && m.local == local_topic)
        {
            return None;
        }
        self.pattern_exports
            .iter()
            .find(|p| p.kind == Kind::Publishers && p.matches(local_topic))
            .map(|p| {
                let ns = self.namespace.as_deref().unwrap_or("/");
                (
                    p.realm.clone(),
                    in_namespace(ns, What::Topic, local_topic.to_string()),
                )
            })
    }

    /// The realm and realm-side name a local topic is imported from because a local
    /// subscriber reads it and an import pattern matches (`None` for a topic imported by
    /// name, which is imported anyway, and for one this proxy exports: its own stream would
    /// come back).
    pub fn pattern_import_of(&self, local_topic: &str) -> Option<(String, String)> {
        let named = |ms: &[Mapping]| {
            ms.iter()
                .any(|m| m.what == What::Topic && m.local == local_topic)
        };
        if named(&self.imports) || self.export_of(local_topic).is_some() {
            return None;
        }
        let p = self
            .pattern_imports
            .iter()
            .find(|p| p.kind == Kind::Subscribers && p.matches(local_topic))?;
        let ns = self.namespace.as_deref().unwrap_or("/");
        Some((
            p.realm.clone(),
            in_namespace(ns, What::Topic, local_topic.to_string()),
        ))
    }

    /// The mapping a service is forwarded with because a local server (`Side::Exports`) or
    /// client (`Side::Imports`) of it appeared and a `service_servers` (`service_clients`)
    /// pattern matches its local name: what its own `service:` entry would make (convention
    /// `auto`, the realm-side name in the namespace). `None` when no pattern matches, for an
    /// action's parts (`action_servers`/`action_clients` select those), for a name that is
    /// not a ROS name, and for a service an entry names: named entries win.
    pub fn service_pattern(&self, side: Side, service: &str) -> Option<Mapping> {
        let kind = match side {
            Side::Exports => Kind::ServiceServers,
            Side::Imports => Kind::ServiceClients,
        };
        if service.contains("/_action/") {
            return None;
        }
        let mut m = self.call_pattern(kind, Entry::One(What::Service), service)?;
        m.pop()
    }

    /// The five mappings (three services, two topics:
    /// [`action_parts`](super::entries::action_parts)) an action is forwarded with because a
    /// local action server (`Side::Exports`) or client (`Side::Imports`) of it appeared and an
    /// `action_servers` (`action_clients`) pattern matches its local name: what its own
    /// `action:` entry would make. `None` when no pattern matches, for a name that is not a ROS
    /// name, and when an entry names the action or any of its parts.
    pub fn action_pattern(&self, side: Side, action: &str) -> Option<Vec<Mapping>> {
        let kind = match side {
            Side::Exports => Kind::ActionServers,
            Side::Imports => Kind::ActionClients,
        };
        self.call_pattern(kind, Entry::Action, action)
    }

    /// The mappings of `entry` named `local` if a pattern of `kind` matches it and no
    /// exact entry names any of them.
    fn call_pattern(&self, kind: Kind, entry: Entry, local: &str) -> Option<Vec<Mapping>> {
        if check_entry_name(entry, local).ok()? != local {
            return None;
        }
        let list = match kind.side() {
            Side::Exports => &self.pattern_exports,
            Side::Imports => &self.pattern_imports,
        };
        let p = list.iter().find(|p| p.kind == kind && p.matches(local))?;
        let ns = self.namespace.as_deref().unwrap_or("/");
        let in_realm = |what, name| in_namespace(ns, what, name);
        let auto = super::convention::Setting::Auto;
        let mappings = entry_mappings(entry, local, local, &p.realm, auto, &in_realm);
        let named = self.exports.iter().chain(&self.imports).any(|n| {
            mappings.iter().any(|m| {
                n.what == m.what
                    && (n.local == m.local || (n.realm == m.realm && n.remote == m.remote))
            })
        });
        (!named).then_some(mappings)
    }
}
