//! Metrics and metrics providers (Krake's `Metric` and `MetricsProvider`, read by Krake 1.0.1's
//! `krake/controller/scheduler/metrics.py`), replicated per tenant: a tenant's own, and the operator tenant's, which every
//! cluster may refer to (Krake's global ones).
//!
//! A provider says where values come from: `static` values in its spec, or a Prometheus
//! server's HTTP API. A metric names a provider, the name of the value there and the bounds it
//! is normalised between. A cluster lists the metrics it is scored on ([`MetricRef`]), each with
//! a weight. The leader's cluster actor reads them ([`Platform::cluster_metric_sources`]
//! resolves the references; [`prometheus_value`] reads an answer) and commits the readings, or
//! why a metric could not be read; a cluster with a failing metric is `FAILING_METRICS` until
//! every metric is read again.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::score::MetricValue;
use crate::platform::error::PlatformError;

/// Most metrics a cluster is scored on.
pub const MAX_METRIC_REFS: usize = 16;

/// Most metrics and providers of one tenant, each.
pub const MAX_METRICS_PER_TENANT: usize = 1000;

/// Most static values of one provider.
pub const MAX_STATIC_VALUES: usize = 1000;

/// A Prometheus query gives up after this long unless its provider says otherwise.
pub const DEFAULT_PROMETHEUS_TIMEOUT_SECONDS: u32 = 5;

/// Longest Prometheus query (the metric's name at the provider).
pub const MAX_QUERY_LEN: usize = 1024;

/// Where a provider's values come from (Krake's `{type, <type>: {…}}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ProviderSpec {
    /// A Prometheus server, asked `GET {url}/api/v1/query?query=<metric>`.
    Prometheus {
        /// The server.
        prometheus: PrometheusSpec,
    },
    /// Values written in the spec (updating the provider changes them).
    Static {
        /// The values.
        #[serde(rename = "static")]
        values: StaticSpec,
    },
}

/// A Prometheus provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PrometheusSpec {
    /// `http(s)://host:port[/path]` of the server (no credentials: every reader sees it).
    pub url: String,
    /// Seconds a query may take (default 5, at most 60); slower is a failure.
    #[serde(default = "default_timeout")]
    pub timeout_seconds: u32,
}

fn default_timeout() -> u32 {
    DEFAULT_PROMETHEUS_TIMEOUT_SECONDS
}

/// A static provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StaticSpec {
    /// Value by metric name.
    pub metrics: BTreeMap<String, f64>,
}

/// A metric: which provider, the name there, and the bounds of its normalisation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MetricSpec {
    /// A value of `min` normalises to 0.
    pub min: f64,
    /// A value of `max` normalises to 1; values outside [min, max] are invalid (Krake).
    pub max: f64,
    /// Where it is read.
    pub provider: ProviderMetric,
}

/// A metric's provider and its name there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderMetric {
    /// The provider, in the same tenant as the metric.
    pub name: String,
    /// The name at the provider (for Prometheus, the query).
    pub metric: String,
}

/// A metric a cluster is scored on (Krake's `MetricRef`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MetricRef {
    /// The metric's name.
    pub name: String,
    /// Its weight in the score (finite, 0 or more).
    pub weight: f64,
    /// `true`: the cluster's own tenant's metric; `false` (default): the operator tenant's.
    #[serde(default)]
    pub namespaced: bool,
}

// Every float in these is checked to be finite before it is stored ([`validate_provider`],
// [`validate_metric`], [`validate_refs`]), so equality is reflexive: they sit in the replicated
// state, whose types are `Eq`.
impl Eq for ProviderSpec {}
impl Eq for StaticSpec {}
impl Eq for MetricSpec {}
impl Eq for MetricRef {}

/// Why a metric could not be read (Krake's reasons).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MetricFailureReason {
    /// The provider did not answer (connection, timeout, an error status).
    UnreachableMetricsProvider,
    /// The value is not a finite number within the metric's bounds, or the answer has none.
    InvalidMetric,
    /// No such metric (or the provider has no such value).
    UnknownMetric,
    /// The metric's provider does not exist.
    UnknownMetricsProvider,
}

impl MetricFailureReason {
    /// The name as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnreachableMetricsProvider => "UNREACHABLE_METRICS_PROVIDER",
            Self::InvalidMetric => "INVALID_METRIC",
            Self::UnknownMetric => "UNKNOWN_METRIC",
            Self::UnknownMetricsProvider => "UNKNOWN_METRICS_PROVIDER",
        }
    }
}

/// A metric that could not be read, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MetricFailure {
    /// The kind.
    pub reason: MetricFailureReason,
    /// In words.
    pub message: String,
}

impl MetricFailure {
    /// A failure of `reason`, said in `message`.
    pub fn new(reason: MetricFailureReason, message: impl Into<String>) -> Self {
        Self {
            reason,
            message: message.into(),
        }
    }
}

/// What a cluster's actor read of its metrics: readings by metric name, and the failures.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MetricReadings {
    /// The metrics read.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schema(value_type = Object)]
    pub values: BTreeMap<String, MetricValue>,
    /// The metrics not read, and why (Krake's `metrics_reasons`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schema(value_type = Object)]
    pub failures: BTreeMap<String, MetricFailure>,
}

impl MetricReadings {
    /// One line naming every failure, for the cluster's reason.
    pub fn why_failing(&self) -> Option<String> {
        if self.failures.is_empty() {
            return None;
        }
        let each: Vec<String> = self
            .failures
            .iter()
            .map(|(name, f)| format!("{name}: {} ({})", f.reason.as_str(), f.message))
            .collect();
        Some(format!("metrics not read: {}", each.join("; ")))
    }
}

/// Where one of a cluster's metrics is read.
#[derive(Debug, Clone, PartialEq)]
pub enum MetricSource {
    /// A value from a static provider.
    Static(f64),
    /// A Prometheus query.
    Prometheus {
        /// The server.
        url: String,
        /// The query.
        query: String,
        /// Seconds it may take.
        timeout_seconds: u32,
    },
}

/// One of a cluster's metrics, resolved through the committed metrics and providers.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedMetric {
    /// The metric's name (as the cluster refers to it).
    pub name: String,
    /// The cluster's weight for it.
    pub weight: f64,
    /// Its bounds.
    pub min: f64,
    /// Its bounds.
    pub max: f64,
    /// Where to read it, or why it cannot be.
    pub source: Result<MetricSource, MetricFailure>,
}

impl ResolvedMetric {
    /// The reading of a value read from the source (or the failure to read one).
    pub fn reading(&self, value: Result<f64, MetricFailure>) -> Result<MetricValue, MetricFailure> {
        let value = value?;
        let normalised = normalise(value, self.min, self.max)?;
        Ok(MetricValue {
            value,
            normalised,
            weight: self.weight,
        })
    }
}

/// `(value - min) / (max - min)`; a value that is not finite or lies outside the bounds is
/// invalid (Krake).
pub fn normalise(value: f64, min: f64, max: f64) -> Result<f64, MetricFailure> {
    if !value.is_finite() {
        return Err(MetricFailure::new(
            MetricFailureReason::InvalidMetric,
            format!("{value} is not a number"),
        ));
    }
    if value < min || value > max {
        return Err(MetricFailure::new(
            MetricFailureReason::InvalidMetric,
            format!("{value} lies outside the metric's bounds [{min}, {max}]"),
        ));
    }
    let normalised = (value - min) / (max - min);
    if !normalised.is_finite() {
        return Err(MetricFailure::new(
            MetricFailureReason::InvalidMetric,
            format!("{value} does not normalise between [{min}, {max}]"),
        ));
    }
    Ok(normalised.clamp(0.0, 1.0))
}

/// The value in a Prometheus `/api/v1/query` answer: a scalar, the only sample of a vector, or
/// (several samples) the one whose `__name__` is the query, as Krake picks it.
pub fn prometheus_value(answer: &serde_json::Value, query: &str) -> Result<f64, MetricFailure> {
    let invalid = |message: String| MetricFailure::new(MetricFailureReason::InvalidMetric, message);
    if answer.get("status").and_then(|s| s.as_str()) != Some("success") {
        let error = answer
            .get("error")
            .and_then(|e| e.as_str())
            .unwrap_or("no status");
        return Err(MetricFailure::new(
            MetricFailureReason::UnreachableMetricsProvider,
            format!(
                "the query failed: {}",
                error.chars().take(256).collect::<String>()
            ),
        ));
    }
    let data = answer.get("data");
    let kind = data.and_then(|d| d.get("resultType")).and_then(|k| k.as_str());
    let result = data.and_then(|d| d.get("result"));
    let sample = match (kind, result) {
        (Some("scalar"), Some(pair)) => pair,
        (Some("vector"), Some(serde_json::Value::Array(samples))) => match samples.as_slice() {
            [] => {
                return Err(MetricFailure::new(
                    MetricFailureReason::UnknownMetric,
                    format!("the query {query:?} returns no sample"),
                ))
            }
            [only] => only.get("value").unwrap_or(&serde_json::Value::Null),
            several => several
                .iter()
                .find(|s| s.pointer("/metric/__name__").and_then(|n| n.as_str()) == Some(query))
                .and_then(|s| s.get("value"))
                .ok_or_else(|| {
                    invalid(format!(
                        "the query {query:?} returns {} samples; narrow it to one",
                        several.len()
                    ))
                })?,
        },
        _ => {
            return Err(invalid(format!(
                "the query {query:?} returns neither a scalar nor an instant vector"
            )))
        }
    };
    let text = sample
        .get(1)
        .and_then(|v| v.as_str())
        .ok_or_else(|| invalid("the sample has no value".to_string()))?;
    text.parse::<f64>()
        .map_err(|_| invalid(format!("the value {text:?} is not a number")))
}

/// Largest magnitude of a metric's bounds and of a static value: sums and differences of such
/// numbers stay finite, so no score or normalised value can become NaN (which JSON cannot
/// carry: a NaN in the replicated state would make its snapshot unreadable).
pub const MAX_MAGNITUDE: f64 = 1e12;

/// Largest weight of one metric.
pub const MAX_WEIGHT: f64 = 1000.0;

fn finite(field: &str, value: f64) -> Result<(), PlatformError> {
    if value.is_finite() && value.abs() <= MAX_MAGNITUDE {
        Ok(())
    } else {
        Err(PlatformError::invalid(
            field,
            format!("must be a finite number of magnitude at most {MAX_MAGNITUDE:e}"),
        ))
    }
}

/// Checks a Prometheus URL: `http(s)://host[:port][/path]`, no credentials, query or fragment.
fn validate_prometheus_url(url: &str) -> Result<(), PlatformError> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| PlatformError::invalid("prometheus.url", "must start with http:// or https://"))?;
    let authority = rest.split('/').next().unwrap_or_default();
    let fine = url.len() <= 512
        && !authority.is_empty()
        && authority
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b))
        && rest.bytes().all(|b| b.is_ascii_graphic() && !b"?#@".contains(&b));
    if fine {
        Ok(())
    } else {
        Err(PlatformError::invalid(
            "prometheus.url",
            format!(
                "{url:?} must be http(s)://host[:port][/path], at most 512 characters, without credentials, query or fragment (every reader of the provider sees it)"
            ),
        ))
    }
}

/// Checks a provider's spec.
pub fn validate_provider(spec: &ProviderSpec) -> Result<(), PlatformError> {
    match spec {
        ProviderSpec::Prometheus { prometheus } => {
            validate_prometheus_url(&prometheus.url)?;
            if !(1..=60).contains(&prometheus.timeout_seconds) {
                return Err(PlatformError::invalid(
                    "prometheus.timeout_seconds",
                    "must be 1 to 60",
                ));
            }
            Ok(())
        }
        ProviderSpec::Static { values } => {
            if values.metrics.len() > MAX_STATIC_VALUES {
                return Err(PlatformError::invalid(
                    "static.metrics",
                    format!("at most {MAX_STATIC_VALUES} values"),
                ));
            }
            for (name, value) in &values.metrics {
                if name.is_empty() || name.len() > 253 {
                    return Err(PlatformError::invalid(
                        "static.metrics",
                        "names are 1 to 253 characters",
                    ));
                }
                finite(&format!("static.metrics.{name}"), *value)?;
            }
            Ok(())
        }
    }
}

/// Checks a metric's spec.
pub fn validate_metric(spec: &MetricSpec) -> Result<(), PlatformError> {
    finite("min", spec.min)?;
    finite("max", spec.max)?;
    if spec.min >= spec.max {
        return Err(PlatformError::invalid("max", "must be greater than min"));
    }
    crate::validation::validate_object_name("provider.name", &spec.provider.name)?;
    if spec.provider.metric.is_empty() || spec.provider.metric.len() > MAX_QUERY_LEN {
        return Err(PlatformError::invalid(
            "provider.metric",
            format!("must be 1 to {MAX_QUERY_LEN} characters"),
        ));
    }
    Ok(())
}

/// Checks the metrics a cluster is scored on.
pub fn validate_refs(refs: &[MetricRef]) -> Result<(), PlatformError> {
    if refs.len() > MAX_METRIC_REFS {
        return Err(PlatformError::invalid(
            "metrics",
            format!("a cluster is scored on at most {MAX_METRIC_REFS} metrics"),
        ));
    }
    for (at, metric) in refs.iter().enumerate() {
        crate::validation::validate_object_name(&format!("metrics[{at}].name"), &metric.name)?;
        if !(0.0..=MAX_WEIGHT).contains(&metric.weight) {
            return Err(PlatformError::invalid(
                format!("metrics[{at}].weight"),
                format!("must be a number from 0 to {MAX_WEIGHT}"),
            ));
        }
        if refs[..at].iter().any(|m| m.name == metric.name) {
            return Err(PlatformError::invalid(
                format!("metrics[{at}].name"),
                format!("{:?} is listed twice", metric.name),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_normalise_between_the_bounds_and_outside_them_are_invalid() {
        assert_eq!(normalise(50.0, 0.0, 100.0), Ok(0.5));
        assert_eq!(normalise(0.0, 0.0, 100.0), Ok(0.0));
        assert_eq!(normalise(100.0, 0.0, 100.0), Ok(1.0));
        assert_eq!(normalise(-5.0, -10.0, 10.0), Ok(0.25));
        // Bounds far apart would overflow; they are refused when the metric is made, and a
        // value that still does not normalise is invalid rather than NaN.
        assert!(normalise(1e308, -1e308, 1e308).is_err());
        for bad in [101.0, -0.5, f64::NAN, f64::INFINITY] {
            let failure = normalise(bad, 0.0, 100.0).unwrap_err();
            assert_eq!(failure.reason, MetricFailureReason::InvalidMetric, "{bad}");
        }
    }

    #[test]
    fn a_prometheus_answer_gives_its_one_value() {
        let vector = |samples: serde_json::Value| json!({"status": "success", "data": {"resultType": "vector", "result": samples}});
        let one = vector(json!([{"metric": {"__name__": "load", "cluster": "a"}, "value": [1.0, "0.75"]}]));
        assert_eq!(prometheus_value(&one, "load{cluster=\"a\"}"), Ok(0.75));
        let several = vector(json!([
            {"metric": {"__name__": "other"}, "value": [1.0, "3"]},
            {"metric": {"__name__": "load"}, "value": [1.0, "7"]},
        ]));
        assert_eq!(prometheus_value(&several, "load"), Ok(7.0));
        let ambiguous = prometheus_value(&several, "sum(x)").unwrap_err();
        assert_eq!(ambiguous.reason, MetricFailureReason::InvalidMetric);
        assert!(ambiguous.message.contains("2 samples"), "{}", ambiguous.message);
        let none = prometheus_value(&vector(json!([])), "load").unwrap_err();
        assert_eq!(none.reason, MetricFailureReason::UnknownMetric);
        let scalar = json!({"status": "success", "data": {"resultType": "scalar", "result": [1.0, "2.5"]}});
        assert_eq!(prometheus_value(&scalar, "2.5"), Ok(2.5));
        let error = json!({"status": "error", "errorType": "bad_data", "error": "parse error"});
        let failed = prometheus_value(&error, "(").unwrap_err();
        assert_eq!(failed.reason, MetricFailureReason::UnreachableMetricsProvider);
        assert!(failed.message.contains("parse error"));
        let nan = vector(json!([{"metric": {}, "value": [1.0, "NaN"]}]));
        let value = prometheus_value(&nan, "x").unwrap();
        assert!(
            normalise(value, 0.0, 1.0).is_err(),
            "NaN is read but never scored"
        );
        let garbage = vector(json!([{"metric": {}, "value": [1.0, "fast"]}]));
        assert_eq!(
            prometheus_value(&garbage, "x").unwrap_err().reason,
            MetricFailureReason::InvalidMetric
        );
    }

    #[test]
    fn specs_are_checked_and_errors_name_the_field() {
        let prometheus = |url: &str| ProviderSpec::Prometheus {
            prometheus: PrometheusSpec {
                url: url.into(),
                timeout_seconds: 5,
            },
        };
        assert!(validate_provider(&prometheus("http://127.0.0.1:9090")).is_ok());
        assert!(validate_provider(&prometheus("https://prom.example/prefix")).is_ok());
        for bad in [
            "ftp://x",
            "http://user:pw@x:9090",
            "http://x:9090/?q=1",
            "http://",
        ] {
            let error = validate_provider(&prometheus(bad)).unwrap_err();
            assert!(error.to_string().starts_with("prometheus.url"), "{bad}: {error}");
        }
        let slow = ProviderSpec::Prometheus {
            prometheus: PrometheusSpec {
                url: "http://x:1".into(),
                timeout_seconds: 0,
            },
        };
        assert!(validate_provider(&slow).is_err());
        let not_finite = ProviderSpec::Static {
            values: StaticSpec {
                metrics: BTreeMap::from([("load".to_string(), f64::NAN)]),
            },
        };
        assert!(validate_provider(&not_finite)
            .unwrap_err()
            .to_string()
            .contains("static.metrics.load"));
        let metric = |min: f64, max: f64| MetricSpec {
            min,
            max,
            provider: ProviderMetric {
                name: "prom".into(),
                metric: "load".into(),
            },
        };
        assert!(validate_metric(&metric(0.0, 1.0)).is_ok());
        assert!(validate_metric(&metric(1.0, 1.0))
            .unwrap_err()
            .to_string()
            .starts_with("max"));
        let refs = |weights: &[(&str, f64)]| -> Vec<MetricRef> {
            weights
                .iter()
                .map(|(name, weight)| MetricRef {
                    name: (*name).into(),
                    weight: *weight,
                    namespaced: false,
                })
                .collect()
        };
        assert!(validate_refs(&refs(&[("load", 1.0), ("latency", 0.0)])).is_ok());
        assert!(validate_refs(&refs(&[("load", -1.0)]))
            .unwrap_err()
            .to_string()
            .starts_with("metrics[0].weight"));
        assert!(validate_refs(&refs(&[("load", 1.0), ("load", 2.0)]))
            .unwrap_err()
            .to_string()
            .contains("twice"));
        assert!(
            validate_refs(&refs(&[("load", 1e300)])).is_err(),
            "weights are bounded"
        );
        let wide = validate_metric(&metric(-1e300, 1e300)).unwrap_err();
        assert!(wide.to_string().starts_with("min"), "{wide}");
    }

    #[test]
    fn the_json_shape_is_krakes() {
        let spec: ProviderSpec =
            serde_json::from_value(json!({"type": "static", "static": {"metrics": {"load": 0.5}}})).unwrap();
        assert!(matches!(&spec, ProviderSpec::Static { values } if values.metrics["load"] == 0.5));
        let spec: ProviderSpec =
            serde_json::from_value(json!({"type": "prometheus", "prometheus": {"url": "http://p:9090"}}))
                .unwrap();
        assert!(
            matches!(&spec, ProviderSpec::Prometheus { prometheus } if prometheus.timeout_seconds == DEFAULT_PROMETHEUS_TIMEOUT_SECONDS)
        );
        assert!(serde_json::from_value::<ProviderSpec>(json!({"type": "kafka", "kafka": {}})).is_err());
    }
}
