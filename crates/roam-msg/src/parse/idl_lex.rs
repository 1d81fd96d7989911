//! Tokens of rosidl `.idl` text: names, numbers, string literals (adjacent ones joined, as
//! `@verbatim` comments are split over lines), punctuation; comments and preprocessor lines
//! dropped.

use crate::error::ParseError;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    Ident(String),
    Str(String),
    Num(String),
    Punct(char),
}

pub(crate) fn tokenize(text: &str) -> Result<Vec<(Tok, usize)>, ParseError> {
    let err = |line: usize, message: String| ParseError {
        ty: "idl".into(),
        line,
        message,
    };
    let chars: Vec<char> = text.chars().collect();
    let (mut i, mut line, mut out) = (0usize, 1usize, Vec::new());
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            '#' => {
                // Preprocessor lines (#include): nothing a type needs.
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                i += 2;
                while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                    line += (chars[i] == '\n') as usize;
                    i += 1;
                }
                i += 2;
            }
            '"' => {
                let start = line;
                let mut s = String::new();
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err(err(start, "unterminated string literal".into())),
                        Some('"') => break,
                        Some('\\') => {
                            let e = chars
                                .get(i + 1)
                                .copied()
                                .ok_or_else(|| err(line, "unterminated string literal".into()))?;
                            s.push(match e {
                                'n' => '\n',
                                't' => '\t',
                                'r' => '\r',
                                '0' => '\0',
                                other => other,
                            });
                            i += 2;
                        }
                        Some(&ch) => {
                            line += (ch == '\n') as usize;
                            s.push(ch);
                            i += 1;
                        }
                    }
                }
                i += 1;
                // Adjacent literals concatenate ("a" "b").
                match out.last_mut() {
                    Some((Tok::Str(prev), _)) => prev.push_str(&s),
                    _ => out.push((Tok::Str(s), start)),
                }
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                out.push((Tok::Ident(chars[start..i].iter().collect()), line));
            }
            c if c.is_ascii_digit() || c == '.' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric()
                        || chars[i] == '.'
                        || ((chars[i] == '-' || chars[i] == '+')
                            && matches!(chars[i - 1], 'e' | 'E')))
                {
                    i += 1;
                }
                out.push((Tok::Num(chars[start..i].iter().collect()), line));
            }
            '{' | '}' | ';' | '<' | '>' | ',' | '=' | '(' | ')' | '[' | ']' | '@' | ':' | '-'
            | '+' => {
                out.push((Tok::Punct(c), line));
                i += 1;
            }
            other => return Err(err(line, format!("unexpected character {other:?}"))),
        }
    }
    Ok(out)
}
