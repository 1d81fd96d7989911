//! The configuration of a sibling domain instance ([`crate::Participant::sibling`]): a second
//! CycloneDDS domain in this process, under another (internal) domain id, that appears on the
//! network as the first one's domain (CycloneDDS's `Discovery/ExternalDomainId`).
//!
//! Why a second instance: CycloneDDS delivers every reader of a domain instance on that
//! instance's receive threads, and a reader whose callback waits (back-pressure on a reliable
//! keep-all topic) holds every other topic of the instance behind it. A second participant on
//! the same instance shares those threads; a second instance has its own sockets and threads.

use std::path::Path;

/// Why the configuration cannot be reused for a sibling.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SiblingConfigError {
    /// A `<Domain id="N">` section applies to domain N only: under the sibling's internal id
    /// it would be skipped, and the sibling would run on CycloneDDS's defaults (other
    /// interfaces, multicast) and might never meet the publishers.
    #[error("its <Domain id=\"{0}\"> section would not apply to a second domain instance (use id=\"any\")")]
    DomainSpecific(String),
    /// A configuration file named in the list could not be read to check that.
    #[error("cannot read {path}: {reason}")]
    Unreadable {
        /// The file as the list names it.
        path: String,
        /// What reading it said.
        reason: String,
    },
}

/// The configuration for a sibling of domain `external` whose own configuration is
/// `config` (what was given to the domain, or `CYCLONEDDS_URI`; `None`: CycloneDDS's
/// defaults): the same list with `ExternalDomainId` appended. `read` reads a file the list
/// names (`file://PATH` or a bare path), to check it like inline XML.
pub(crate) fn sibling_config(
    config: Option<&str>,
    external: u32,
    read: impl Fn(&Path) -> std::io::Result<String>,
) -> Result<String, SiblingConfigError> {
    let external_id =
        format!("<Discovery><ExternalDomainId>{external}</ExternalDomainId></Discovery>");
    let Some(config) = config.map(str::trim).filter(|c| !c.is_empty()) else {
        return Ok(external_id);
    };
    for item in items(config) {
        let text = if item.starts_with('<') {
            item.to_string()
        } else {
            let path = item.strip_prefix("file://").unwrap_or(item);
            read(Path::new(path)).map_err(|e| SiblingConfigError::Unreadable {
                path: path.to_string(),
                reason: e.to_string(),
            })?
        };
        if let Some(id) = specific_domain_id(&text) {
            return Err(SiblingConfigError::DomainSpecific(id));
        }
    }
    Ok(format!("{config},{external_id}"))
}

/// The items of a CycloneDDS configuration list: XML runs to the end of its top-level
/// elements (it may hold commas), anything else to the next comma.
fn items(config: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = config.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
    while !rest.is_empty() {
        let end = if rest.starts_with('<') {
            xml_end(rest)
        } else {
            rest.find(',').unwrap_or(rest.len())
        };
        let (item, tail) = rest.split_at(end);
        if !item.trim().is_empty() {
            out.push(item.trim());
        }
        rest = tail.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
    }
    out
}

/// Where the XML at the start of `s` ends: the first comma outside every element (element
/// depth 0), or the end. Good enough to split a list; CycloneDDS parses the XML itself.
fn xml_end(s: &str) -> usize {
    let mut depth = 0i32;
    let mut in_tag = false;
    let bytes = s.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'<' => {
                in_tag = true;
                let next = bytes.get(i + 1).copied();
                if next == Some(b'/') {
                    depth -= 1;
                } else if next != Some(b'?') && next != Some(b'!') {
                    depth += 1;
                }
            }
            b'>' => {
                if in_tag && i > 0 && bytes[i - 1] == b'/' {
                    depth -= 1;
                }
                in_tag = false;
            }
            b',' if depth <= 0 && !in_tag => return i,
            _ => {}
        }
    }
    s.len()
}

/// The id of the first `<Domain id="...">` in `xml` that names one domain (not `any`).
fn specific_domain_id(xml: &str) -> Option<String> {
    let mut rest = xml;
    while let Some(at) = rest.find("<Domain") {
        let after = &rest[at + "<Domain".len()..];
        let tag_end = after.find('>').unwrap_or(after.len());
        let tag = &after[..tag_end];
        // `<DomainX ...>` is another element.
        if tag.starts_with(|c: char| c.is_whitespace()) {
            if let Some(id) = attribute(tag, "id") {
                if !id.eq_ignore_ascii_case("any") {
                    return Some(id.to_string());
                }
            }
        }
        rest = &after[tag_end..];
    }
    None
}

/// The value of attribute `name` in a tag's attribute text, quoted with ' or ".
fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let mut rest = tag;
    while let Some(at) = rest.find(name) {
        let before_ok = at == 0 || rest.as_bytes()[at - 1].is_ascii_whitespace();
        let after = rest[at + name.len()..].trim_start();
        if before_ok {
            if let Some(v) = after.strip_prefix('=') {
                let v = v.trim_start();
                let quote = v.chars().next()?;
                if quote == '"' || quote == '\'' {
                    let v = &v[1..];
                    return v.find(quote).map(|end| &v[..end]);
                }
            }
        }
        rest = &rest[at + name.len()..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_files(p: &Path) -> std::io::Result<String> {
        Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("{} not found", p.display()),
        ))
    }

    const EXT: &str = "<Discovery><ExternalDomainId>7</ExternalDomainId></Discovery>";

    #[test]
    fn defaults_get_only_the_external_id() {
        assert_eq!(sibling_config(None, 7, no_files).unwrap(), EXT);
        assert_eq!(sibling_config(Some("  "), 7, no_files).unwrap(), EXT);
    }

    #[test]
    fn inline_xml_is_kept_and_the_external_id_appended() {
        let c = "<General><Interfaces><NetworkInterface name=\"lo\"/></Interfaces></General><Discovery><Peers><Peer address=\"127.0.0.1\"/></Peers></Discovery>";
        assert_eq!(
            sibling_config(Some(c), 7, no_files).unwrap(),
            format!("{c},{EXT}")
        );
        let any = "<CycloneDDS><Domain id=\"any\"><General/></Domain></CycloneDDS>";
        assert!(sibling_config(Some(any), 7, no_files).is_ok());
        let any_single = "<CycloneDDS><Domain Id='ANY'/></CycloneDDS>";
        assert!(sibling_config(Some(any_single), 7, no_files).is_ok());
    }

    #[test]
    fn a_domain_specific_section_is_refused() {
        let c = "<CycloneDDS><Domain id=\"7\"><General/></Domain></CycloneDDS>";
        assert_eq!(
            sibling_config(Some(c), 7, no_files),
            Err(SiblingConfigError::DomainSpecific("7".into()))
        );
        let env = "<CycloneDDS><Domain  id='${ROS_DOMAIN_ID}'></Domain></CycloneDDS>";
        assert!(matches!(
            sibling_config(Some(env), 7, no_files),
            Err(SiblingConfigError::DomainSpecific(_))
        ));
        // Other elements starting with "Domain" are not the section.
        let other = "<CycloneDDS><DomainTag id=\"3\"/></CycloneDDS>";
        assert!(sibling_config(Some(other), 7, no_files).is_ok());
    }

    #[test]
    fn files_in_the_list_are_read_and_checked() {
        let read = |p: &Path| match p.to_str() {
            Some("/etc/any.xml") => Ok("<CycloneDDS><Domain id=\"any\"/></CycloneDDS>".into()),
            Some("/etc/five.xml") => Ok("<CycloneDDS><Domain id=\"5\"/></CycloneDDS>".into()),
            _ => no_files(p),
        };
        let list = "file:///etc/any.xml, <General/>";
        assert_eq!(
            sibling_config(Some(list), 7, read).unwrap(),
            format!("{list},{EXT}")
        );
        assert!(sibling_config(Some("/etc/any.xml"), 7, read).is_ok());
        assert_eq!(
            sibling_config(Some("file:///etc/five.xml"), 7, read),
            Err(SiblingConfigError::DomainSpecific("5".into()))
        );
        assert!(matches!(
            sibling_config(Some("file:///etc/missing.xml"), 7, read),
            Err(SiblingConfigError::Unreadable { .. })
        ));
    }

    #[test]
    fn a_list_splits_at_commas_outside_xml() {
        assert_eq!(
            items("<A x=\"1,2\"><B>t,u</B></A>,file:///x.xml ,<C/>"),
            vec!["<A x=\"1,2\"><B>t,u</B></A>", "file:///x.xml", "<C/>"]
        );
        assert_eq!(items(",,<A/><B/>,"), vec!["<A/><B/>"]);
    }
}
