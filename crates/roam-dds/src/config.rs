/// A CycloneDDS configuration that keeps DDS traffic on the loopback interface: interface `lo`,
/// no multicast, unicast discovery towards 127.0.0.1 for participant indices 0..=50.
///
/// For tests and local demos; pass it to [`Participant::new`](crate::Participant::new), or set it
/// as `CYCLONEDDS_URI` for another CycloneDDS program (e.g. Python `cyclonedds`) so the two find
/// each other.
pub fn loopback_config() -> &'static str {
    concat!(
        "<General><Interfaces><NetworkInterface name=\"lo\"/></Interfaces>",
        "<AllowMulticast>false</AllowMulticast></General>",
        "<Discovery><Peers><Peer address=\"127.0.0.1\"/></Peers>",
        "<ParticipantIndex>auto</ParticipantIndex>",
        "<MaxAutoParticipantIndex>50</MaxAutoParticipantIndex></Discovery>"
    )
}
