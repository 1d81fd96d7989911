//! The fixed parts of a ROS 2 action on the wire (rosidl's derived types, XCDR1): goal ids,
//! statuses, and the messages an action's handles build and read themselves. The goal,
//! feedback and result fields stay the caller's CDR: a goal or feedback follows a 16-byte
//! goal id (a multiple of CDR's largest alignment, so its fields are laid out as in a message
//! of their own and are spliced as bytes); a result follows a one-byte status, which shifts
//! its alignment, so results travel as whole `X_GetResult_Response` messages.
//!
//! These few fixed shapes are written here by hand (they are read on every status message);
//! the tests check every one against roam-msg's codec and the `action_msgs` definitions.
//! Pure, no I/O; every read is bounds checked and never panics.

use roam_msg::Endian;

use crate::service::wire::{WireError, ENCAPSULATION_LEN};

/// A goal's id: a UUID (`unique_identifier_msgs/UUID`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct GoalId(pub [u8; 16]);

impl GoalId {
    /// A random (version 4) UUID, as ROS 2 clients make them.
    pub fn random() -> Self {
        let mut b: [u8; 16] = rand::random();
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        GoalId(b)
    }

    pub fn is_zero(&self) -> bool {
        self.0 == [0; 16]
    }
}

impl std::fmt::Display for GoalId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// `builtin_interfaces/Time`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Time {
    pub sec: i32,
    pub nanosec: u32,
}

impl Time {
    /// The system clock now (what a ROS 2 node's clock says without simulated time).
    pub fn now() -> Self {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Time {
            sec: i32::try_from(d.as_secs()).unwrap_or(i32::MAX),
            nanosec: d.subsec_nanos(),
        }
    }

    pub fn is_zero(&self) -> bool {
        *self == Time::default()
    }
}

/// A goal's state (`action_msgs/GoalStatus`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i8)]
pub enum GoalStatus {
    Unknown = 0,
    Accepted = 1,
    Executing = 2,
    Canceling = 3,
    Succeeded = 4,
    Canceled = 5,
    Aborted = 6,
}

impl GoalStatus {
    pub fn from_code(code: i8) -> Option<Self> {
        Some(match code {
            0 => Self::Unknown,
            1 => Self::Accepted,
            2 => Self::Executing,
            3 => Self::Canceling,
            4 => Self::Succeeded,
            5 => Self::Canceled,
            6 => Self::Aborted,
            _ => return None,
        })
    }

    pub fn code(self) -> i8 {
        self as i8
    }

    /// Succeeded, canceled or aborted: the goal has its result.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Canceled | Self::Aborted)
    }
}

/// `action_msgs/GoalInfo`: a goal and when it was accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct GoalInfo {
    pub goal_id: GoalId,
    pub stamp: Time,
}

/// What a cancel request got (`action_msgs/srv/CancelGoal` response codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i8)]
pub enum CancelCode {
    None = 0,
    Rejected = 1,
    UnknownGoal = 2,
    GoalTerminated = 3,
}

/// `action_msgs/srv/CancelGoal` response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CancelResponse {
    pub code: CancelCode,
    pub goals_canceling: Vec<GoalInfo>,
}

/// Why bytes are not the action message expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActionWireError {
    #[error(transparent)]
    Wire(#[from] WireError),
    #[error("{what}: ends at byte {at}, {need} more needed")]
    Truncated {
        what: &'static str,
        at: usize,
        need: usize,
    },
    #[error("{what}: {count} elements cannot fit in {left} bytes")]
    Count {
        what: &'static str,
        count: u32,
        left: usize,
    },
    #[error("goal status code {0} is not one of action_msgs/GoalStatus's (0 to 6)")]
    Status(i8),
    #[error("cancel return code {0} is not one of action_msgs/srv/CancelGoal's (0 to 3)")]
    CancelCode(i8),
    #[error("{what}: {extra} bytes after the message")]
    Trailing { what: &'static str, extra: usize },
}

/// A CDR message being written: alignment counts from the end of the encapsulation header.
struct Writer {
    out: Vec<u8>,
    endian: Endian,
}

impl Writer {
    fn new(endian: Endian) -> Self {
        Self {
            out: endian.header().to_vec(),
            endian,
        }
    }

    fn align(&mut self, n: usize) {
        while !(self.out.len() - ENCAPSULATION_LEN).is_multiple_of(n) {
            self.out.push(0);
        }
    }

    fn u8(&mut self, v: u8) {
        self.out.push(v);
    }

    fn u32(&mut self, v: u32) {
        self.align(4);
        match self.endian {
            Endian::Little => self.out.extend_from_slice(&v.to_le_bytes()),
            Endian::Big => self.out.extend_from_slice(&v.to_be_bytes()),
        }
    }

    fn time(&mut self, t: Time) {
        self.u32(t.sec as u32);
        self.u32(t.nanosec);
    }

    fn goal_info(&mut self, g: &GoalInfo) {
        self.out.extend_from_slice(&g.goal_id.0);
        self.time(g.stamp);
    }

    fn len(&mut self, n: usize) {
        self.u32(u32::try_from(n).unwrap_or(u32::MAX));
    }
}

/// A CDR message being read, bounds checked.
struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
    endian: Endian,
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8], what: &'static str) -> Result<Self, ActionWireError> {
        if buf.len() < ENCAPSULATION_LEN {
            return Err(WireError::TooShort {
                what,
                len: buf.len(),
                need: ENCAPSULATION_LEN,
            }
            .into());
        }
        let endian = Endian::of(buf).ok_or(WireError::Encapsulation(buf[0], buf[1]))?;
        Ok(Self {
            buf,
            at: ENCAPSULATION_LEN,
            endian,
            what,
        })
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ActionWireError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.buf.len());
        let Some(end) = end else {
            return Err(ActionWireError::Truncated {
                what: self.what,
                at: self.buf.len(),
                need: self.at + n - self.buf.len(),
            });
        };
        let s = &self.buf[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn align(&mut self, n: usize) -> Result<(), ActionWireError> {
        let pad = (n - (self.at - ENCAPSULATION_LEN) % n) % n;
        self.take(pad).map(|_| ())
    }

    fn u8(&mut self) -> Result<u8, ActionWireError> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, ActionWireError> {
        self.align(4)?;
        let mut b = [0u8; 4];
        b.copy_from_slice(self.take(4)?);
        Ok(match self.endian {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        })
    }

    fn goal_id(&mut self) -> Result<GoalId, ActionWireError> {
        let mut b = [0u8; 16];
        b.copy_from_slice(self.take(16)?);
        Ok(GoalId(b))
    }

    fn time(&mut self) -> Result<Time, ActionWireError> {
        Ok(Time {
            sec: self.u32()? as i32,
            nanosec: self.u32()?,
        })
    }

    fn goal_info(&mut self) -> Result<GoalInfo, ActionWireError> {
        Ok(GoalInfo {
            goal_id: self.goal_id()?,
            stamp: self.time()?,
        })
    }

    fn status(&mut self) -> Result<GoalStatus, ActionWireError> {
        let code = self.u8()? as i8;
        GoalStatus::from_code(code).ok_or(ActionWireError::Status(code))
    }

    /// A sequence's length, refused when its elements (each at least `min` bytes) cannot fit
    /// in what is left: memory stays bounded by the input.
    fn count(&mut self, min: usize) -> Result<usize, ActionWireError> {
        let n = self.u32()?;
        let left = self.buf.len() - self.at;
        if (n as usize).saturating_mul(min) > left {
            return Err(ActionWireError::Count {
                what: self.what,
                count: n,
                left,
            });
        }
        Ok(n as usize)
    }

    fn finish(&self) -> Result<(), ActionWireError> {
        match self.buf.len() - self.at {
            // CDR messages may end with up to 3 bytes of padding (XCDR1 pads to 4).
            0..=3 => Ok(()),
            extra => Err(ActionWireError::Trailing {
                what: self.what,
                extra,
            }),
        }
    }
}

/// `[encapsulation][goal id][fields]` from a message of the fields (goal or feedback) alone.
pub fn prefix_goal_id(id: GoalId, body: &[u8]) -> Result<Vec<u8>, ActionWireError> {
    Reader::new(body, "CDR message")?;
    let mut out = Vec::with_capacity(body.len() + 16);
    out.extend_from_slice(&body[..ENCAPSULATION_LEN]);
    out.extend_from_slice(&id.0);
    out.extend_from_slice(&body[ENCAPSULATION_LEN..]);
    Ok(out)
}

/// The goal id and the fields after it (as a message of their own) of a `X_SendGoal_Request`
/// or `X_FeedbackMessage`; the fields go into `out`, replacing its contents.
pub fn split_goal_id(msg: &[u8], out: &mut Vec<u8>) -> Result<GoalId, ActionWireError> {
    let mut r = Reader::new(msg, "goal message")?;
    let id = r.goal_id()?;
    out.clear();
    out.extend_from_slice(&msg[..ENCAPSULATION_LEN]);
    out.extend_from_slice(&msg[r.at..]);
    Ok(id)
}

/// `X_SendGoal_Response`.
pub fn encode_send_goal_response(accepted: bool, stamp: Time, endian: Endian) -> Vec<u8> {
    let mut w = Writer::new(endian);
    w.u8(u8::from(accepted));
    w.time(stamp);
    w.out
}

pub fn decode_send_goal_response(msg: &[u8]) -> Result<(bool, Time), ActionWireError> {
    let mut r = Reader::new(msg, "SendGoal response")?;
    let accepted = r.u8()? != 0;
    let stamp = r.time()?;
    r.finish()?;
    Ok((accepted, stamp))
}

/// `X_GetResult_Request`.
pub fn encode_get_result_request(id: GoalId, endian: Endian) -> Vec<u8> {
    let mut w = Writer::new(endian);
    w.out.extend_from_slice(&id.0);
    w.out
}

pub fn decode_get_result_request(msg: &[u8]) -> Result<GoalId, ActionWireError> {
    let mut r = Reader::new(msg, "GetResult request")?;
    let id = r.goal_id()?;
    r.finish()?;
    Ok(id)
}

/// The status of an `X_GetResult_Response` (its first field).
pub fn result_status(msg: &[u8]) -> Result<GoalStatus, ActionWireError> {
    Reader::new(msg, "GetResult response")?.status()
}

/// Sets the status of an `X_GetResult_Response`.
pub fn set_result_status(msg: &mut [u8], status: GoalStatus) -> Result<(), ActionWireError> {
    let mut r = Reader::new(msg, "GetResult response")?;
    r.status()?;
    msg[ENCAPSULATION_LEN] = status.code() as u8;
    Ok(())
}

/// `action_msgs/srv/CancelGoal` request.
pub fn encode_cancel_request(goal: &GoalInfo, endian: Endian) -> Vec<u8> {
    let mut w = Writer::new(endian);
    w.goal_info(goal);
    w.out
}

pub fn decode_cancel_request(msg: &[u8]) -> Result<GoalInfo, ActionWireError> {
    let mut r = Reader::new(msg, "CancelGoal request")?;
    let g = r.goal_info()?;
    r.finish()?;
    Ok(g)
}

/// `action_msgs/srv/CancelGoal` response.
pub fn encode_cancel_response(resp: &CancelResponse, endian: Endian) -> Vec<u8> {
    let mut w = Writer::new(endian);
    w.u8(resp.code as i8 as u8);
    w.len(resp.goals_canceling.len());
    for g in &resp.goals_canceling {
        w.goal_info(g);
    }
    w.out
}

pub fn decode_cancel_response(msg: &[u8]) -> Result<CancelResponse, ActionWireError> {
    let mut r = Reader::new(msg, "CancelGoal response")?;
    let code = r.u8()? as i8;
    let code = match code {
        0 => CancelCode::None,
        1 => CancelCode::Rejected,
        2 => CancelCode::UnknownGoal,
        3 => CancelCode::GoalTerminated,
        c => return Err(ActionWireError::CancelCode(c)),
    };
    let n = r.count(24)?;
    let mut goals_canceling = Vec::with_capacity(n);
    for _ in 0..n {
        goals_canceling.push(r.goal_info()?);
    }
    r.finish()?;
    Ok(CancelResponse {
        code,
        goals_canceling,
    })
}

/// `action_msgs/GoalStatusArray`.
pub fn encode_status_array(goals: &[(GoalInfo, GoalStatus)], endian: Endian) -> Vec<u8> {
    let mut w = Writer::new(endian);
    w.len(goals.len());
    for (info, status) in goals {
        w.goal_info(info);
        w.u8(status.code() as u8);
    }
    w.out
}

pub fn decode_status_array(msg: &[u8]) -> Result<Vec<(GoalInfo, GoalStatus)>, ActionWireError> {
    let mut r = Reader::new(msg, "GoalStatusArray")?;
    let n = r.count(25)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let info = r.goal_info()?;
        out.push((info, r.status()?));
    }
    r.finish()?;
    Ok(out)
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
