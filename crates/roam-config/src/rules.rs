//! A rules file (docs/rules.md) read and parsed, with errors that name the file, line and
//! column. Evaluating the rules is `roam_rules`'s; applying them, the proxy's and gateway's.

use std::path::Path;

use roam_rules::{ParseError, Rules};

/// Why a rules file was not taken.
#[derive(Debug, thiserror::Error)]
pub enum RulesFileError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{}:{}: {}", .source.line, .source.column, .source.kind)]
    Parse { path: String, source: ParseError },
}

/// Reads and parses a rules file.
pub fn load_file(path: &Path) -> Result<Rules, RulesFileError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| RulesFileError::Read {
        path: shown.clone(),
        source,
    })?;
    Rules::parse(&text).map_err(|source| RulesFileError::Parse {
        path: shown.clone(),
        source,
    })
}
