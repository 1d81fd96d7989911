//! Why a rules file was refused: always with the line and column it went wrong at.

/// A rules file that does not parse, located.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}, column {column}: {kind}")]
pub struct ParseError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    pub kind: ErrorKind,
}

/// What was wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ErrorKind {
    #[error("expected {expected}, found {found}")]
    Unexpected { expected: String, found: String },
    #[error("unterminated string")]
    UnterminatedString,
    #[error("unknown escape `\\{0}` in a string (\\\", \\\\, \\n and \\t are known)")]
    BadEscape(char),
    #[error("bad regular expression: {0}")]
    BadRegex(String),
    #[error("{action} is not an action of the {module} module (it takes {allowed})")]
    WrongModule {
        action: &'static str,
        module: &'static str,
        allowed: &'static str,
    },
    #[error("a rule takes one of Allow, Drop and Limit, and this one already has {0}")]
    TwoVerdicts(&'static str),
    #[error("a {0} rule needs an action ({1})")]
    NoAction(&'static str, &'static str),
    #[error("the rate of Limit must be a number of messages per second above 0 and at most 1e9, not {0}")]
    BadRate(String),
    #[error("IN takes a list such as [\"a\", \"b\"]")]
    InNeedsList,
    #[error("{0} takes one value, not a list (IN takes a list)")]
    ListNotAllowed(&'static str),
    #[error("the rules file is larger than {0} bytes")]
    TooLarge(usize),
}
