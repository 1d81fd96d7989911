//! The CycloneDDS configuration a proxy's participant gets from its YAML `dds:` section.

use super::config::DdsFile;

/// `None` keeps CycloneDDS's defaults (all suitable interfaces, multicast discovery).
pub fn xml(d: &DdsFile) -> Option<String> {
    if let Some(x) = &d.config_xml {
        return Some(x.clone());
    }
    if d.interfaces.is_empty() && d.peers.is_empty() {
        return None;
    }
    let mut x = String::from("<General>");
    if !d.interfaces.is_empty() {
        x.push_str("<Interfaces>");
        for i in &d.interfaces {
            x.push_str(&format!("<NetworkInterface name=\"{}\"/>", escape(i)));
        }
        x.push_str("</Interfaces>");
    }
    if !d.peers.is_empty() {
        // Unicast peers usually mean multicast is unavailable (e.g. Wi-Fi, loopback).
        x.push_str("<AllowMulticast>false</AllowMulticast>");
    }
    x.push_str("</General>");
    if !d.peers.is_empty() {
        x.push_str("<Discovery><Peers>");
        for p in &d.peers {
            x.push_str(&format!("<Peer address=\"{}\"/>", escape(p)));
        }
        x.push_str("</Peers><ParticipantIndex>auto</ParticipantIndex><MaxAutoParticipantIndex>50</MaxAutoParticipantIndex></Discovery>");
    }
    Some(x)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_settings_make_the_loopback_config() {
        let d = DdsFile {
            domain: 0,
            interfaces: vec!["lo".into()],
            peers: vec!["127.0.0.1".into()],
            config_xml: None,
            ros_distro: None,
        };
        assert_eq!(xml(&d).as_deref(), Some(roam_dds::loopback_config()));
        assert_eq!(xml(&DdsFile::default()), None);
    }
}
