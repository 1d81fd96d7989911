//! The CycloneDDS configuration a proxy's participant gets from its YAML `dds:` section.

use super::config::DdsFile;

/// The receive buffer the proxy's participant asks for unless the file says otherwise.
/// CycloneDDS asks for 1 MiB; a 13 MB message arrives as ~10,000 fragments in a burst, and
/// while the proxy's other threads hold the CPU the socket overflows, and each dropped
/// fragment waits for a NACK and a retransmission: the lab's E5 measured 0.6-1.9 s one way
/// for 13 MB images with 1 MiB and 0.2-0.24 s with 8 MiB (native DDS: about 0.1 s).
pub const RECEIVE_BUFFER_BYTES: u64 = 8 << 20;

/// The highest DDS domain id. DDSI-RTPS maps domain d to the discovery multicast port
/// 7400 + 250 * d (and unicast ports above it), which must fit in 16 bits: 232 gives 65400,
/// 233 gives 65650 and CycloneDDS refuses it ("port number out of range").
pub const MAX_DOMAIN: u32 = 232;

/// Why a `config_xml` is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum XmlError {
    #[error("not well-formed XML at its line {line} column {column}: {reason}")]
    Malformed {
        line: u32,
        column: u32,
        reason: String,
    },
    #[error("expected CycloneDDS XML (<CycloneDDS>...</CycloneDDS>, or parts such as <General>...</General>) or file://PATH")]
    NotXml,
}

/// The element the check wraps around `config_xml`, because CycloneDDS also takes a list
/// of sibling elements without a root.
const WRAP_OPEN: &str = "<roam-config-xml>";

/// Checks that `config_xml` is well-formed XML (CycloneDDS itself only says "invalid
/// configuration"). `file://` URIs are CycloneDDS's to read.
pub fn check_xml(x: &str) -> Result<(), XmlError> {
    let t = x.trim_start();
    if t.starts_with("file://") {
        return Ok(());
    }
    if !t.starts_with('<') {
        return Err(XmlError::NotXml);
    }
    // An XML declaration must stay first: check what follows it.
    let body = match t.strip_prefix("<?xml") {
        Some(rest) => rest.split_once("?>").map_or("", |(_, after)| after),
        None => t,
    };
    let skipped_lines = x[..x.len() - body.len()].matches('\n').count() as u32;
    let wrapped = format!("{WRAP_OPEN}{body}</roam-config-xml>");
    match roxmltree::Document::parse(&wrapped) {
        Ok(_) => Ok(()),
        Err(e) => {
            let pos = e.pos();
            let column = if pos.row == 1 {
                pos.col.saturating_sub(WRAP_OPEN.len() as u32).max(1)
            } else {
                pos.col
            };
            let reason = e.to_string();
            // roxmltree appends " at ROW:COL" (in the wrapped text): drop it.
            let reason = reason
                .rsplit_once(" at ")
                .map_or(reason.as_str(), |(r, _)| r)
                .replace("roam-config-xml", "the end of config_xml");
            Err(XmlError::Malformed {
                line: pos.row + skipped_lines,
                column,
                reason,
            })
        }
    }
}

/// The configuration of the proxy's participant: `config_xml` as written, else roam's
/// settings for a proxy (below) and the `dds:` section's, followed by `CYCLONEDDS_URI`
/// when it is set and the section names no interfaces or peers (CycloneDDS reads a list of
/// sources in order, so what the environment sets wins).
///
/// - An 8 MiB socket receive buffer ([`RECEIVE_BUFFER_BYTES`], `receive_buffer_bytes`).
/// - A receive thread of its own for the unicast data socket, blocking in `recvmsg`
///   (`MultipleReceiveThreads`): CycloneDDS's default is one thread that waits in `epoll`
///   for every packet on every socket, a second system call per packet. A proxy takes in
///   every sample of what it exports: E2's load measured 14.0-14.4 us of the proxies' CPU
///   per message with one thread, 12.6 us with it (bench/results/lab-e2-recv-thread.md).
pub fn xml(d: &DdsFile) -> String {
    let env = std::env::var("CYCLONEDDS_URI").ok();
    let loopback = loopback_only(&d.interfaces, is_loopback_interface);
    xml_over(d, env.as_deref().filter(|e| !e.trim().is_empty()), loopback)
}

/// The largest UDP payload the proxy's participant sends when it talks over loopback only.
/// CycloneDDS sends at most 14,720 bytes per datagram by default, sized to stay near a
/// 1,500-byte path's MTU in few IP fragments; loopback carries 64 KiB datagrams whole, and
/// every reader (CycloneDDS's reads up to 64 KiB, Fast DDS's and RustDDS's too) takes them.
/// A 64 KiB sample then leaves in 2 datagrams instead of 5, a 1 MiB one in 17 instead of 79:
/// fewer system calls for the proxy that writes it and the node that reads it. Below the
/// UDP limit (65,507) with room for CycloneDDS's headers.
pub const LOOPBACK_MAX_MESSAGE_BYTES: u32 = 65_000;

/// Whether every interface named is a loopback one (none named: CycloneDDS picks one, which
/// may be a real network's).
fn loopback_only(interfaces: &[String], is_loopback: impl Fn(&str) -> bool) -> bool {
    !interfaces.is_empty() && interfaces.iter().all(|i| is_loopback(i))
}

/// Whether `name` (an interface name or an address, as CycloneDDS's `NetworkInterface`
/// takes either) is this machine's loopback.
fn is_loopback_interface(name: &str) -> bool {
    if let Ok(ip) = name.parse::<std::net::IpAddr>() {
        return ip.is_loopback();
    }
    #[cfg(unix)]
    {
        use nix::net::if_::InterfaceFlags;
        if let Ok(addrs) = nix::ifaddrs::getifaddrs() {
            return addrs
                .filter(|a| a.interface_name == name)
                .any(|a| a.flags.contains(InterfaceFlags::IFF_LOOPBACK));
        }
    }
    false
}

fn xml_over(d: &DdsFile, env: Option<&str>, loopback: bool) -> String {
    if let Some(x) = &d.config_xml {
        return x.clone();
    }
    // "min: default" accepts whatever the kernel grants (net.core.rmem_max caps it).
    let mut x = format!(
        "<Internal><SocketReceiveBufferSize min=\"default\" max=\"{}B\"/><MultipleReceiveThreads>true</MultipleReceiveThreads></Internal>",
        d.receive_buffer_bytes.unwrap_or(RECEIVE_BUFFER_BYTES)
    );
    if d.interfaces.is_empty() && d.peers.is_empty() {
        if let Some(env) = env {
            x.push(',');
            x.push_str(env);
        }
        return x;
    }
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
    if loopback {
        // Repairs too: a lost datagram held dozens of fragments, and sent again one per
        // 1,456-byte datagram (CycloneDDS's default) they took seconds to catch up.
        x.push_str(&format!(
            "<MaxMessageSize>{LOOPBACK_MAX_MESSAGE_BYTES}B</MaxMessageSize>\
             <MaxRexmitMessageSize>{LOOPBACK_MAX_MESSAGE_BYTES}B</MaxRexmitMessageSize>"
        ));
    }
    x.push_str("</General>");
    if !d.peers.is_empty() {
        x.push_str("<Discovery><Peers>");
        for p in &d.peers {
            x.push_str(&format!("<Peer address=\"{}\"/>", escape(p)));
        }
        x.push_str("</Peers><ParticipantIndex>auto</ParticipantIndex><MaxAutoParticipantIndex>50</MaxAutoParticipantIndex></Discovery>");
    }
    x
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
            bulk_types: None,
        };
        let internal = "<Internal><SocketReceiveBufferSize min=\"default\" max=\"8388608B\"/><MultipleReceiveThreads>true</MultipleReceiveThreads></Internal>";
        let x = xml_over(&d, Some("file:///ignored.xml"), false);
        assert_eq!(x, format!("{internal}{}", roam_dds::loopback_config()));
        // What roam writes is well-formed by the same check users' XML gets.
        check_xml(&x).unwrap();
        // Without interfaces or peers, the environment's configuration comes after roam's.
        assert_eq!(xml_over(&DdsFile::default(), None, false), internal);
        assert_eq!(
            xml_over(&DdsFile::default(), Some("file:///etc/cdds.xml"), false),
            format!("{internal},file:///etc/cdds.xml")
        );
        let only_buffer = DdsFile {
            receive_buffer_bytes: Some(1 << 20),
            ..DdsFile::default()
        };
        assert!(xml_over(&only_buffer, None, false).contains("max=\"1048576B\""));
        let given = DdsFile {
            config_xml: Some("<General/>".into()),
            ..DdsFile::default()
        };
        assert_eq!(xml_over(&given, Some("x"), true), "<General/>");
    }

    #[test]
    fn a_loopback_only_participant_sends_large_datagrams() {
        let d = DdsFile {
            interfaces: vec!["lo".into()],
            peers: vec!["127.0.0.1".into()],
            ..DdsFile::default()
        };
        let x = xml_over(&d, None, true);
        assert!(
            x.contains(
                "<MaxMessageSize>65000B</MaxMessageSize>\
                 <MaxRexmitMessageSize>65000B</MaxRexmitMessageSize></General>"
            ),
            "{x}"
        );
        check_xml(&x).unwrap();
        assert!(!xml_over(&d, None, false).contains("MaxMessageSize"));
        // Which interfaces count as loopback only.
        let lo = |n: &str| n == "lo" || n == "lo2";
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(loopback_only(&names(&["lo"]), lo));
        assert!(loopback_only(&names(&["lo", "lo2"]), lo));
        assert!(!loopback_only(&names(&["lo", "eth0"]), lo));
        assert!(
            !loopback_only(&names(&[]), lo),
            "none named: CycloneDDS picks"
        );
        assert!(is_loopback_interface("127.0.0.1"));
        assert!(is_loopback_interface("::1"));
        assert!(!is_loopback_interface("192.0.2.1"));
        assert!(!is_loopback_interface("no-such-interface"));
        // Every Linux network namespace has its loopback, named lo.
        #[cfg(target_os = "linux")]
        assert!(is_loopback_interface("lo"));
    }

    #[test]
    fn config_xml_must_be_well_formed() {
        for ok in [
            "<General><Interfaces><NetworkInterface name=\"lo\"/></Interfaces></General>",
            "<CycloneDDS><Domain id=\"any\"><General/></Domain></CycloneDDS>",
            "<?xml version=\"1.0\"?>\n<CycloneDDS/>",
            "  <General/><Discovery/>",
            "file:///etc/cyclonedds.xml",
        ] {
            check_xml(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        let e = check_xml("<General><Interfaces></General>").unwrap_err();
        assert!(matches!(e, XmlError::Malformed { line: 1, .. }), "{e}");
        let e = check_xml("<General>\n  <AllowMulticast>false</AllowMulticas>\n</General>")
            .unwrap_err();
        assert!(matches!(e, XmlError::Malformed { line: 2, .. }), "{e}");
        assert!(e.to_string().contains("line 2"), "{e}");
        let e = check_xml("<General attr=1/>").unwrap_err();
        assert!(matches!(e, XmlError::Malformed { .. }), "{e}");
        let e = check_xml("<General>").unwrap_err();
        assert!(e.to_string().contains("not well-formed"), "{e}");
        assert_eq!(check_xml("General: lo"), Err(XmlError::NotXml));
    }
}
