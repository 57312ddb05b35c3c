//! Reads the metrics a cluster is scored on: static values straight from their provider's spec,
//! Prometheus values over its HTTP API (`GET {url}/api/v1/query?query=…`) with the provider's
//! timeout. What cannot be read is a [`MetricFailure`] with Krake's reason, never an error of
//! the actor: a provider outage makes the cluster `FAILING_METRICS`, and the next good reading
//! clears it.

use std::time::Duration;

use drover_model::scheduling::metrics::{
    prometheus_value, MetricFailure, MetricFailureReason, MetricReadings, MetricSource, ResolvedMetric,
};

/// Most bytes of a Prometheus answer that are read (one sample is a few hundred).
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// Most characters of a failure's message that are replicated.
const MAX_MESSAGE: usize = 256;

fn unreachable(message: impl AsRef<str>) -> MetricFailure {
    MetricFailure::new(
        MetricFailureReason::UnreachableMetricsProvider,
        super::bounded(message.as_ref(), MAX_MESSAGE),
    )
}

/// One Prometheus query's value.
async fn query_prometheus(
    http: &crate::egress::EgressClient,
    url: &str,
    query: &str,
    timeout: Duration,
) -> Result<f64, MetricFailure> {
    let endpoint = format!("{}/api/v1/query", url.trim_end_matches('/'));
    let mut response = http
        .request(reqwest::Method::GET, &endpoint)
        .map_err(|e| unreachable(format!("{endpoint}: {e}")))?
        .query(&[("query", query)])
        .timeout(timeout)
        .send()
        .await
        .map_err(|e| unreachable(format!("{endpoint}: {}", super::agent_driver::without_url(&e))))?;
    let status = response.status();
    let mut body = Vec::new();
    loop {
        match tokio::time::timeout(timeout, response.chunk()).await {
            Ok(Ok(Some(chunk))) if body.len() + chunk.len() <= MAX_ANSWER_BYTES => {
                body.extend_from_slice(&chunk)
            }
            Ok(Ok(Some(_))) => return Err(unreachable(format!("{endpoint}: the answer exceeds 1 MiB"))),
            Ok(Ok(None)) => break,
            Ok(Err(e)) => return Err(unreachable(format!("{endpoint}: {e}"))),
            Err(_) => {
                return Err(unreachable(format!(
                    "{endpoint}: the answer took longer than {timeout:?}"
                )))
            }
        }
    }
    // A refused query (400, 422) still answers Prometheus's JSON with the error in it.
    match serde_json::from_slice::<serde_json::Value>(&body) {
        Ok(answer) => prometheus_value(&answer, query).map_err(|mut failure| {
            failure.message = super::bounded(&failure.message, MAX_MESSAGE);
            failure
        }),
        Err(_) => Err(unreachable(format!(
            "{endpoint}: answered {status} without Prometheus's JSON"
        ))),
    }
}

/// Reads every metric of one cluster, one after another; a Prometheus provider only where the
/// egress policy allows (`http` judges every connection it makes by it).
pub async fn read_metrics(http: crate::egress::EgressClient, metrics: Vec<ResolvedMetric>) -> MetricReadings {
    let mut readings = MetricReadings::default();
    for metric in metrics {
        let value = match &metric.source {
            Ok(MetricSource::Static(value)) => Ok(*value),
            Ok(MetricSource::Prometheus {
                url,
                query,
                timeout_seconds,
            }) => {
                query_prometheus(
                    &http,
                    url,
                    query,
                    Duration::from_secs(u64::from(*timeout_seconds)),
                )
                .await
            }
            Err(failure) => Err(failure.clone()),
        };
        match metric.reading(value) {
            Ok(reading) => {
                readings.values.insert(metric.name, reading);
            }
            Err(failure) => {
                readings.failures.insert(metric.name, failure);
            }
        }
    }
    readings
}
