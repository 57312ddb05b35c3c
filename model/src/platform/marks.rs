//! Marks: the limits an account or environment declares per dimension, and their usage.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::error::PlatformError;

/// The dimensions marks may limit, with the unit each is counted in.
pub const DIMENSIONS: [(&str, &str); 7] = [
    ("vcpu", "m"),
    ("memory", "MB"),
    ("vstorage", "MB"),
    ("nrstorage", "MB"),
    ("rstorage", "MB"),
    ("storage", "MB"),
    ("cost", "EUR"),
];

/// The limit of one dimension.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Mark {
    /// Most the dimension may use, in its unit.
    pub max: u64,
    /// The dimension's unit; when given it must be the canonical one (`m` for vcpu, `MB` for
    /// memory and storage, `EUR` for cost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

/// Limits by dimension name.
pub type Marks = BTreeMap<String, Mark>;

/// Usage of one dimension, as environment info reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MarkStatus {
    /// The declared limit, when one is declared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<u64>,
    /// What deployed services use now.
    pub current: u64,
    /// The dimension's unit.
    pub unit: String,
}

/// The canonical unit of a dimension.
pub fn unit_of(dimension: &str) -> Option<&'static str> {
    DIMENSIONS
        .iter()
        .find(|(name, _)| *name == dimension)
        .map(|(_, unit)| *unit)
}

/// Checks that every dimension is known and every unit canonical.
pub fn validate_marks(field: &str, marks: &Marks) -> Result<(), PlatformError> {
    for (dimension, mark) in marks {
        let Some(unit) = unit_of(dimension) else {
            let known: Vec<&str> = DIMENSIONS.iter().map(|(name, _)| *name).collect();
            return Err(PlatformError::invalid(
                format!("{field}.{dimension}"),
                format!("unknown dimension; known: {}", known.join(", ")),
            ));
        };
        if let Some(given) = &mark.unit {
            if given != unit {
                return Err(PlatformError::invalid(
                    format!("{field}.{dimension}.unit"),
                    format!("{dimension} is counted in {unit:?}, not {given:?}"),
                ));
            }
        }
    }
    Ok(())
}

/// The status of every dimension: the declared limit and what `usage` says is used.
pub fn marks_status(marks: &Marks, usage: &BTreeMap<String, u64>) -> BTreeMap<String, MarkStatus> {
    DIMENSIONS
        .iter()
        .map(|(dimension, unit)| {
            let status = MarkStatus {
                max: marks.get(*dimension).map(|mark| mark.max),
                current: usage.get(*dimension).copied().unwrap_or(0),
                unit: (*unit).to_string(),
            };
            ((*dimension).to_string(), status)
        })
        .collect()
}
