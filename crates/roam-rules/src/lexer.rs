//! Text -> tokens, each with the line and column (1-based, in characters) where it starts.

use crate::error::{ErrorKind, ParseError};

/// One token of a rules file.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// A word: a module, operand, operator or action name, or a field path segment.
    Word(String),
    /// A double-quoted string, escapes resolved.
    Str(String),
    /// A number as written (kept as text: `FIELD(x) == 3` compares with the text `3`).
    Number(String),
    Colon,
    Semi,
    AndAnd,
    EqEq,
    NotEq,
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
    Dot,
}

impl Tok {
    /// How an error message shows the token.
    pub fn describe(&self) -> String {
        match self {
            Tok::Word(w) => format!("`{w}`"),
            Tok::Str(s) => format!("the string {s:?}"),
            Tok::Number(n) => format!("the number {n}"),
            Tok::Colon => "`:`".into(),
            Tok::Semi => "`;`".into(),
            Tok::AndAnd => "`&&`".into(),
            Tok::EqEq => "`==`".into(),
            Tok::NotEq => "`!=`".into(),
            Tok::LParen => "`(`".into(),
            Tok::RParen => "`)`".into(),
            Tok::LBracket => "`[`".into(),
            Tok::RBracket => "`]`".into(),
            Tok::Comma => "`,`".into(),
            Tok::Dot => "`.`".into(),
        }
    }
}

/// A token and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub line: usize,
    pub column: usize,
    /// Byte offset of its first character in the text.
    pub offset: usize,
}

/// Splits `text` into tokens; `#` starts a comment that runs to the end of the line.
pub fn lex(text: &str) -> Result<Vec<Token>, ParseError> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    let (mut line, mut column) = (1usize, 1usize);
    while let Some(&(offset, c)) = chars.peek() {
        let (l, col) = (line, column);
        let at = |tok| Token {
            tok,
            line: l,
            column: col,
            offset,
        };
        let err = |kind| ParseError {
            line: l,
            column: col,
            kind,
        };
        chars.next();
        column += 1;
        match c {
            '\n' => {
                line += 1;
                column = 1;
            }
            c if c.is_whitespace() => {}
            '#' => {
                while let Some(&(_, c)) = chars.peek() {
                    if c == '\n' {
                        break;
                    }
                    chars.next();
                    column += 1;
                }
            }
            ':' => out.push(at(Tok::Colon)),
            ';' => out.push(at(Tok::Semi)),
            '(' => out.push(at(Tok::LParen)),
            ')' => out.push(at(Tok::RParen)),
            '[' => out.push(at(Tok::LBracket)),
            ']' => out.push(at(Tok::RBracket)),
            ',' => out.push(at(Tok::Comma)),
            '.' => out.push(at(Tok::Dot)),
            '&' | '=' | '!' => {
                let (second, tok) = match c {
                    '&' => ('&', Tok::AndAnd),
                    '=' => ('=', Tok::EqEq),
                    _ => ('=', Tok::NotEq),
                };
                if chars.peek().map(|&(_, n)| n) == Some(second) {
                    chars.next();
                    column += 1;
                    out.push(at(tok));
                } else {
                    return Err(err(ErrorKind::Unexpected {
                        expected: format!("`{c}{second}`"),
                        found: format!("`{c}`"),
                    }));
                }
            }
            '"' => {
                let mut s = String::new();
                loop {
                    let Some((_, c)) = chars.next() else {
                        return Err(err(ErrorKind::UnterminatedString));
                    };
                    column += 1;
                    match c {
                        '"' => break,
                        '\n' => return Err(err(ErrorKind::UnterminatedString)),
                        '\\' => {
                            let Some((_, e)) = chars.next() else {
                                return Err(err(ErrorKind::UnterminatedString));
                            };
                            column += 1;
                            s.push(match e {
                                '"' => '"',
                                '\\' => '\\',
                                'n' => '\n',
                                't' => '\t',
                                other => {
                                    return Err(ParseError {
                                        line: l,
                                        column: column - 2,
                                        kind: ErrorKind::BadEscape(other),
                                    })
                                }
                            });
                        }
                        c => s.push(c),
                    }
                }
                out.push(at(Tok::Str(s)));
            }
            c if c.is_ascii_digit() => {
                let mut n = String::from(c);
                let mut dot = false;
                while let Some(&(_, d)) = chars.peek() {
                    let next_is_digit = {
                        let mut ahead = chars.clone();
                        ahead.next();
                        ahead.peek().is_some_and(|&(_, x)| x.is_ascii_digit())
                    };
                    if d.is_ascii_digit() || (d == '.' && !dot && next_is_digit) {
                        dot |= d == '.';
                        n.push(d);
                        chars.next();
                        column += 1;
                    } else {
                        break;
                    }
                }
                out.push(at(Tok::Number(n)));
            }
            c if c.is_alphabetic() || c == '_' => {
                let mut w = String::from(c);
                while let Some(&(_, d)) = chars.peek() {
                    if d.is_alphanumeric() || d == '_' {
                        w.push(d);
                        chars.next();
                        column += 1;
                    } else {
                        break;
                    }
                }
                out.push(at(Tok::Word(w)));
            }
            other => {
                return Err(err(ErrorKind::Unexpected {
                    expected: "a rule".into(),
                    found: format!("`{other}`"),
                }))
            }
        }
    }
    Ok(out)
}
