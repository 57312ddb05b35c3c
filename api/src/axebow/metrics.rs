//! `/tenant/{t}/metricsprovider/…` and `/tenant/{t}/metric/…`: Krake's metrics providers
//! (`static` values, or a Prometheus server) and metrics (a provider, the name there, the bounds
//! of its normalisation) that clusters are scored on.
//!
//! The operator tenant's are the platform-wide ones (Krake's global metrics): operators write
//! them and every registered user reads them. A tenant's own are its admins' to write and its
//! members' to read. `PUT` creates or replaces; a cluster whose metric or provider is removed
//! fails that metric (`FAILING_METRICS`) until it is back.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use drover_model::cluster::ClusterOp;
use drover_model::platform::{PlatformError, PlatformRead};
use drover_model::scheduling::metrics::{MetricSpec, ProviderSpec};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::context::AxebowState;
use super::context::Caller;
use super::reply::{done, ok, AxebowError, Body, Empty, Envelope};
use super::store;

/// A metrics provider as the API shows it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ProviderView {
    /// Owning tenant (`operator`: platform-wide).
    pub tenant: String,
    /// Name.
    pub name: String,
    /// Where its values come from.
    pub spec: ProviderSpec,
}

/// A metric as the API shows it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct MetricView {
    /// Owning tenant (`operator`: platform-wide).
    pub tenant: String,
    /// Name.
    pub name: String,
    /// Provider, name there and bounds.
    pub spec: MetricSpec,
}

fn tenant_missing(tenant: &str) -> PlatformError {
    PlatformError::NotFound(format!("tenant {tenant:?} not found"))
}

/// Creates or replaces a metrics provider (tenant admins; operators for platform-wide ones).
#[utoipa::path(put, path = "/api/1.0-beta/tenant/{tenant}/metricsprovider/{name}", tag = "metrics", request_body = ProviderSpec,
    params(("tenant" = String, Path, description = "Tenant name (operator: platform-wide)"), ("name" = String, Path, description = "Provider name")),
    responses((status = 200, description = "Stored", body = Empty)))]
pub async fn put_provider(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path((tenant, name)): Path<(String, String)>,
    Body(spec): Body<ProviderSpec>,
) -> Result<Empty, AxebowError> {
    if let ProviderSpec::Prometheus { prometheus } = &spec {
        if let Some(why) = crate::agents::egress_refused(&state.axebow.options.egress, &prometheus.url).await
        {
            return Err(AxebowError::invalid(
                "prometheus.url",
                format!("{why}: the control plane does not call it on a tenant's behalf (the operator allows networks and hosts with --tenant-egress-allow)"),
            ));
        }
    }
    let change = ClusterOp::PutMetricsProvider { tenant, name, spec };
    store::write_cluster(&state, caller, change, &headers).await?;
    Ok(done())
}

/// Removes a metrics provider.
#[utoipa::path(delete, path = "/api/1.0-beta/tenant/{tenant}/metricsprovider/{name}", tag = "metrics",
    params(("tenant" = String, Path, description = "Tenant name"), ("name" = String, Path, description = "Provider name")),
    responses((status = 200, description = "Removed", body = Empty)))]
pub async fn delete_provider(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path((tenant, name)): Path<(String, String)>,
) -> Result<Empty, AxebowError> {
    let change = ClusterOp::DeleteMetricsProvider { tenant, name };
    store::write_cluster(&state, caller, change, &headers).await?;
    Ok(done())
}

/// One metrics provider.
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/metricsprovider/{name}", tag = "metrics",
    params(("tenant" = String, Path, description = "Tenant name"), ("name" = String, Path, description = "Provider name")),
    responses((status = 200, description = "The provider", body = Envelope<ProviderView>)))]
pub async fn get_provider(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    Path((tenant, name)): Path<(String, String)>,
) -> Result<Envelope<ProviderView>, AxebowError> {
    store::read(&state, &caller, PlatformRead::Metrics(&tenant), |p, _| {
        let stored = p.tenant(&tenant).ok_or_else(|| tenant_missing(&tenant))?;
        let spec = stored.metrics_providers.get(&name).ok_or_else(|| {
            PlatformError::NotFound(format!("tenant {tenant:?} has no metrics provider {name:?}"))
        })?;
        Ok(ProviderView {
            tenant: tenant.clone(),
            name: name.clone(),
            spec: spec.clone(),
        })
    })
    .await
    .map(ok)
}

/// The metrics providers of a tenant.
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/metricsprovider", tag = "metrics",
    params(("tenant" = String, Path, description = "Tenant name")),
    responses((status = 200, description = "The providers", body = Envelope<Vec<ProviderView>>)))]
pub async fn list_providers(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    Path(tenant): Path<String>,
) -> Result<Envelope<Vec<ProviderView>>, AxebowError> {
    store::read(&state, &caller, PlatformRead::Metrics(&tenant), |p, _| {
        let stored = p.tenant(&tenant).ok_or_else(|| tenant_missing(&tenant))?;
        Ok(stored
            .metrics_providers
            .iter()
            .map(|(name, spec)| ProviderView {
                tenant: tenant.clone(),
                name: name.clone(),
                spec: spec.clone(),
            })
            .collect())
    })
    .await
    .map(ok)
}

/// Creates or replaces a metric (tenant admins; operators for platform-wide ones).
#[utoipa::path(put, path = "/api/1.0-beta/tenant/{tenant}/metric/{name}", tag = "metrics", request_body = MetricSpec,
    params(("tenant" = String, Path, description = "Tenant name (operator: platform-wide)"), ("name" = String, Path, description = "Metric name")),
    responses((status = 200, description = "Stored", body = Empty)))]
pub async fn put_metric(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path((tenant, name)): Path<(String, String)>,
    Body(spec): Body<MetricSpec>,
) -> Result<Empty, AxebowError> {
    let change = ClusterOp::PutMetric { tenant, name, spec };
    store::write_cluster(&state, caller, change, &headers).await?;
    Ok(done())
}

/// Removes a metric.
#[utoipa::path(delete, path = "/api/1.0-beta/tenant/{tenant}/metric/{name}", tag = "metrics",
    params(("tenant" = String, Path, description = "Tenant name"), ("name" = String, Path, description = "Metric name")),
    responses((status = 200, description = "Removed", body = Empty)))]
pub async fn delete_metric(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path((tenant, name)): Path<(String, String)>,
) -> Result<Empty, AxebowError> {
    let change = ClusterOp::DeleteMetric { tenant, name };
    store::write_cluster(&state, caller, change, &headers).await?;
    Ok(done())
}

/// One metric.
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/metric/{name}", tag = "metrics",
    params(("tenant" = String, Path, description = "Tenant name"), ("name" = String, Path, description = "Metric name")),
    responses((status = 200, description = "The metric", body = Envelope<MetricView>)))]
pub async fn get_metric(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    Path((tenant, name)): Path<(String, String)>,
) -> Result<Envelope<MetricView>, AxebowError> {
    store::read(&state, &caller, PlatformRead::Metrics(&tenant), |p, _| {
        let stored = p.tenant(&tenant).ok_or_else(|| tenant_missing(&tenant))?;
        let spec = stored
            .metrics
            .get(&name)
            .ok_or_else(|| PlatformError::NotFound(format!("tenant {tenant:?} has no metric {name:?}")))?;
        Ok(MetricView {
            tenant: tenant.clone(),
            name: name.clone(),
            spec: spec.clone(),
        })
    })
    .await
    .map(ok)
}

/// The metrics of a tenant.
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/metric", tag = "metrics",
    params(("tenant" = String, Path, description = "Tenant name")),
    responses((status = 200, description = "The metrics", body = Envelope<Vec<MetricView>>)))]
pub async fn list_metrics(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    Path(tenant): Path<String>,
) -> Result<Envelope<Vec<MetricView>>, AxebowError> {
    store::read(&state, &caller, PlatformRead::Metrics(&tenant), |p, _| {
        let stored = p.tenant(&tenant).ok_or_else(|| tenant_missing(&tenant))?;
        Ok(stored
            .metrics
            .iter()
            .map(|(name, spec)| MetricView {
                tenant: tenant.clone(),
                name: name.clone(),
                spec: spec.clone(),
            })
            .collect())
    })
    .await
    .map(ok)
}
