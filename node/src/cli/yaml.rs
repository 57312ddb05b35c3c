//! `-o yaml`: JSON answers printed as block YAML, kubectl's way. A string is left unquoted
//! only when no YAML reader could take it for anything else; every other string is
//! double-quoted, so YAML 1.1 readers (PyYAML, go-yaml v2) and YAML 1.2 readers alike read back
//! the same strings: times (`"2024-01-01T00:00:00Z"`, which YAML 1.1 makes a timestamp),
//! `"yes"`/`"no"`/`"on"`/`"off"` (booleans in YAML 1.1), `"1.0"`, `"0777"`, `"1_000"`, `"1:20"`
//! (numbers in one version or the other), `"null"`, `"~"`, `""`. Keys are quoted by the same
//! rule (PyYAML reads an unquoted key `on` as `True`). Multi-line strings are literal blocks.

use serde_json::{Map, Value};

/// The value as a YAML document (ending with a newline).
pub fn to_string(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(map) if !map.is_empty() => mapping(map, 0, false, &mut out),
        Value::Array(items) if !items.is_empty() => sequence(items, 0, false, &mut out),
        other => {
            out.push_str(&scalar(other, 0));
            out.push('\n');
        }
    }
    out
}

fn pad(indent: usize, out: &mut String) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// A mapping's entries at `indent`; with `inline`, the first entry follows a `- ` already
/// written.
fn mapping(map: &Map<String, Value>, indent: usize, inline: bool, out: &mut String) {
    for (i, (key, value)) in map.iter().enumerate() {
        if !(inline && i == 0) {
            pad(indent, out);
        }
        out.push_str(&key_text(key));
        out.push(':');
        match value {
            Value::Object(inner) if !inner.is_empty() => {
                out.push('\n');
                mapping(inner, indent + 2, false, out);
            }
            // kubectl's style: a mapping's sequence starts at the key's own indentation.
            Value::Array(items) if !items.is_empty() => {
                out.push('\n');
                sequence(items, indent, false, out);
            }
            other => {
                out.push(' ');
                out.push_str(&scalar(other, indent));
                out.push('\n');
            }
        }
    }
}

/// A sequence's items at `indent`; with `inline`, the first item follows a `- ` already
/// written.
fn sequence(items: &[Value], indent: usize, inline: bool, out: &mut String) {
    for (i, item) in items.iter().enumerate() {
        if !(inline && i == 0) {
            pad(indent, out);
        }
        out.push_str("- ");
        match item {
            Value::Object(inner) if !inner.is_empty() => mapping(inner, indent + 2, true, out),
            Value::Array(inner) if !inner.is_empty() => sequence(inner, indent + 2, true, out),
            other => {
                out.push_str(&scalar(other, indent));
                out.push('\n');
            }
        }
    }
}

/// A scalar (or an empty collection) of a node written at `indent`.
fn scalar(value: &Value, indent: usize) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string(s, indent),
        Value::Array(_) => "[]".to_string(),
        Value::Object(_) => "{}".to_string(),
    }
}

fn key_text(key: &str) -> String {
    if is_plain(key) {
        key.to_string()
    } else {
        quoted(key)
    }
}

/// A string value: plain when that is unambiguous, a literal block for readable multi-line
/// text, double-quoted otherwise.
fn string(s: &str, indent: usize) -> String {
    if is_plain(s) {
        return s.to_string();
    }
    if let Some(block) = literal(s, indent) {
        return block;
    }
    quoted(s)
}

/// Words YAML 1.1 or 1.2 reads as booleans or null (compared without case: quoting `YES` too
/// costs nothing).
const KEYWORDS: &[&str] = &["y", "n", "yes", "no", "on", "off", "true", "false", "null"];

/// Whether `s` may be written unquoted: ASCII letters, digits and `-_./@+=` (and `:` or
/// spaces inside, never `: `), starting with a letter, `/` or `_` — so never a number, a time,
/// `.inf`, `~`, `<<` or an indicator — and not a boolean or null keyword.
fn is_plain(s: &str) -> bool {
    let bytes = s.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    if !(first.is_ascii_alphabetic() || *first == b'/' || *first == b'_') || *last == b' ' || *last == b':' {
        return false;
    }
    if KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(s)) {
        return false;
    }
    let safe = |b: u8| b.is_ascii_alphanumeric() || b"-_./@+= :".contains(&b);
    bytes.iter().all(|b| safe(*b)) && !s.contains(": ") && !s.contains("  ")
}

/// Characters a YAML reader treats as line breaks or may refuse unescaped.
fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}')
}

/// A double-quoted scalar: `"` and `\` escaped, control characters and line separators as
/// `\uXXXX` (or their short escapes).
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if needs_escape(c) => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Multi-line text as a literal block (`|`, or `|-` without a final newline), its lines
/// indented under the node; `None` when a block could not hold it exactly (escapes needed,
/// leading blanks, several final newlines), which is then double-quoted.
fn literal(s: &str, indent: usize) -> Option<String> {
    if !s.contains('\n')
        || s.chars().any(|c| c != '\n' && needs_escape(c))
        || s.starts_with([' ', '\t', '\n'])
    {
        return None;
    }
    let (body, header) = match s.strip_suffix('\n') {
        Some(body) if body.ends_with('\n') => return None,
        Some(body) => (body, "|"),
        None => (s, "|-"),
    };
    let mut out = header.to_string();
    for line in body.split('\n') {
        out.push('\n');
        if !line.is_empty() {
            pad(indent + 2, &mut out);
            out.push_str(line);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Strings a YAML 1.1 or 1.2 reader would take for something else, or that need quoting
    /// to parse at all.
    const TRICKY: &[&str] = &[
        "2024-01-01T00:00:00Z",
        "2024-01-01",
        "2024-01-01T00:00:00.123+02:00",
        "yes",
        "No",
        "on",
        "OFF",
        "y",
        "n",
        "true",
        "False",
        "null",
        "~",
        "",
        "1.0",
        "1",
        "-1",
        "+1",
        "0777",
        "0o17",
        "0x1F",
        "0b101",
        "1_000",
        "1:20",
        "1e3",
        ".inf",
        "-.inf",
        ".nan",
        "<<",
        "=",
        "- a",
        "a: b",
        "a:",
        "#x",
        "x #y",
        "@x",
        "`x",
        "%x",
        "!x",
        "&x",
        "*x",
        "|",
        ">",
        "'",
        "\"",
        "[a]",
        "{a}",
        "a,b",
        "?x",
        " lead",
        "trail ",
        "two  spaces",
        "tab\there",
        "cr\rhere",
        "line\u{2028}sep",
        "bell\u{7}",
        "\u{feff}bom",
        "élan",
        "back\\slash",
        "multi\nline\n",
        "multi\nline",
        "ends\n\n",
        "\nleading newline",
        "  indented\nblock\n",
        "a\n\n  b\n",
    ];

    #[test]
    fn every_string_reads_back_as_the_same_string() {
        let mut object = Map::new();
        for (i, s) in TRICKY.iter().enumerate() {
            object.insert(format!("k{i}"), json!(s));
            object.insert((*s).to_string(), json!(i));
        }
        let value = json!({
            "map": Value::Object(object),
            "list": TRICKY,
            "nested": [[1, "2"], {"a": [{"b": "yes", "c": ["on", "off"]}]}, [], {}],
            "empty": "",
            "numbers": [1, -2, 1.5, 1e300],
            "flags": [true, false, null],
        });
        let yaml = to_string(&value);
        let back: Value = yaml_serde::from_str(&yaml).expect("the YAML parses");
        assert_eq!(back, value, "{yaml}");
        for top in [
            json!("yes"),
            json!(1),
            json!(null),
            json!([]),
            json!({}),
            json!("multi\nline\n"),
        ] {
            let back: Value = yaml_serde::from_str(&to_string(&top)).expect("parses");
            assert_eq!(back, top);
        }
    }

    #[test]
    fn times_and_yaml_1_1_scalars_are_double_quoted_as_kubectl_does() {
        let yaml =
            to_string(&json!({"metadata": {"creationTimestamp": "2024-01-01T00:00:00Z", "name": "l1"}}));
        assert_eq!(
            yaml,
            "metadata:\n  creationTimestamp: \"2024-01-01T00:00:00Z\"\n  name: l1\n"
        );
        for s in [
            "yes", "no", "on", "off", "Y", "1.0", "0777", "1_000", "1:20", "~", "null", "",
        ] {
            assert_eq!(to_string(&json!({ "v": s })), format!("v: \"{s}\"\n"), "{s}");
        }
        assert_eq!(to_string(&json!({"on": 1})), "\"on\": 1\n");
        // Unambiguous words stay plain; numbers and booleans stay what they are.
        assert_eq!(
            to_string(&json!({"a": "RUNNING", "b": "http://x:1/y", "c": 1.0, "d": true, "e": "a b"})),
            "a: RUNNING\nb: http://x:1/y\nc: 1.0\nd: true\ne: a b\n"
        );
        assert_eq!(
            to_string(&json!({"items": [{"a": 1, "b": [2]}], "text": "x\ny\n"})),
            "items:\n- a: 1\n  b:\n  - 2\ntext: |\n  x\n  y\n"
        );
    }
}
