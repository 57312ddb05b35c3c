//! HTTP request counts and latencies by route and status.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};

use crate::error::ApiError;

/// The HTTP metrics of one node.
#[derive(Clone)]
pub struct HttpMetrics {
    requests: IntCounterVec,
    duration: HistogramVec,
    /// The node, named in every request's span.
    node: u64,
}

impl HttpMetrics {
    /// Creates and registers the metrics of node `node`.
    pub fn register(registry: &Registry, node: u64) -> Result<Self, ApiError> {
        let requests = IntCounterVec::new(
            Opts::new(
                "drover_http_requests_total",
                "HTTP requests by route, method and status",
            ),
            &["route", "method", "status"],
        )?;
        let duration = HistogramVec::new(
            HistogramOpts::new(
                "drover_http_request_duration_seconds",
                "HTTP request latency by route and method",
            )
            .buckets(vec![
                0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
            ]),
            &["route", "method"],
        )?;
        registry.register(Box::new(requests.clone()))?;
        registry.register(Box::new(duration.clone()))?;
        Ok(Self {
            requests,
            duration,
            node,
        })
    }
}

/// The header carrying a request's id.
const REQUEST_ID: &str = "x-request-id";

/// Middleware that records every request under its route template (not the raw path, so
/// names do not explode the label set), inside a span named by its request id.
pub async fn record(State(state): State<HttpMetrics>, request: Request, next: Next) -> Response {
    // Held by reference count, not copied: this runs for every request.
    let route = request.extensions().get::<MatchedPath>().cloned();
    let route = route.as_ref().map_or("unmatched", MatchedPath::as_str);
    let method = request.method().clone();
    let started = Instant::now();
    // A caller's own request id (visible ASCII, at most 64 bytes) or a new one: it names the
    // request's span, so every line logged while serving it carries it, and goes back in the
    // answer's `x-request-id`.
    let request_id = request
        .headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|id| !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_graphic()))
        .map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_string);
    let span = tracing::info_span!(
        "request",
        id = %request_id,
        node = state.node,
        method = %method,
        route = %route,
    );
    let mut response = tracing::Instrument::instrument(next.run(request), span).await;
    if let Ok(value) = axum::http::HeaderValue::from_str(&request_id) {
        response.headers_mut().insert(REQUEST_ID, value);
    }
    state
        .requests
        .with_label_values(&[route, method.as_str(), response.status().as_str()])
        .inc();
    state
        .duration
        .with_label_values(&[route, method.as_str()])
        .observe(started.elapsed().as_secs_f64());
    response
}
