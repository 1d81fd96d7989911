//! Interface definition parsers: `.msg`/`.srv`/`.action` ([`msg`]) and rosidl `.idl` ([`idl`]).

pub mod derive;
pub mod idl;
mod idl_lex;
pub(crate) mod literal;
pub mod msg;

pub use msg::{parse_action, parse_msg, parse_srv};
