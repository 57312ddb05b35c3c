//! Pool configuration in Boskos's format (`resources:` entries), checked as Boskos checks it,
//! with every error naming the entry to fix.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::DomainError;

/// One `resources:` entry: a static type (with `names`) or a dynamic one (`min-count`/`max-count`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct TypeConfig {
    /// The resource type.
    #[serde(rename = "type")]
    pub rtype: String,
    /// State new resources start in (default `free`).
    #[serde(default)]
    pub state: String,
    /// Names of a static type.
    #[serde(default)]
    pub names: Vec<String>,
    /// Fewest resources a dynamic type keeps.
    #[serde(default)]
    pub min_count: Option<u32>,
    /// Most resources a dynamic type may have.
    #[serde(default)]
    pub max_count: Option<u32>,
    /// How long a released dynamic resource lives (Go duration like `48h`, or nanoseconds).
    #[serde(default)]
    pub lifespan: Option<String>,
    /// Resources of other types each instance needs (Mason).
    #[serde(default)]
    pub needs: BTreeMap<String, u32>,
    /// Opaque configuration for the component that builds instances.
    #[serde(default)]
    pub config: Option<DynamicConfig>,
}

/// The opaque `config:` of a dynamic type.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DynamicConfig {
    /// Which builder understands `content`.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// Builder-specific content.
    #[serde(default)]
    pub content: String,
}

/// The whole pool configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolConfig {
    /// Every resource type.
    #[serde(default)]
    pub resources: Vec<TypeConfig>,
}

impl TypeConfig {
    /// Whether instances are created and deleted by Drover rather than listed by name.
    pub fn is_dynamic(&self) -> bool {
        self.min_count.is_some() || self.max_count.is_some()
    }

    /// The initial state, `free` when unset.
    pub fn initial_state(&self) -> &str {
        if self.state.is_empty() {
            "free"
        } else {
            &self.state
        }
    }

    /// The lifespan in milliseconds, if set.
    pub fn lifespan_ms(&self) -> Result<Option<u64>, String> {
        self.lifespan.as_deref().map(parse_duration_ms).transpose()
    }
}

/// Parses a Go duration (`1h30m`, `45s`, `500ms`) or an integer number of nanoseconds.
pub fn parse_duration_ms(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let too_long = || {
        format!(
            "{text:?} is longer than the longest duration allowed ({}h)",
            crate::limits::MAX_DURATION_MS / 3_600_000
        )
    };
    if let Ok(nanos) = text.parse::<u64>() {
        let ms = nanos / 1_000_000;
        return if ms > crate::limits::MAX_DURATION_MS {
            Err(too_long())
        } else {
            Ok(ms)
        };
    }
    let mut total_ms: f64 = 0.0;
    let mut rest = text;
    if rest.is_empty() {
        return Err("empty duration".into());
    }
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if number_len == 0 {
            return Err(format!("{text:?} is not a duration like 90s, 30m or 48h"));
        }
        let number: f64 = rest[..number_len]
            .parse()
            .map_err(|_| format!("{text:?} is not a duration like 90s, 30m or 48h"))?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let factor = match &rest[..unit_len] {
            "ns" => 1e-6,
            "us" | "µs" => 1e-3,
            "ms" => 1.0,
            "s" => 1e3,
            "m" => 60e3,
            "h" => 3600e3,
            unit => {
                return Err(format!(
                    "{text:?}: unknown unit {unit:?} (use ns, us, ms, s, m or h)"
                ))
            }
        };
        total_ms += number * factor;
        rest = &rest[unit_len..];
    }
    if !total_ms.is_finite() || total_ms > crate::limits::MAX_DURATION_MS as f64 {
        return Err(too_long());
    }
    Ok(total_ms as u64)
}

/// Checks a YAML document's size and nesting before it is parsed: the parser's cost grows with
/// the square of the nesting depth, and a Boskos resources file is two or three levels deep.
/// Flow collections (`[`, `{`) and block sequence indicators (`- - -`) on one line are counted;
/// indentation is bounded by the size limit.
pub fn check_yaml_shape(text: &str) -> Result<(), String> {
    use crate::limits::{MAX_CONFIG_BYTES, MAX_YAML_DEPTH};
    if text.len() > MAX_CONFIG_BYTES {
        return Err(format!(
            "the configuration is {} bytes; at most {MAX_CONFIG_BYTES} are accepted",
            text.len()
        ));
    }
    let too_deep = || format!("the configuration nests deeper than {MAX_YAML_DEPTH} levels");
    let mut flow_depth = 0usize;
    for line in text.lines() {
        let mut quote: Option<char> = None;
        let mut block_depth = 0usize;
        let mut leading = true;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '\'' | '"') => quote = Some(c),
                (None, '#') => break,
                (None, '[' | '{') => flow_depth += 1,
                (None, ']' | '}') => flow_depth = flow_depth.saturating_sub(1),
                (None, '-') if leading && chars.peek().is_none_or(|n| n.is_whitespace()) => block_depth += 1,
                _ => {}
            }
            if !c.is_whitespace() && c != '-' {
                leading = false;
            }
            if flow_depth + block_depth > MAX_YAML_DEPTH {
                return Err(too_deep());
            }
        }
    }
    Ok(())
}

fn invalid(field: String, message: String) -> DomainError {
    DomainError::Invalid { field, message }
}

/// Whether `rtype` is a usable type name: it appears in URLs, metric labels and logs.
pub fn is_type_name(rtype: &str) -> bool {
    let bytes = rtype.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= crate::validation::MAX_SUBDOMAIN_LEN
        && bytes[0].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && !rtype.contains("..")
}

/// Whether `name` is a DNS-1123 subdomain, as Boskos requires of resource names.
pub fn is_resource_name(name: &str) -> bool {
    crate::validation::validate_name(crate::object::ObjectKind::CoordinationLease, name).is_ok()
}

impl PoolConfig {
    /// Parses a Boskos resources file (YAML, or JSON) and checks it; the error names the entry.
    pub fn from_yaml(text: &str) -> Result<Self, String> {
        check_yaml_shape(text)?;
        let config: PoolConfig =
            yaml_serde::from_str(text).map_err(|e| format!("not a Boskos resources file: {e}"))?;
        config.validate().map_err(|e| e.to_string())?;
        Ok(config)
    }

    /// Checks the configuration the way Boskos does; the error names the entry to fix.
    pub fn validate(&self) -> Result<(), DomainError> {
        if self.resources.is_empty() {
            return Err(invalid(
                "resources".into(),
                "the configuration lists no resource types".into(),
            ));
        }
        let mut types = BTreeSet::new();
        let mut names = BTreeSet::new();
        for (i, entry) in self.resources.iter().enumerate() {
            let at = format!("resources[{i}] (type {:?})", entry.rtype);
            if entry.rtype.is_empty() {
                return Err(invalid(format!("resources[{i}]"), "type is required".into()));
            }
            if !is_type_name(&entry.rtype) {
                return Err(invalid(
                    format!("resources[{i}].type"),
                    format!(
                        "a type is 1 to {} letters, digits, '-', '_' or '.', starting with a letter or digit (got {} bytes)",
                        crate::validation::MAX_SUBDOMAIN_LEN,
                        entry.rtype.len()
                    ),
                ));
            }
            if !crate::limits::is_printable_word(&entry.state) {
                return Err(invalid(
                    format!("{at}.state"),
                    format!(
                        "must be at most {} bytes of visible characters",
                        crate::limits::MAX_POOL_WORD_LEN
                    ),
                ));
            }
            if !types.insert(entry.rtype.as_str()) {
                return Err(invalid(at, "type is listed twice".into()));
            }
            if entry.is_dynamic() {
                if !entry.names.is_empty() {
                    return Err(invalid(
                        at,
                        "a dynamic type (min-count/max-count) cannot also list names".into(),
                    ));
                }
                let max = entry.max_count.unwrap_or(0);
                if max == 0 {
                    return Err(invalid(
                        at,
                        "a dynamic type needs max-count greater than 0".into(),
                    ));
                }
                if entry.min_count.unwrap_or(0) > max {
                    return Err(invalid(at, "min-count must not exceed max-count".into()));
                }
            }
            entry
                .lifespan_ms()
                .map_err(|message| invalid(format!("{at}.lifespan"), message))?;
            for name in &entry.names {
                if !is_resource_name(name) {
                    return Err(invalid(
                        at.clone(),
                        format!("name {name:?} is not a DNS-1123 subdomain"),
                    ));
                }
                if !names.insert(name.as_str()) {
                    return Err(invalid(at.clone(), format!("name {name:?} is used twice")));
                }
            }
        }
        for (i, entry) in self.resources.iter().enumerate() {
            for (needed, count) in &entry.needs {
                let Some(target) = self.resources.iter().find(|t| &t.rtype == needed) else {
                    return Err(invalid(
                        format!("resources[{i}] (type {:?}).needs", entry.rtype),
                        format!("needs type {needed:?}, which is not configured"),
                    ));
                };
                let available = if target.is_dynamic() {
                    target.max_count.unwrap_or(0)
                } else {
                    target.names.len() as u32
                };
                let wanted = count.saturating_mul(entry.max_count.unwrap_or(1));
                if wanted > available {
                    return Err(invalid(
                        format!("resources[{i}] (type {:?}).needs", entry.rtype),
                        format!("needs {wanted} of {needed:?} at max-count, but only {available} can exist"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The entry of a type.
    pub fn get(&self, rtype: &str) -> Option<&TypeConfig> {
        self.resources.iter().find(|entry| entry.rtype == rtype)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn static_type(rtype: &str, names: &[&str]) -> TypeConfig {
        TypeConfig {
            rtype: rtype.into(),
            names: names.iter().map(|n| n.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn the_boskos_example_file_parses() {
        let text = "resources:\n  - type: aws-account\n    state: free\n    names: [account1, account2]\n  - type: aws-cluster\n    state: dirty\n    min-count: 1\n    max-count: 2\n    lifespan: 48h\n    needs: {aws-account: 1}\n    config: {type: AWSClusterCreator, content: \"x\"}\n";
        let config = PoolConfig::from_yaml(text).expect("valid");
        assert_eq!(config.resources.len(), 2);
        assert_eq!(config.resources[1].max_count, Some(2));
        let typo = "resources:\n  - type: a\n    nmes: [x]\n";
        assert!(PoolConfig::from_yaml(typo).unwrap_err().contains("nmes"));
    }

    #[test]
    fn go_durations_parse() {
        assert_eq!(parse_duration_ms("48h"), Ok(48 * 3600 * 1000));
        assert_eq!(parse_duration_ms("1h30m"), Ok(90 * 60 * 1000));
        assert_eq!(parse_duration_ms("500ms"), Ok(500));
        assert_eq!(parse_duration_ms("1500000000"), Ok(1500));
        assert!(parse_duration_ms("10 minutes").is_err());
        assert!(parse_duration_ms("").is_err());
    }

    #[test]
    fn deep_or_huge_yaml_is_refused_before_parsing() {
        let deep_flow = format!("resources: {}{}", "[".repeat(100_000), "]".repeat(100_000));
        let started = std::time::Instant::now();
        let error = PoolConfig::from_yaml(&deep_flow).unwrap_err();
        assert!(error.contains("nests deeper"), "{error}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        let deep_block = format!("resources:\n{}x\n", "- ".repeat(1_000));
        assert!(PoolConfig::from_yaml(&deep_block)
            .unwrap_err()
            .contains("nests deeper"));
        let huge = format!(
            "# {}\nresources: []\n",
            "x".repeat(crate::limits::MAX_CONFIG_BYTES)
        );
        assert!(PoolConfig::from_yaml(&huge).unwrap_err().contains("bytes"));
        // Brackets inside quotes and comments are text, not nesting.
        let quoted = format!(
            "resources:\n  - type: a # {}\n    state: \"{}\"\n    names: [x]\n",
            "[".repeat(100),
            "{".repeat(100)
        );
        assert!(check_yaml_shape(&quoted).is_ok());
    }

    #[test]
    fn durations_and_type_names_are_bounded() {
        assert!(parse_duration_ms("87600h").is_ok());
        assert!(parse_duration_ms("87601h").is_err());
        assert!(parse_duration_ms("18446744073709551615").is_err());
        assert!(parse_duration_ms("1e300h").is_err());
        for bad in ["a\0b", "a/../b", "", "-x", &"t".repeat(5_000)] {
            let config = PoolConfig {
                resources: vec![static_type(bad, &["x"])],
            };
            assert!(config.validate().is_err(), "{bad:?} accepted");
        }
        assert!(is_type_name("gce-project") && is_type_name("aws_account.v2"));
    }

    #[test]
    fn errors_name_the_entry() {
        let duplicate = PoolConfig {
            resources: vec![static_type("a", &["x"]), static_type("b", &["x"])],
        };
        let error = duplicate.validate().unwrap_err().to_string();
        assert!(
            error.contains("resources[1]") && error.contains("\"x\""),
            "{error}"
        );
        let no_max = PoolConfig {
            resources: vec![TypeConfig {
                rtype: "d".into(),
                min_count: Some(1),
                ..Default::default()
            }],
        };
        assert!(no_max.validate().unwrap_err().to_string().contains("max-count"));
        let bad_needs = PoolConfig {
            resources: vec![
                static_type("acct", &["a1"]),
                TypeConfig {
                    rtype: "cluster".into(),
                    max_count: Some(2),
                    needs: BTreeMap::from([("acct".to_string(), 1)]),
                    ..Default::default()
                },
            ],
        };
        assert!(bad_needs.validate().unwrap_err().to_string().contains("only 1"));
        assert!(PoolConfig::default().validate().is_err());
        assert!(PoolConfig {
            resources: vec![static_type("a", &["Bad_Name"])]
        }
        .validate()
        .is_err());
    }
}
