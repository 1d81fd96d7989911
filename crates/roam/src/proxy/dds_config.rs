//! The CycloneDDS configuration a proxy's participant gets from its YAML `dds:` section.

use super::config::DdsFile;

/// The receive buffer the proxy's participant asks for unless the file says otherwise.
/// CycloneDDS asks for 1 MiB; a 13 MB message arrives as ~10,000 fragments in a burst, and
/// while the proxy's other threads hold the CPU the socket overflows, and each dropped
/// fragment waits for a NACK and a retransmission: the lab's E5 measured 0.6-1.9 s one way
/// for 13 MB images with 1 MiB and 0.2-0.24 s with 8 MiB (native DDS: about 0.1 s).
pub const RECEIVE_BUFFER_BYTES: u64 = 8 << 20;

/// `None` keeps CycloneDDS's defaults (all suitable interfaces, multicast discovery) or
/// what `CYCLONEDDS_URI` says.
pub fn xml(d: &DdsFile) -> Option<String> {
    if let Some(x) = &d.config_xml {
        return Some(x.clone());
    }
    if d.interfaces.is_empty() && d.peers.is_empty() && d.receive_buffer_bytes.is_none() {
        return None;
    }
    // "min: default" accepts whatever the kernel grants (net.core.rmem_max caps it).
    let mut x = format!(
        "<Internal><SocketReceiveBufferSize min=\"default\" max=\"{}B\"/></Internal>",
        d.receive_buffer_bytes.unwrap_or(RECEIVE_BUFFER_BYTES)
    );
    x.push_str("<General>");
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
            receive_buffer_bytes: None,
        };
        let x = xml(&d).unwrap();
        let buffer =
            "<Internal><SocketReceiveBufferSize min=\"default\" max=\"8388608B\"/></Internal>";
        assert_eq!(x, format!("{buffer}{}", roam_dds::loopback_config()));
        assert_eq!(xml(&DdsFile::default()), None);
        let only_buffer = DdsFile {
            receive_buffer_bytes: Some(1 << 20),
            ..DdsFile::default()
        };
        assert_eq!(
            xml(&only_buffer).unwrap(),
            "<Internal><SocketReceiveBufferSize min=\"default\" max=\"1048576B\"/></Internal><General></General>"
        );
    }
}
