//! placeholder
pub mod pki;
pub mod tls;
