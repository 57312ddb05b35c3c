//! The selector stack language of Axebow tenant rules and resources.
//!
//! A selector is a JSON array read left to right: numbers, booleans, `null` and literal strings
//! are pushed; references (`$.environment.labels.tier`) are pushed unresolved and resolved by the
//! first operation that consumes them; operations (`::eq`) pop their arguments and push their
//! result. The selector holds when the value left on top is `true`; values below it are
//! ignored, as in the Axebow seed (its own example leaves three). Programs are
//! straight-line, so one evaluation takes at most one step per item; both the program length
//! and the steps are capped.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;
use utoipa::ToSchema;

/// Most items in one selector; longer programs are refused when they are stored.
pub const MAX_ITEMS: usize = 256;
/// Most steps one evaluation may take (each item is one step).
pub const MAX_STEPS: usize = MAX_ITEMS;

/// The roots a reference may start from.
pub const REFERENCE_ROOTS: [&str; 5] = ["this", "user", "service", "resource", "environment"];

/// One operation of the language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `::getor`: the top reference's value if it resolves, else the item below it.
    GetOr,
    /// `::exists`: whether the top reference resolves.
    Exists,
    /// `::dup`: duplicates the top.
    Dup,
    /// `::pop`: drops the top.
    Pop,
    /// `::swap`: swaps the top two.
    Swap,
    /// `::num`: the top as a decimal number, or 0.
    Num,
    /// `::bool`: anything but `null` and `false` is true.
    Bool,
    /// `::eq`.
    Eq,
    /// `::neq`.
    Neq,
    /// `::gt`.
    Gt,
    /// `::gte`.
    Gte,
    /// `::lt`.
    Lt,
    /// `::lte`.
    Lte,
    /// `::not`.
    Not,
    /// `::and`.
    And,
    /// `::nand`.
    Nand,
    /// `::or`.
    Or,
    /// `::nor`.
    Nor,
    /// `::xor`.
    Xor,
}

impl Op {
    /// Every operation with its spelling.
    pub const ALL: [(&'static str, Op); 19] = [
        ("::getor", Op::GetOr),
        ("::exists", Op::Exists),
        ("::dup", Op::Dup),
        ("::pop", Op::Pop),
        ("::swap", Op::Swap),
        ("::num", Op::Num),
        ("::bool", Op::Bool),
        ("::eq", Op::Eq),
        ("::neq", Op::Neq),
        ("::gt", Op::Gt),
        ("::gte", Op::Gte),
        ("::lt", Op::Lt),
        ("::lte", Op::Lte),
        ("::not", Op::Not),
        ("::and", Op::And),
        ("::nand", Op::Nand),
        ("::or", Op::Or),
        ("::nor", Op::Nor),
        ("::xor", Op::Xor),
    ];

    fn parse(text: &str) -> Option<Op> {
        Op::ALL.iter().find(|(name, _)| *name == text).map(|(_, op)| *op)
    }

    /// How many items the operation pops and pushes.
    fn arity(self) -> (usize, usize) {
        match self {
            Op::GetOr => (2, 1),
            Op::Exists | Op::Num | Op::Bool | Op::Not => (1, 1),
            Op::Dup => (1, 2),
            Op::Pop => (1, 0),
            Op::Swap => (2, 2),
            _ => (2, 1),
        }
    }
}

/// A selector program as stored: the JSON array the user wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(transparent)]
#[schema(value_type = Vec<Object>)]
pub struct Selector(pub Vec<Value>);

/// Why a selector cannot be stored; `item` is the index of the offending element.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("item {item}: {message}")]
pub struct SelectorError {
    /// Index of the offending item (the length of the program for an end-of-program error).
    pub item: usize,
    /// What is wrong.
    pub message: String,
}

/// Why an evaluation did not produce a boolean; the selector then fails.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("step {step}: {message}")]
pub struct EvalError {
    /// Index of the item being evaluated.
    pub step: usize,
    /// What went wrong.
    pub message: String,
}

/// A parsed item.
#[derive(Debug, Clone, PartialEq)]
enum Item {
    Literal(Value),
    Reference(Vec<String>),
    Op(Op),
}

fn parse_reference(text: &str) -> Option<Vec<String>> {
    let rest = text.strip_prefix("$.")?;
    let segments: Vec<String> = rest.split('.').map(str::to_string).collect();
    let root_ok = segments
        .first()
        .is_some_and(|root| REFERENCE_ROOTS.contains(&root.as_str()));
    (root_ok && segments.len() >= 2 && segments.iter().all(|s| !s.is_empty())).then_some(segments)
}

fn parse_item(index: usize, value: &Value) -> Result<Item, SelectorError> {
    let error = |message: String| SelectorError { item: index, message };
    match value {
        Value::String(text) if text.starts_with("::") => Op::parse(text)
            .map(Item::Op)
            .ok_or_else(|| error(format!("unknown operation {text:?}"))),
        Value::String(text) if text.starts_with("$.") => parse_reference(text)
            .map(Item::Reference)
            .ok_or_else(|| {
                error(format!(
                    "{text:?} is not a reference: it must be $.<root>.<field>[.<field>...] with root one of {}",
                    REFERENCE_ROOTS.join(", ")
                ))
            }),
        Value::Array(_) | Value::Object(_) => Err(error(
            "items must be numbers, booleans, null or strings".to_string(),
        )),
        literal => Ok(Item::Literal(literal.clone())),
    }
}

impl Selector {
    fn parse(&self) -> Result<Vec<Item>, SelectorError> {
        if self.0.len() > MAX_ITEMS {
            return Err(SelectorError {
                item: MAX_ITEMS,
                message: format!("a selector has at most {MAX_ITEMS} items"),
            });
        }
        self.0.iter().enumerate().map(|(i, v)| parse_item(i, v)).collect()
    }

    /// Checks the program: known operations, well-formed references limited to `roots`, no
    /// stack underflow, at least one value left at the end (the top decides).
    pub fn validate(&self, roots: &[&str]) -> Result<(), SelectorError> {
        let items = self.parse()?;
        let mut depth = 0usize;
        for (index, item) in items.iter().enumerate() {
            match item {
                Item::Literal(_) => depth += 1,
                Item::Reference(path) => {
                    if !roots.contains(&path[0].as_str()) {
                        return Err(SelectorError {
                            item: index,
                            message: format!(
                                "$.{} cannot be referenced here; allowed roots: {}",
                                path[0],
                                roots.join(", ")
                            ),
                        });
                    }
                    depth += 1;
                }
                Item::Op(op) => {
                    let (pops, pushes) = op.arity();
                    if depth < pops {
                        return Err(SelectorError {
                            item: index,
                            message: format!(
                                "{} needs {pops} values on the stack, finds {depth}",
                                op_name(*op)
                            ),
                        });
                    }
                    depth = depth - pops + pushes;
                }
            }
        }
        if depth == 0 {
            return Err(SelectorError {
                item: items.len(),
                message: "the program must leave a value on the stack: its top is the result".to_string(),
            });
        }
        Ok(())
    }

    /// Evaluates the program against `context` (an object with the reference roots as keys).
    /// `Ok(true)` when the selector holds; an error counts as not holding.
    pub fn evaluate(&self, context: &Value) -> Result<bool, EvalError> {
        let items = self.parse().map_err(|e| EvalError {
            step: e.item,
            message: e.message,
        })?;
        let mut machine = Machine {
            context,
            stack: Vec::new(),
        };
        for (step, item) in items.iter().enumerate() {
            if step >= MAX_STEPS {
                return Err(EvalError {
                    step,
                    message: format!("step limit of {MAX_STEPS} reached"),
                });
            }
            machine
                .step(item)
                .map_err(|message| EvalError { step, message })?;
        }
        // The top decides; what lies below it is ignored (the seed: "the value on top of the
        // stack is the result of the evaluation").
        let end = items.len();
        let top = machine
            .pop()
            .map_err(|message| EvalError { step: end, message })?;
        match machine.resolve(top) {
            Value::Bool(result) => Ok(result),
            other => Err(EvalError {
                step: end,
                message: format!("the result must be a boolean, is {other}"),
            }),
        }
    }
}

fn op_name(op: Op) -> &'static str {
    Op::ALL
        .iter()
        .find(|(_, candidate)| *candidate == op)
        .map_or("?", |(name, _)| name)
}

/// A value on the stack: resolved, or a reference not yet looked up.
#[derive(Debug, Clone)]
enum Slot {
    Value(Value),
    Reference(Vec<String>),
}

struct Machine<'a> {
    context: &'a Value,
    stack: Vec<Slot>,
}

fn truthy(value: &Value) -> bool {
    !matches!(value, Value::Null | Value::Bool(false))
}

fn as_number(value: &Value) -> f64 {
    match value {
        Value::Number(n) => n.as_f64().unwrap_or(0.0),
        Value::String(s) => s
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite())
            .unwrap_or(0.0),
        Value::Bool(true) => 1.0,
        _ => 0.0,
    }
}

fn number_value(n: f64) -> Value {
    serde_json::Number::from_f64(n).map_or(Value::from(0), Value::Number)
}

fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// `a OP b` for an ordering operation; mixed or unordered types compare false.
fn ordered(a: &Value, b: &Value, op: Op) -> bool {
    let ordering = match (a, b) {
        (Value::Number(x), Value::Number(y)) => x
            .as_f64()
            .and_then(|x| y.as_f64().and_then(|y| x.partial_cmp(&y))),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        _ => None,
    };
    let Some(ordering) = ordering else {
        return false;
    };
    match op {
        Op::Gt => ordering.is_gt(),
        Op::Gte => ordering.is_ge(),
        Op::Lt => ordering.is_lt(),
        _ => ordering.is_le(),
    }
}

impl Machine<'_> {
    fn pop(&mut self) -> Result<Slot, String> {
        self.stack.pop().ok_or_else(|| "stack underflow".to_string())
    }

    fn lookup(&self, path: &[String]) -> Option<Value> {
        let mut current = self.context;
        for segment in path {
            current = match current {
                Value::Object(map) => map.get(segment)?,
                Value::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(current.clone())
    }

    /// A missing reference reads as `null`.
    fn resolve(&self, slot: Slot) -> Value {
        match slot {
            Slot::Value(value) => value,
            Slot::Reference(path) => self.lookup(&path).unwrap_or(Value::Null),
        }
    }

    fn exists(&self, slot: &Slot) -> bool {
        match slot {
            Slot::Value(_) => true,
            Slot::Reference(path) => self.lookup(path).is_some(),
        }
    }

    fn pop_value(&mut self) -> Result<Value, String> {
        let slot = self.pop()?;
        Ok(self.resolve(slot))
    }

    fn push(&mut self, value: Value) {
        self.stack.push(Slot::Value(value));
    }

    fn step(&mut self, item: &Item) -> Result<(), String> {
        match item {
            Item::Literal(value) => self.push(value.clone()),
            Item::Reference(path) => self.stack.push(Slot::Reference(path.clone())),
            Item::Op(op) => self.operate(*op)?,
        }
        Ok(())
    }

    fn operate(&mut self, op: Op) -> Result<(), String> {
        match op {
            Op::GetOr => {
                let top = self.pop()?;
                let fallback = self.pop()?;
                if self.exists(&top) {
                    let value = self.resolve(top);
                    self.push(value);
                } else {
                    self.stack.push(fallback);
                }
            }
            Op::Exists => {
                let top = self.pop()?;
                let exists = self.exists(&top);
                self.push(Value::Bool(exists));
            }
            Op::Dup => {
                let top = self.pop()?;
                self.stack.push(top.clone());
                self.stack.push(top);
            }
            Op::Pop => {
                self.pop()?;
            }
            Op::Swap => {
                let top = self.pop()?;
                let below = self.pop()?;
                self.stack.push(top);
                self.stack.push(below);
            }
            Op::Num => {
                let value = self.pop_value()?;
                self.push(number_value(as_number(&value)));
            }
            Op::Bool => {
                let value = self.pop_value()?;
                self.push(Value::Bool(truthy(&value)));
            }
            Op::Not => {
                let value = self.pop_value()?;
                self.push(Value::Bool(!truthy(&value)));
            }
            binary => {
                let b = self.pop_value()?;
                let a = self.pop_value()?;
                let result = match binary {
                    Op::Eq => equal(&a, &b),
                    Op::Neq => !equal(&a, &b),
                    Op::Gt | Op::Gte | Op::Lt | Op::Lte => ordered(&a, &b, binary),
                    Op::And => truthy(&a) && truthy(&b),
                    Op::Nand => !(truthy(&a) && truthy(&b)),
                    Op::Or => truthy(&a) || truthy(&b),
                    Op::Nor => !(truthy(&a) || truthy(&b)),
                    _ => truthy(&a) != truthy(&b),
                };
                self.push(Value::Bool(result));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn selector(items: Value) -> Selector {
        serde_json::from_value(items).expect("a selector")
    }

    fn context() -> Value {
        json!({
            "environment": { "labels": { "tier": "prod", "zone": 3 }, "name": "e1" },
            "this": { "name": "acme" },
        })
    }

    #[test]
    fn comparisons_read_references_and_literals() {
        let cases = [
            (json!(["$.environment.labels.tier", "prod", "::eq"]), true),
            (json!(["$.environment.labels.tier", "dev", "::eq"]), false),
            (json!(["$.environment.labels.tier", "dev", "::neq"]), true),
            (json!(["$.environment.labels.zone", 2, "::gt"]), true),
            (json!(["$.environment.labels.zone", 3, "::gte"]), true),
            (json!(["$.environment.labels.zone", 3, "::lt"]), false),
            (json!(["$.environment.labels.zone", "3", "::lte"]), false),
            (json!(["$.environment.labels.zone", "3", "::num", "::eq"]), true),
            (json!(["$.environment.labels.missing", "::exists"]), false),
            (json!(["$.environment.labels.tier", "::exists"]), true),
            (
                json!(["dev", "$.environment.labels.missing", "::getor", "dev", "::eq"]),
                true,
            ),
            (
                json!(["dev", "$.environment.labels.tier", "::getor", "prod", "::eq"]),
                true,
            ),
            (json!([true, false, "::and"]), false),
            (json!([true, false, "::or"]), true),
            (json!([true, false, "::nand"]), true),
            (json!([false, false, "::nor"]), true),
            (json!([true, true, "::xor"]), false),
            (json!([null, "::not"]), true),
            (json!(["x", "::bool"]), true),
            (json!([1, 2, "::swap", "::gt"]), true),
            (json!([1, "::dup", "::eq"]), true),
            (json!([true, 5, "::pop"]), true),
            (json!(["abc", "abd", "::lt"]), true),
        ];
        for (program, expected) in cases {
            let selector = selector(program.clone());
            selector.validate(&REFERENCE_ROOTS).expect("valid");
            assert_eq!(selector.evaluate(&context()), Ok(expected), "{program}");
        }
    }

    #[test]
    fn bad_programs_are_refused_naming_the_item() {
        let cases = [
            (json!(["$.environment.tier", "::frob"]), 1, "unknown operation"),
            (json!(["$.deployment.x", true, "::eq"]), 0, "not a reference"),
            (json!(["$.environment", true, "::eq"]), 0, "not a reference"),
            (json!([true, "::and"]), 1, "needs 2 values"),
            (json!([[1], true, "::eq"]), 0, "items must be"),
            (json!([]), 0, "must leave a value"),
            (json!([1, "::pop"]), 2, "must leave a value"),
        ];
        for (program, item, message) in cases {
            let error = selector(program.clone())
                .validate(&REFERENCE_ROOTS)
                .expect_err("refused");
            assert_eq!(error.item, item, "{program}");
            assert!(error.message.contains(message), "{program}: {error}");
        }
        let user = selector(json!(["$.user.role", "admin", "::eq"]));
        assert!(user.validate(&["this", "environment"]).is_err());
        let long = Selector(vec![json!(true); MAX_ITEMS + 1]);
        assert!(long.validate(&REFERENCE_ROOTS).is_err());
    }

    #[test]
    fn the_top_decides_whatever_lies_below_it() {
        for (program, expected) in [
            (json!([1, true]), true),
            (json!([1, false]), false),
            (json!([true, true]), true),
            (json!(["x", 2, "$.environment.labels.tier", "prod", "::eq"]), true),
        ] {
            let selector = selector(program.clone());
            selector.validate(&REFERENCE_ROOTS).expect("valid");
            assert_eq!(selector.evaluate(&context()), Ok(expected), "{program}");
        }
    }

    #[test]
    fn a_top_that_is_not_a_boolean_fails() {
        // The seed's own example is valid; its top is not a boolean, so it does not hold.
        let example = selector(json!([1, 2, "$.this.that.there.where", "::dup", "::getor"]));
        example
            .validate(&REFERENCE_ROOTS)
            .expect("the seed's example is a valid program");
        let error = example.evaluate(&context()).expect_err("a number on top");
        assert!(error.message.contains("boolean"), "{error}");
        let error = selector(json!(["$.environment.labels.tier"]))
            .evaluate(&context())
            .expect_err("a string");
        assert!(error.message.contains("boolean"), "{error}");
    }

    fn item() -> impl Strategy<Value = Value> {
        let ops: Vec<Value> = Op::ALL.iter().map(|(name, _)| json!(name)).collect();
        prop_oneof![
            any::<i64>().prop_map(|n| json!(n)),
            any::<f64>().prop_map(|n| json!(n)),
            any::<bool>().prop_map(|b| json!(b)),
            Just(Value::Null),
            prop::sample::select(ops),
            prop::sample::select(vec![
                json!("$.environment.labels.tier"),
                json!("$.environment.labels.zone"),
                json!("$.this.name"),
                json!("$.environment"),
                json!("$.user.x.y.z"),
                json!("$."),
                json!("::"),
                json!("prod"),
            ]),
            ".{0,12}".prop_map(Value::String),
            Just(json!([1])),
            Just(json!({"a": 1})),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// No input panics; evaluation stays within the step limit; a program that validates
        /// never underflows.
        #[test]
        fn any_program_evaluates_without_panicking(items in prop::collection::vec(item(), 0..(MAX_ITEMS + 8))) {
            let selector = Selector(items);
            let valid = selector.validate(&REFERENCE_ROOTS).is_ok();
            let result = selector.evaluate(&context());
            if let Err(error) = &result {
                prop_assert!(error.step <= MAX_STEPS);
                if valid {
                    prop_assert!(!error.message.contains("underflow"), "{error}");
                    prop_assert!(error.message.contains("boolean"), "{error}");
                }
            }
        }
    }
}
