//! CDR (XCDR1, plain): a 4-byte encapsulation header (`00 00` big endian or `00 01` little
//! endian, then 2 option bytes), then the members in order, each aligned to its size relative
//! to the end of the header. Sequences and strings carry a `uint32` length (strings count their
//! terminating NUL); fixed arrays carry none.

pub(crate) mod read;
pub(crate) mod write;

/// The encapsulation header's length.
pub const HEADER_LEN: usize = 4;

/// Byte order of a CDR payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Endian {
    /// `CDR_LE` (`00 01`): what every ROS 2 system on x86 and ARM sends.
    #[default]
    Little,
    /// `CDR_BE` (`00 00`).
    Big,
}

impl Endian {
    /// The encapsulation header for this byte order (options zero: no padding at the end).
    pub fn header(self) -> [u8; HEADER_LEN] {
        match self {
            Endian::Little => [0, 1, 0, 0],
            Endian::Big => [0, 0, 0, 0],
        }
    }

    /// The byte order a CDR payload declares, if its header is one this crate reads.
    pub fn of(cdr: &[u8]) -> Option<Endian> {
        match cdr {
            [0, 1, ..] => Some(Endian::Little),
            [0, 0, ..] => Some(Endian::Big),
            _ => None,
        }
    }
}
