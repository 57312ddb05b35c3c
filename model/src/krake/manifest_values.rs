//! The values a Kubernetes manifest's fields hold, read as Drover reads them for every workload
//! kind and every kind of container: CPU and memory quantities, a container's plain `env`, and
//! the refusal that names the manifest path holding a value Drover cannot honour. Pure.

use std::collections::BTreeMap;

use serde_json::Value;

use super::error::KrakeError;

pub(super) fn refuse(path: &str, message: impl Into<String>) -> KrakeError {
    KrakeError::invalid(path, message)
}

pub(super) fn text<'a>(value: Option<&'a Value>, path: &str) -> Result<&'a str, KrakeError> {
    value
        .and_then(Value::as_str)
        .ok_or_else(|| refuse(path, "Missing data for required field."))
}

pub(super) fn env(value: Option<&Value>, path: &str) -> Result<BTreeMap<String, String>, KrakeError> {
    let mut env = BTreeMap::new();
    for (i, entry) in value.and_then(Value::as_array).into_iter().flatten().enumerate() {
        let name = text(entry.get("name"), &format!("{path}.env.{i}.name"))?;
        if entry.get("valueFrom").is_some() {
            return Err(refuse(
                &format!("{path}.env.{i}.valueFrom"),
                "Drover has no ConfigMaps or Secrets to take a value from: give value",
            ));
        }
        let value = entry.get("value").and_then(Value::as_str).unwrap_or_default();
        env.insert(name.to_string(), value.to_string());
    }
    Ok(env)
}

/// A Kubernetes CPU quantity in thousandths of a CPU (rounded up).
pub fn cpu_millis(quantity: &Value) -> Option<u64> {
    let text = match quantity {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        _ => return None,
    };
    if let Some(millis) = text.strip_suffix('m') {
        return millis.parse().ok();
    }
    decimal_scaled(&text, 1000)
}

/// `text` (a non-negative decimal) times `scale`, rounded up.
fn decimal_scaled(text: &str, scale: u64) -> Option<u64> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() && fraction.is_empty()
        || !whole.bytes().chain(fraction.bytes()).all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let whole: u64 = if whole.is_empty() { 0 } else { whole.parse().ok()? };
    let digits = fraction.len().min(9) as u32;
    let fraction: u64 = if digits == 0 {
        0
    } else {
        fraction[..digits as usize].parse().ok()?
    };
    let denominator = 10u64.pow(digits);
    let scaled_fraction = (fraction.checked_mul(scale)?).div_ceil(denominator);
    whole.checked_mul(scale)?.checked_add(scaled_fraction)
}

/// A Kubernetes memory quantity in MiB (rounded up).
pub fn memory_mib(quantity: &Value) -> Option<u64> {
    let text = match quantity {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        _ => return None,
    };
    const MIB: u64 = 1 << 20;
    let suffixes: [(&str, u64); 10] = [
        ("Ki", 1 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("Ti", 1 << 40),
        ("k", 1_000),
        ("K", 1_000),
        ("M", 1_000_000),
        ("G", 1_000_000_000),
        ("T", 1_000_000_000_000),
        ("", 1),
    ];
    let (number, unit) = suffixes.iter().find_map(|(suffix, unit)| {
        text.strip_suffix(suffix)
            .filter(|n| !n.is_empty())
            .map(|n| (n, *unit))
    })?;
    let bytes = decimal_scaled(number, unit)?;
    Some(bytes.div_ceil(MIB))
}
