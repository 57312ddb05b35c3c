//! Krake's rules for names and labels (`krake.md` §2.2, from `krake.data.core`), and Drover's
//! bounds on what one object's metadata may hold. Krake's `\w` is ASCII: letters, digits, `_`.

use std::collections::BTreeMap;

use super::error::KrakeError;
use super::meta::MetaInput;

/// An Application's name, beyond Krake's rules: it is the name of a Drover service too.
pub fn application_name(name: &str) -> Result<(), KrakeError> {
    crate::validation::validate_object_name("metadata.name", name).map_err(|e| match e {
        crate::platform::error::PlatformError::Invalid { field, message } => {
            KrakeError::Invalid { field, message }
        }
        other => KrakeError::invalid("metadata.name", other.to_string()),
    })
}

/// Longest name or namespace (Krake's pattern allows 255 characters).
pub const MAX_NAME: usize = 255;
/// Most entries of a list in a spec (a role's rules, an application's constraints, …).
pub const MAX_LIST: usize = 64;
/// Longest label name (and value).
pub const MAX_LABEL: usize = 63;
/// Longest label prefix (before the `/`).
pub const MAX_LABEL_PREFIX: usize = 253;
/// Most labels, finalizers or owners of one object (Drover's bound; Krake has none).
pub const MAX_META_ENTRIES: usize = 64;

fn word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `\w|(\w[<inner>]{0,max-2}\w)`: one to `max` characters, a word character at each end.
fn bounded_word(text: &str, max: usize, inner: impl Fn(char) -> bool) -> bool {
    let chars: Vec<char> = text.chars().collect();
    match chars.as_slice() {
        [] => false,
        [only] => word(*only),
        [first, middle @ .., last] => {
            chars.len() <= max && word(*first) && word(*last) && middle.iter().all(|c| inner(*c))
        }
    }
}

/// Whether `name` is a valid Krake name or namespace: `\w|(\w[\w\-_.:]{0,253}\w)`.
pub fn is_name(name: &str) -> bool {
    bounded_word(name, MAX_NAME, |c| word(c) || matches!(c, '-' | '.' | ':'))
}

fn label_part(text: &str, max: usize) -> bool {
    bounded_word(text, max, |c| word(c) || matches!(c, '-' | '.'))
}

/// Whether `key` is a valid label key: `[prefix/]name`.
pub fn is_label_key(key: &str) -> bool {
    match key.split_once('/') {
        Some((prefix, name)) => label_part(prefix, MAX_LABEL_PREFIX) && label_part(name, MAX_LABEL),
        None => label_part(key, MAX_LABEL),
    }
}

/// Whether `value` is a valid label value.
pub fn is_label_value(value: &str) -> bool {
    label_part(value, MAX_LABEL)
}

/// Checks a name or namespace at `field`.
pub fn name(field: &str, text: &str) -> Result<(), KrakeError> {
    if is_name(text) {
        Ok(())
    } else {
        let what = if field.ends_with("namespace") {
            "namespace"
        } else {
            "name"
        };
        Err(KrakeError::invalid(
            field,
            format!("Invalid character in resource {what}."),
        ))
    }
}

/// Checks labels as Krake does, naming each bad key or value.
pub fn labels(labels: &BTreeMap<String, String>) -> Result<(), KrakeError> {
    for (key, value) in labels {
        if !is_label_key(key) {
            return Err(KrakeError::invalid(
                "metadata.labels",
                format!("Label key {key:?} does not match [prefix/]name (word characters at both ends, '-', '_' and '.' within; name at most {MAX_LABEL}, prefix at most {MAX_LABEL_PREFIX} characters)."),
            ));
        }
        if !is_label_value(value) {
            return Err(KrakeError::invalid(
                "metadata.labels",
                format!("Label value {value:?} of {key:?} must be 1 to {MAX_LABEL} characters, word characters at both ends, '-', '_' and '.' within."),
            ));
        }
    }
    Ok(())
}

/// Checks what a writer sets of the metadata: labels, and bounded finalizers and owners.
pub fn meta_input(input: &MetaInput) -> Result<(), KrakeError> {
    labels(&input.labels)?;
    if input.labels.len() > MAX_META_ENTRIES
        || input.finalizers.len() > MAX_META_ENTRIES
        || input.owners.len() > MAX_META_ENTRIES
    {
        return Err(KrakeError::invalid(
            "metadata",
            format!("at most {MAX_META_ENTRIES} labels, finalizers and owners each"),
        ));
    }
    for finalizer in &input.finalizers {
        if finalizer.is_empty()
            || finalizer.len() > MAX_NAME
            || !finalizer.chars().all(|c| c.is_ascii_graphic())
        {
            return Err(KrakeError::invalid(
                "metadata.finalizers",
                format!("finalizer {finalizer:?} must be 1 to {MAX_NAME} printable ASCII characters"),
            ));
        }
    }
    for owner in &input.owners {
        let parts = [("api", &owner.api), ("kind", &owner.kind), ("name", &owner.name)];
        for (field, value) in parts {
            if !is_name(value) {
                return Err(KrakeError::invalid(
                    format!("metadata.owners.{field}"),
                    format!("{value:?} is not a valid Krake name"),
                ));
            }
        }
        if let Some(namespace) = &owner.namespace {
            name("metadata.owners.namespace", namespace)?;
        }
    }
    Ok(())
}
