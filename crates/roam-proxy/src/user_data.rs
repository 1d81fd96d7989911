//! What a proxy reads from and writes into DDS endpoints' USER_DATA.
//!
//! ROS 2 (rmw_dds_common) writes USER_DATA as `key=value;` pairs; Jazzy and later put the
//! endpoint's type hash there (`typehash=RIHS01_<64 hex>;`), which `ros2 topic info -v`, the
//! graph API and rosbag2 read. A proxy carries the hash of the publishers it exports across
//! the realm and writes it on the writers it makes for an import, so they look to the
//! importer's nodes as the exporter's publishers did.
//!
//! The writers a proxy makes for imports also carry a mark, so that another roam proxy on the
//! same domain never exports them back into a realm (which would loop them): `roam-proxy/1`
//! alone when there is no hash (what every earlier roam wrote), else a `roam-proxy=1;` pair
//! after the hash.

/// The USER_DATA of an import's writer when there is no type hash to carry.
pub const PROXY_MARK: &[u8] = b"roam-proxy/1";
/// The mark as a key-value pair, beside a type hash.
const PROXY_PAIR: &str = "roam-proxy=1;";

/// The `key=value;` pairs of a USER_DATA blob (nothing if it is not UTF-8).
fn pairs(user_data: &[u8]) -> impl Iterator<Item = (&str, &str)> {
    std::str::from_utf8(user_data)
        .unwrap_or("")
        .split(';')
        .filter_map(|p| p.split_once('='))
}

/// The type hash an endpoint announces (`typehash=RIHS01_...;`), if it is well-formed.
pub fn type_hash(user_data: &[u8]) -> Option<String> {
    let (_, h) = pairs(user_data).find(|(k, _)| *k == "typehash")?;
    is_type_hash(h).then(|| h.to_string())
}

/// Whether `h` is a type hash as ROS 2 writes it: `RIHS01_` and 64 lowercase hex digits.
pub fn is_type_hash(h: &str) -> bool {
    h.strip_prefix("RIHS01_").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// The USER_DATA of a writer a proxy makes for an import: the type hash, if any, and the mark.
pub fn import_writer(type_hash: Option<&str>) -> Vec<u8> {
    match type_hash.filter(|h| is_type_hash(h)) {
        Some(h) => format!("typehash={h};{PROXY_PAIR}").into_bytes(),
        None => PROXY_MARK.to_vec(),
    }
}

/// Whether an endpoint is a writer some roam proxy made for an import.
pub fn is_proxy_import(user_data: &[u8]) -> bool {
    user_data == PROXY_MARK || pairs(user_data).any(|(k, v)| k == "roam-proxy" && v == "1")
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRING: &str = "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18";

    #[test]
    fn the_type_hash_is_read_as_rmw_writes_it_and_nothing_else_passes() {
        assert_eq!(
            type_hash(format!("typehash={STRING};").as_bytes()).as_deref(),
            Some(STRING)
        );
        let among = format!("enclave=/;typehash={STRING};other=x;");
        assert_eq!(type_hash(among.as_bytes()).as_deref(), Some(STRING));
        for bad in [
            "".to_string(),
            "roam-proxy/1".into(),
            "typehash=RIHS01_abc;".into(),
            format!("typehash={};", STRING.to_uppercase()),
            format!("typehash=RIHS02_{};", &STRING[7..]),
            "typehash=;".into(),
        ] {
            assert_eq!(type_hash(bad.as_bytes()), None, "{bad}");
        }
        assert_eq!(type_hash(&[0xff, 0xfe, b'=', b';']), None);
    }

    #[test]
    fn an_import_writer_carries_the_hash_and_is_known_as_a_proxys() {
        let with = import_writer(Some(STRING));
        assert_eq!(type_hash(&with).as_deref(), Some(STRING));
        assert!(is_proxy_import(&with));
        // Without a hash: exactly what earlier proxies wrote, so they recognise it too.
        assert_eq!(import_writer(None), PROXY_MARK);
        assert_eq!(import_writer(Some("not a hash")), PROXY_MARK);
        assert!(is_proxy_import(PROXY_MARK));
        // A node's own USER_DATA is not a proxy's.
        assert!(!is_proxy_import(format!("typehash={STRING};").as_bytes()));
        assert!(!is_proxy_import(b""));
        assert!(!is_proxy_import(b"roam-proxy=0;"));
    }
}
