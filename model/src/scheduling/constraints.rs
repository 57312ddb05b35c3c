//! Krake's constraint languages (Krake 1.0.1's `krake/controller/scheduler/constraints.py`,
//! https://gitlab.com/rak-n-rok/krake), parsed into values a pure scheduler evaluates.
//!
//! **Label constraints**: `k is v`, `k = v`, `k == v` (equal); `k is not v`, `k != v` (not
//! equal); `k in (v1, v2)`; `k not in (v1, v2)`. Keys and values are runs of characters other
//! than space, tab, `,`, `(`, `)`, `=` and `!`. As in Krake, a label the cluster does not have
//! makes **every** operator false, `!=` and `not in` included.
//!
//! **Metric constraints**: `m is v`, `m = v`, `m == v`; `m is not v`, `m != v`; `m > v`, `m gt v`,
//! `m greater than v`; `m >= v`, `m => v`, `m gte v`, `m greater than or equal v`; `m < v`,
//! `m lt v`, `m lesser than v` (and `less than`, which Krake documents but does not accept);
//! `m <= v`, `m =< v`, `m lte v`, `m lesser than or equal v` (and `less than or equal`). The
//! value is a number. Krake compares it with the metric's weight times its normalised value (a
//! quirk); Drover compares it with the metric's value as its provider reports it.
//!
//! Errors name the expression and what is wrong with it.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Why an expression is not a constraint.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("constraint {expression:?}: {problem}")]
pub struct ConstraintError {
    /// The expression as written.
    pub expression: String,
    /// What is wrong.
    pub problem: String,
}

/// Most characters of one expression.
const MAX_EXPRESSION: usize = 512;

/// A token of an expression.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    /// `=`, `==`, `!=`, `>`, `>=`, `=>`, `<`, `<=`, `=<`.
    Symbol(&'static str),
    Open,
    Close,
    Comma,
}

fn tokens(text: &str, metric: bool) -> Result<Vec<Token>, String> {
    let special = |c: char| c.is_whitespace() || ",()=!".contains(c) || (metric && "<>".contains(c));
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        let next = chars.get(i + 1).copied();
        let symbol = match (c, next) {
            (' ' | '\t', _) => {
                i += 1;
                continue;
            }
            ('(', _) => Some((Token::Open, 1)),
            (')', _) => Some((Token::Close, 1)),
            (',', _) => Some((Token::Comma, 1)),
            ('=', Some('=')) => Some((Token::Symbol("=="), 2)),
            ('!', Some('=')) => Some((Token::Symbol("!="), 2)),
            ('=', Some('>')) if metric => Some((Token::Symbol(">="), 2)),
            ('=', Some('<')) if metric => Some((Token::Symbol("<="), 2)),
            ('>', Some('=')) if metric => Some((Token::Symbol(">="), 2)),
            ('<', Some('=')) if metric => Some((Token::Symbol("<="), 2)),
            ('=', _) => Some((Token::Symbol("="), 1)),
            ('>', _) if metric => Some((Token::Symbol(">"), 1)),
            ('<', _) if metric => Some((Token::Symbol("<"), 1)),
            ('!', _) => return Err("`!` must be followed by `=`".into()),
            _ if c.is_whitespace() => return Err("only spaces and tabs may separate words".into()),
            _ => None,
        };
        if let Some((token, width)) = symbol {
            out.push(token);
            i += width;
            continue;
        }
        let start = i;
        while chars.get(i).is_some_and(|c| !special(*c)) {
            i += 1;
        }
        out.push(Token::Word(chars[start..i].iter().collect()));
    }
    Ok(out)
}

/// A cursor over tokens.
struct Cursor {
    tokens: Vec<Token>,
    at: usize,
}

impl Cursor {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token
    }

    fn word(&mut self, what: &str) -> Result<String, String> {
        match self.next() {
            Some(Token::Word(word)) => Ok(word),
            _ => Err(format!("expected {what}")),
        }
    }

    /// Whether the next words are exactly `words` (consumed if so).
    fn words(&mut self, words: &[&str]) -> bool {
        let matches = words.iter().enumerate().all(|(k, w)| {
            matches!(self.tokens.get(self.at + k), Some(Token::Word(x)) if x.eq_ignore_ascii_case(w))
        });
        if matches {
            self.at += words.len();
        }
        matches
    }

    fn done(&self) -> Result<(), String> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err("unexpected text after the constraint".into()),
        }
    }

    /// `( v1, v2, ... )`.
    fn list(&mut self) -> Result<Vec<String>, String> {
        if self.next() != Some(Token::Open) {
            return Err("expected `(` and a list of values".into());
        }
        let mut values = vec![self.word("a value")?];
        loop {
            match self.next() {
                Some(Token::Comma) => values.push(self.word("a value after `,`")?),
                Some(Token::Close) => return Ok(values),
                _ => return Err("expected `,` or `)`".into()),
            }
        }
    }
}

/// What a label constraint asks of a label.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum LabelTest {
    /// Equal to.
    Equal(String),
    /// Not equal to.
    NotEqual(String),
    /// One of.
    In(Vec<String>),
    /// None of.
    NotIn(Vec<String>),
}

/// A parsed label constraint, kept with the expression it was written as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelConstraint {
    /// The expression as written.
    pub expression: String,
    /// The label.
    pub key: String,
    /// The test.
    pub test: LabelTest,
}

fn invalid(expression: &str, problem: impl Into<String>) -> ConstraintError {
    ConstraintError {
        expression: expression.chars().take(80).collect(),
        problem: problem.into(),
    }
}

fn checked(expression: &str) -> Result<(), ConstraintError> {
    if expression.chars().count() > MAX_EXPRESSION {
        return Err(invalid(
            expression,
            format!("at most {MAX_EXPRESSION} characters"),
        ));
    }
    if expression.chars().any(|c| c != '\t' && c.is_control()) {
        return Err(invalid(expression, "control characters are not allowed"));
    }
    Ok(())
}

impl LabelConstraint {
    /// Parses `expression`.
    pub fn parse(expression: &str) -> Result<Self, ConstraintError> {
        checked(expression)?;
        let parse = || -> Result<(String, LabelTest), String> {
            let mut cursor = Cursor {
                tokens: tokens(expression, false)?,
                at: 0,
            };
            let key = cursor.word("a label name")?;
            let test =
                if cursor.words(&["is", "not"]) {
                    LabelTest::NotEqual(cursor.word("a value after `is not`")?)
                } else if cursor.words(&["is"]) {
                    LabelTest::Equal(cursor.word("a value after `is`")?)
                } else if cursor.words(&["not", "in"]) {
                    LabelTest::NotIn(cursor.list()?)
                } else if cursor.words(&["in"]) {
                    LabelTest::In(cursor.list()?)
                } else {
                    match cursor.next() {
                        Some(Token::Symbol("=" | "==")) => LabelTest::Equal(cursor.word("a value")?),
                        Some(Token::Symbol("!=")) => LabelTest::NotEqual(cursor.word("a value")?),
                        _ => return Err(
                            "expected `is`, `=`, `==`, `is not`, `!=`, `in` or `not in` after the label name"
                                .into(),
                        ),
                    }
                };
            cursor.done()?;
            Ok((key, test))
        };
        let (key, test) = parse().map_err(|problem| invalid(expression, problem))?;
        Ok(Self {
            expression: expression.to_string(),
            key,
            test,
        })
    }

    /// Whether `labels` satisfy it (a missing label satisfies nothing).
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let Some(value) = labels.get(&self.key) else {
            return false;
        };
        match &self.test {
            LabelTest::Equal(v) => value == v,
            LabelTest::NotEqual(v) => value != v,
            LabelTest::In(vs) => vs.contains(value),
            LabelTest::NotIn(vs) => !vs.contains(value),
        }
    }
}

impl fmt::Display for LabelConstraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.expression)
    }
}

/// How a metric constraint compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Comparison {
    /// `==`.
    Equal,
    /// `!=`.
    NotEqual,
    /// `>`.
    Greater,
    /// `>=`.
    GreaterOrEqual,
    /// `<`.
    Less,
    /// `<=`.
    LessOrEqual,
}

/// A parsed metric constraint.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricConstraint {
    /// The expression as written.
    pub expression: String,
    /// The metric's name.
    pub metric: String,
    /// How it compares.
    pub comparison: Comparison,
    /// With what.
    pub value: f64,
}

impl MetricConstraint {
    /// Parses `expression`.
    pub fn parse(expression: &str) -> Result<Self, ConstraintError> {
        checked(expression)?;
        let parse = || -> Result<(String, Comparison, f64), String> {
            let mut cursor = Cursor {
                tokens: tokens(expression, true)?,
                at: 0,
            };
            let metric = cursor.word("a metric name")?;
            use Comparison::*;
            let comparison = if cursor.words(&["is", "not"]) {
                NotEqual
            } else if cursor.words(&["is"]) {
                Equal
            } else if cursor.words(&["greater", "than", "or", "equal"]) {
                GreaterOrEqual
            } else if cursor.words(&["greater", "than"]) {
                Greater
            } else if cursor.words(&["lesser", "than", "or", "equal"])
                || cursor.words(&["less", "than", "or", "equal"])
            {
                LessOrEqual
            } else if cursor.words(&["lesser", "than"]) || cursor.words(&["less", "than"]) {
                Less
            } else if cursor.words(&["gte"]) {
                GreaterOrEqual
            } else if cursor.words(&["gt"]) {
                Greater
            } else if cursor.words(&["lte"]) {
                LessOrEqual
            } else if cursor.words(&["lt"]) {
                Less
            } else {
                match cursor.next() {
                    Some(Token::Symbol("=" | "==")) => Equal,
                    Some(Token::Symbol("!=")) => NotEqual,
                    Some(Token::Symbol(">")) => Greater,
                    Some(Token::Symbol(">=")) => GreaterOrEqual,
                    Some(Token::Symbol("<")) => Less,
                    Some(Token::Symbol("<=")) => LessOrEqual,
                    _ => return Err("expected a comparison (`=`, `!=`, `>`, `>=`, `<`, `<=` or their words) after the metric name".into()),
                }
            };
            let text = cursor.word("a number")?;
            let value: f64 = text
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite())
                .ok_or_else(|| format!("{text:?} is not a number"))?;
            cursor.done()?;
            Ok((metric, comparison, value))
        };
        let (metric, comparison, value) = parse().map_err(|problem| invalid(expression, problem))?;
        Ok(Self {
            expression: expression.to_string(),
            metric,
            comparison,
            value,
        })
    }

    /// Whether a metric's `value` satisfies it.
    pub fn holds(&self, value: f64) -> bool {
        use Comparison::*;
        match self.comparison {
            Equal => value == self.value,
            NotEqual => value != self.value,
            Greater => value > self.value,
            GreaterOrEqual => value >= self.value,
            Less => value < self.value,
            LessOrEqual => value <= self.value,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn every_label_operator_and_missing_labels() {
        let de = labels(&[("location", "DE")]);
        let sk = labels(&[("location", "SK")]);
        let none = labels(&[("tier", "gold")]);
        // (expression, on DE, on SK, on a cluster without the label)
        let table = [
            ("location is DE", true, false, false),
            ("location = DE", true, false, false),
            ("location == DE", true, false, false),
            ("location=DE", true, false, false),
            ("  location\t==  DE ", true, false, false),
            ("location is not DE", false, true, false),
            ("location != DE", false, true, false),
            ("location in (DE, SK)", true, true, false),
            ("location in (SK)", false, true, false),
            ("location not in (DE, AT)", false, true, false),
            ("location not in (FR)", true, true, false),
        ];
        for (expression, on_de, on_sk, on_none) in table {
            let constraint = LabelConstraint::parse(expression).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                (
                    constraint.matches(&de),
                    constraint.matches(&sk),
                    constraint.matches(&none)
                ),
                (on_de, on_sk, on_none),
                "{expression}"
            );
        }
    }

    #[test]
    fn bad_label_expressions_are_named() {
        for (expression, needle) in [
            ("", "a label name"),
            ("location", "expected `is`"),
            ("location is", "a value after `is`"),
            ("location in DE", "expected `(`"),
            ("location in (DE SK)", "expected `,` or `)`"),
            ("location in (DE,)", "a value after `,`"),
            ("location ! DE", "`!` must be followed by `=`"),
            ("location is DE extra", "unexpected text"),
            ("location > DE", "expected `is`"),
        ] {
            let error = LabelConstraint::parse(expression).unwrap_err();
            assert!(error.to_string().contains(needle), "{expression}: {error}");
            assert!(error.to_string().contains(&format!("{expression:?}")), "{error}");
        }
        assert!(LabelConstraint::parse(&"a".repeat(600)).is_err());
    }

    #[test]
    fn every_metric_operator() {
        // (expression, at 0.5, at 0.7)
        let table = [
            ("load is 0.5", true, false),
            ("load = 0.5", true, false),
            ("load == 0.5", true, false),
            ("load is not 0.5", false, true),
            ("load != 0.5", false, true),
            ("load > 0.5", false, true),
            ("load gt 0.5", false, true),
            ("load greater than 0.5", false, true),
            ("load >= 0.5", true, true),
            ("load => 0.5", true, true),
            ("load gte 0.5", true, true),
            ("load greater than or equal 0.5", true, true),
            ("load < 0.7", true, false),
            ("load lt 0.7", true, false),
            ("load lesser than 0.7", true, false),
            ("load less than 0.7", true, false),
            ("load <= 0.5", true, false),
            ("load =< 0.5", true, false),
            ("load lte 0.5", true, false),
            ("load lesser than or equal 0.5", true, false),
            ("load less than or equal 0.5", true, false),
            ("load<=0.5", true, false),
        ];
        for (expression, at_half, at_seven) in table {
            let constraint = MetricConstraint::parse(expression).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                (constraint.holds(0.5), constraint.holds(0.7)),
                (at_half, at_seven),
                "{expression}"
            );
        }
        for (expression, needle) in [
            ("load", "expected a comparison"),
            ("load > high", "not a number"),
            ("load > NaN", "not a number"),
            ("load > 1 2", "unexpected text"),
            ("load >", "a number"),
        ] {
            let error = MetricConstraint::parse(expression).unwrap_err();
            assert!(error.to_string().contains(needle), "{expression}: {error}");
        }
    }
}
