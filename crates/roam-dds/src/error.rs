use std::ffi::CStr;

use cyclors::dds_return_t;

/// An error from CycloneDDS or from this crate's argument checks.
#[derive(Debug, thiserror::Error)]
pub enum DdsError {
    /// A CycloneDDS call returned a negative return code.
    #[error("{op} failed: {msg} ({code})")]
    Call {
        /// The C function that failed.
        op: &'static str,
        /// The `DDS_RETCODE_*` value.
        code: i32,
        /// CycloneDDS's text for the code.
        msg: String,
    },
    /// An argument this crate refused before calling CycloneDDS.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The domain already exists in this process with another configuration.
    #[error(
        "DDS domain {0} already exists in this process with a different configuration; \
         CycloneDDS has one configuration per domain and process"
    )]
    DomainConfigConflict(u32),
    /// The RustDDS stack ([`crate::rpc`]) refused an operation.
    #[error("{0}")]
    Rtps(String),
}

impl DdsError {
    /// The `DDS_RETCODE_*` value, for a failed CycloneDDS call.
    pub fn retcode(&self) -> Option<i32> {
        match self {
            DdsError::Call { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// True when a reliable write gave up because the readers did not keep up in time
    /// (`DDS_RETCODE_TIMEOUT`).
    pub fn is_timeout(&self) -> bool {
        self.retcode() == Some(cyclors::DDS_RETCODE_TIMEOUT)
    }
}

pub(crate) fn call_error(op: &'static str, code: dds_return_t) -> DdsError {
    // SAFETY: dds_strretcode accepts any value and returns a pointer to a static,
    // NUL-terminated string (or "Unknown return code"), never NULL.
    let msg = unsafe { CStr::from_ptr(cyclors::dds_strretcode(code)) }
        .to_string_lossy()
        .into_owned();
    DdsError::Call { op, code, msg }
}

/// Turns a `dds_return_t` (or an entity handle, which is negative on error) into a `Result`.
pub(crate) fn check(op: &'static str, ret: dds_return_t) -> Result<dds_return_t, DdsError> {
    if ret < 0 {
        Err(call_error(op, ret))
    } else {
        Ok(ret)
    }
}
