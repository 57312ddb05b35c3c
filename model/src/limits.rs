//! Bounds on what a request may ask of the replicated state. Each is checked by the API before
//! it proposes (to answer with a `4xx` early) and again by `apply` (so a committed entry can
//! never overflow, panic or grow the state without bound). `docs/LIMITS.md` lists them all with
//! what a caller gets when one is exceeded.

/// Longest duration a request or configuration may name (a claim's `max_time`, a dynamic
/// resource's `lifespan`): 10 years. Longer ones are refused, so `now + duration` never
/// overflows.
pub const MAX_DURATION_MS: u64 = 10 * 365 * 24 * 3_600_000;

/// Longest Boskos state, destination or owner name (bytes).
pub const MAX_POOL_WORD_LEN: usize = 253;

/// Most request queues (type, state) the pools keep at once; an acquire that would open one
/// more is refused until an idle queue goes.
pub const MAX_POOL_QUEUES: usize = 1_000;

/// Largest pool configuration (Boskos resources YAML) accepted, in bytes.
pub const MAX_CONFIG_BYTES: usize = 256 * 1024;

/// Deepest nesting of a JSON value kept as given in the replicated state (a Krake cluster's
/// kubeconfig and constraints). A log entry is JSON, whose reader refuses nesting past 128
/// levels: a value nested that deep inside a command would be written, then be unreadable on
/// every replica.
pub const MAX_JSON_DEPTH: usize = 32;

/// How deep `value` nests (a scalar is 0, `[1]` is 1).
pub fn json_depth(value: &serde_json::Value) -> usize {
    match value {
        serde_json::Value::Array(items) => 1 + items.iter().map(json_depth).max().unwrap_or(0),
        serde_json::Value::Object(map) => 1 + map.values().map(json_depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Deepest nesting a pool configuration may have (flow collections and block sequences).
pub const MAX_YAML_DEPTH: usize = 32;

/// Largest lease object (name, labels, annotations and spec, counted as text): 256 KiB, the
/// total Kubernetes allows an object's annotations. Larger ones are refused with `422`.
pub const MAX_OBJECT_BYTES: usize = 256 * 1024;

/// `now_ms + duration_ms`, refusing what [`MAX_DURATION_MS`] refuses and never overflowing.
pub fn deadline_after(now_ms: u64, duration_ms: u64) -> Option<u64> {
    (duration_ms <= MAX_DURATION_MS).then(|| now_ms.saturating_add(duration_ms))
}

/// Whether a free-form word (a Boskos state, destination or owner) is printable and bounded:
/// no control, format (bidi) or other invisible characters, at most [`MAX_POOL_WORD_LEN`] bytes.
pub fn is_printable_word(word: &str) -> bool {
    word.len() <= MAX_POOL_WORD_LEN && word.chars().all(is_visible)
}

/// A character a person can see: not a control character, not a bidi or other format control.
pub fn is_visible(c: char) -> bool {
    !c.is_control()
        && !matches!(c,
            '\u{00AD}' | '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{206F}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_never_overflow_and_refuse_absurd_durations() {
        assert_eq!(deadline_after(1_000, 500), Some(1_500));
        assert_eq!(deadline_after(u64::MAX - 1, MAX_DURATION_MS), Some(u64::MAX));
        assert_eq!(deadline_after(0, MAX_DURATION_MS + 1), None);
        assert_eq!(deadline_after(0, u64::MAX), None);
    }

    #[test]
    fn words_with_controls_or_bidi_marks_are_not_printable() {
        assert!(is_printable_word("dirty"));
        assert!(is_printable_word("günstig-état"));
        assert!(!is_printable_word("a\0b"));
        assert!(!is_printable_word("evil\u{202E}txt"));
        assert!(!is_printable_word(&"x".repeat(MAX_POOL_WORD_LEN + 1)));
    }
}
