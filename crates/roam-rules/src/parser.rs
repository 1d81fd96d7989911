//! Tokens -> rules, with the checks that make a rule mean something (actions that belong to
//! its module, one verdict, a sane Limit rate, regexes that compile).
//!
//! ```text
//! file      := rule*
//! rule      := Module ':' term ('&&' term)* ';'
//! Module    := 'Filter' | 'Monitor' | 'Display'
//! term      := operand op value | action
//! operand   := 'TOPIC' | 'NODE' | 'MESSAGE' | 'TYPE' | 'REALM' | 'PEER'
//!            | 'FIELD' '(' (STRING | path) ')'
//! path      := WORD ('.' (WORD | NUMBER))*
//! op        := '==' | '!=' | 'CONTAINS' | 'IN' | 'MATCHES'
//! value     := STRING | NUMBER | '[' value (','? value)* ']'     (a list only after IN)
//! action    := 'Allow' | 'Drop' | 'Limit' NUMBER | 'Copy' STRING
//!            | 'Count' | 'Average' | 'Max' | 'Min' | 'Log' STRING
//! ```
//! Words are matched without regard to case (`topic`, `Topic` and `TOPIC` are the same).

use regex::RegexBuilder;

use crate::ast::{Action, Condition, Module, Operand, Rule, Test};
use crate::error::{ErrorKind, ParseError};
use crate::lexer::{lex, Tok, Token};

/// Largest rules file accepted.
pub const MAX_TEXT: usize = 1 << 20;
/// Memory one compiled regex may take.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

const OPERANDS: &str =
    "an operand (TOPIC, NODE, MESSAGE, FIELD(path), TYPE, REALM, PEER) or an action";
const OPS: &str = "an operator (==, !=, CONTAINS, IN, MATCHES)";
const FILTER_ACTIONS: &str = "Allow, Drop, Limit <rate>, Copy <topic>";
const MONITOR_ACTIONS: &str = "Count, Average, Max, Min, Log <file>";

/// Parses a whole rules file.
pub fn parse(text: &str) -> Result<Vec<Rule>, ParseError> {
    if text.len() > MAX_TEXT {
        return Err(ParseError {
            line: 1,
            column: 1,
            kind: ErrorKind::TooLarge(MAX_TEXT),
        });
    }
    let tokens = lex(text)?;
    let mut p = Parser {
        text,
        tokens: &tokens,
        pos: 0,
    };
    let mut rules = Vec::new();
    while p.pos < tokens.len() {
        rules.push(p.rule()?);
    }
    Ok(rules)
}

struct Parser<'a> {
    text: &'a str,
    tokens: &'a [Token],
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn next(&mut self) -> Option<&Token> {
        let t = self.tokens.get(self.pos);
        self.pos += 1;
        t
    }

    /// An error at the current token (or the end of the text).
    fn expected(&self, expected: &str) -> ParseError {
        match self.tokens.get(self.pos) {
            Some(t) => ParseError {
                line: t.line,
                column: t.column,
                kind: ErrorKind::Unexpected {
                    expected: expected.to_string(),
                    found: t.tok.describe(),
                },
            },
            None => {
                let (line, column) = end_of(self.text);
                ParseError {
                    line,
                    column,
                    kind: ErrorKind::Unexpected {
                        expected: expected.to_string(),
                        found: "the end of the file".into(),
                    },
                }
            }
        }
    }

    fn at(&self, t: &Token, kind: ErrorKind) -> ParseError {
        ParseError {
            line: t.line,
            column: t.column,
            kind,
        }
    }

    fn eat(&mut self, tok: &Tok, what: &str) -> Result<(), ParseError> {
        if self.peek().map(|t| &t.tok) == Some(tok) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.expected(what))
        }
    }

    fn word(&self) -> Option<String> {
        match self.peek().map(|t| &t.tok) {
            Some(Tok::Word(w)) => Some(w.to_ascii_lowercase()),
            _ => None,
        }
    }

    fn rule(&mut self) -> Result<Rule, ParseError> {
        let start = self
            .peek()
            .cloned()
            .ok_or_else(|| self.expected("a rule"))?;
        let module = match self.word().as_deref() {
            Some("filter") => Module::Filter,
            Some("monitor") => Module::Monitor,
            Some("display") => Module::Display,
            _ => return Err(self.expected("a module (Filter, Monitor, Display)")),
        };
        self.pos += 1;
        self.eat(&Tok::Colon, "`:` after the module")?;
        let (mut conditions, mut actions) = (Vec::new(), Vec::new());
        loop {
            self.term(module, &mut conditions, &mut actions)?;
            match self.peek().map(|t| &t.tok) {
                Some(Tok::AndAnd) => self.pos += 1,
                Some(Tok::Semi) => break,
                _ => return Err(self.expected("`&&` or `;`")),
            }
        }
        let end = self.next().map(|t| t.offset).unwrap_or(self.text.len());
        if module != Module::Filter && actions.is_empty() {
            return Err(ParseError {
                line: start.line,
                column: start.column,
                kind: ErrorKind::NoAction(module.name(), MONITOR_ACTIONS),
            });
        }
        Ok(Rule {
            module,
            conditions,
            actions,
            line: start.line,
            column: start.column,
            text: self.text[start.offset..end].trim().to_string(),
        })
    }

    fn term(
        &mut self,
        module: Module,
        conditions: &mut Vec<Condition>,
        actions: &mut Vec<Action>,
    ) -> Result<(), ParseError> {
        let Some(first) = self.peek().cloned() else {
            return Err(self.expected(OPERANDS));
        };
        let Some(word) = self.word() else {
            return Err(self.expected(OPERANDS));
        };
        let operand = match word.as_str() {
            "topic" => Some(Operand::Topic),
            "node" => Some(Operand::Node),
            "message" => Some(Operand::Message),
            "type" => Some(Operand::Type),
            "realm" => Some(Operand::Realm),
            "peer" => Some(Operand::Peer),
            "field" => None,
            _ => {
                let action = self.action(&word)?;
                return self.add_action(&first, module, action, actions);
            }
        };
        self.pos += 1;
        let operand = match operand {
            Some(o) => o,
            None => Operand::Field(self.field_path()?),
        };
        let test = self.test()?;
        conditions.push(Condition { operand, test });
        Ok(())
    }

    /// `(` STRING `)` or `(` a.b.0.c `)`.
    fn field_path(&mut self) -> Result<String, ParseError> {
        self.eat(&Tok::LParen, "`(` after FIELD")?;
        let path = match self.peek().map(|t| t.tok.clone()) {
            Some(Tok::Str(s)) => {
                self.pos += 1;
                s
            }
            Some(Tok::Word(w)) => {
                self.pos += 1;
                let mut path = w;
                while self.peek().map(|t| &t.tok) == Some(&Tok::Dot) {
                    self.pos += 1;
                    match self.peek().map(|t| t.tok.clone()) {
                        Some(Tok::Word(s)) | Some(Tok::Number(s)) => {
                            self.pos += 1;
                            path.push('.');
                            path.push_str(&s);
                        }
                        _ => return Err(self.expected("a field name after `.`")),
                    }
                }
                path
            }
            _ => return Err(self.expected("a field path such as header.frame_id")),
        };
        self.eat(&Tok::RParen, "`)` after the field path")?;
        Ok(path)
    }

    fn test(&mut self) -> Result<Test, ParseError> {
        let Some(op_tok) = self.peek().cloned() else {
            return Err(self.expected(OPS));
        };
        let op = match &op_tok.tok {
            Tok::EqEq => "==",
            Tok::NotEq => "!=",
            Tok::Word(w) => match w.to_ascii_lowercase().as_str() {
                "contains" => "CONTAINS",
                "in" => "IN",
                "matches" => "MATCHES",
                _ => return Err(self.expected(OPS)),
            },
            _ => return Err(self.expected(OPS)),
        };
        self.pos += 1;
        let value_tok = self.peek().cloned();
        let values = self.value()?;
        let list = matches!(value_tok.as_ref().map(|t| &t.tok), Some(Tok::LBracket));
        let one = |values: Vec<String>, op: &'static str| -> Result<String, ParseError> {
            match <[String; 1]>::try_from(values) {
                Ok([v]) if !list => Ok(v),
                _ => Err(self.at(&op_tok, ErrorKind::ListNotAllowed(op))),
            }
        };
        Ok(match op {
            "==" => Test::Equal(one(values, "==")?),
            "!=" => Test::NotEqual(one(values, "!=")?),
            "CONTAINS" => Test::Contains(one(values, "CONTAINS")?),
            "IN" => {
                if !list {
                    return Err(self.at(&op_tok, ErrorKind::InNeedsList));
                }
                Test::In(values)
            }
            _ => {
                let source = one(values, "MATCHES")?;
                let re = RegexBuilder::new(&source)
                    .size_limit(REGEX_SIZE_LIMIT)
                    .build()
                    .map_err(|e| {
                        let t = value_tok.as_ref().unwrap_or(&op_tok);
                        self.at(t, ErrorKind::BadRegex(e.to_string()))
                    })?;
                Test::Matches(re, source)
            }
        })
    }

    /// A value, or a bracketed list of them.
    fn value(&mut self) -> Result<Vec<String>, ParseError> {
        match self.peek().map(|t| t.tok.clone()) {
            Some(Tok::Str(s)) | Some(Tok::Number(s)) => {
                self.pos += 1;
                Ok(vec![s])
            }
            Some(Tok::LBracket) => {
                self.pos += 1;
                let mut list = Vec::new();
                loop {
                    match self.peek().map(|t| t.tok.clone()) {
                        Some(Tok::Str(s)) | Some(Tok::Number(s)) => {
                            self.pos += 1;
                            list.push(s);
                        }
                        Some(Tok::RBracket) if !list.is_empty() => {
                            self.pos += 1;
                            return Ok(list);
                        }
                        _ if list.is_empty() => return Err(self.expected("a string in the list")),
                        _ => return Err(self.expected("a string, `,` or `]`")),
                    }
                    if self.peek().map(|t| &t.tok) == Some(&Tok::Comma) {
                        self.pos += 1;
                    }
                }
            }
            _ => Err(self.expected("a value (a \"string\", a number or a [list])")),
        }
    }

    fn action(&mut self, word: &str) -> Result<Action, ParseError> {
        let action = match word {
            "allow" => Action::Allow,
            "drop" => Action::Drop,
            "count" => Action::Count,
            "average" => Action::Average,
            "max" => Action::Max,
            "min" => Action::Min,
            "limit" | "copy" | "log" => {
                self.pos += 1;
                return match (word, self.peek().map(|t| t.tok.clone())) {
                    ("limit", Some(Tok::Number(n))) => match n.parse::<f64>() {
                        Ok(r) if r > 0.0 && r <= 1e9 => {
                            self.pos += 1;
                            Ok(Action::Limit(r))
                        }
                        _ => Err(self.expected_here(ErrorKind::BadRate(n))),
                    },
                    ("limit", _) => Err(self.expected("a rate in messages per second after Limit")),
                    ("copy", Some(Tok::Str(s))) if !s.is_empty() => {
                        self.pos += 1;
                        Ok(Action::Copy(s))
                    }
                    ("copy", _) => Err(self.expected("a topic name in quotes after Copy")),
                    (_, Some(Tok::Str(s))) if !s.is_empty() => {
                        self.pos += 1;
                        Ok(Action::Log(s))
                    }
                    _ => Err(self.expected("a file name in quotes after Log")),
                };
            }
            _ => return Err(self.expected(OPERANDS)),
        };
        self.pos += 1;
        Ok(action)
    }

    fn expected_here(&self, kind: ErrorKind) -> ParseError {
        match self.peek() {
            Some(t) => self.at(t, kind),
            None => {
                let (line, column) = end_of(self.text);
                ParseError { line, column, kind }
            }
        }
    }

    fn add_action(
        &self,
        at: &Token,
        module: Module,
        action: Action,
        actions: &mut Vec<Action>,
    ) -> Result<(), ParseError> {
        let filter = matches!(
            action,
            Action::Allow | Action::Drop | Action::Limit(_) | Action::Copy(_)
        );
        if filter != (module == Module::Filter) {
            return Err(self.at(
                at,
                ErrorKind::WrongModule {
                    action: action.name(),
                    module: module.name(),
                    allowed: if module == Module::Filter {
                        FILTER_ACTIONS
                    } else {
                        MONITOR_ACTIONS
                    },
                },
            ));
        }
        let verdict = |a: &Action| matches!(a, Action::Allow | Action::Drop | Action::Limit(_));
        if verdict(&action) {
            if let Some(v) = actions.iter().find(|a| verdict(a)) {
                return Err(self.at(at, ErrorKind::TwoVerdicts(v.name())));
            }
        }
        actions.push(action);
        Ok(())
    }
}

/// The line and column just past the end of `text`.
fn end_of(text: &str) -> (usize, usize) {
    let line = text.matches('\n').count() + 1;
    let last = text.rsplit('\n').next().unwrap_or("");
    (line, last.chars().count() + 1)
}
