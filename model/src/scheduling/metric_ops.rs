//! The platform's side of metrics: registering providers and metrics, and the sources the
//! cluster actors read.

use super::metrics::{
    MetricFailure, MetricFailureReason, MetricRef, MetricSource, ProviderSpec, ResolvedMetric,
};
use crate::cluster::ClusterRef;
use crate::platform::identity::OPERATOR_TENANT;
use crate::platform::Platform;

impl Platform {
    /// Resolves one of a cluster's metric references: the metric in the cluster's tenant
    /// (`namespaced`) or the operator tenant's, then its provider in the metric's tenant.
    fn resolve_metric(&self, cluster: &ClusterRef, metric: &MetricRef) -> ResolvedMetric {
        self.resolve_metric_of(&cluster.tenant, metric)
    }

    /// Resolves a metric reference of an object of tenant `owner` (a cluster, a Krake cloud):
    /// the metric in `owner` (`namespaced`) or the operator tenant's, then its provider in the
    /// metric's tenant.
    pub fn resolve_metric_of(&self, owner: &str, metric: &MetricRef) -> ResolvedMetric {
        let tenant = if metric.namespaced { owner } else { OPERATOR_TENANT };
        let mut resolved = ResolvedMetric {
            name: metric.name.clone(),
            weight: metric.weight,
            min: 0.0,
            max: 1.0,
            source: Err(MetricFailure::new(MetricFailureReason::UnknownMetric, "")),
        };
        let owner = self.tenant(tenant);
        let Some(spec) = owner.and_then(|t| t.metrics.get(&metric.name)) else {
            resolved.source = Err(MetricFailure::new(
                MetricFailureReason::UnknownMetric,
                format!("tenant {tenant:?} has no metric {:?}", metric.name),
            ));
            return resolved;
        };
        (resolved.min, resolved.max) = (spec.min, spec.max);
        let provider = owner.and_then(|t| t.metrics_providers.get(&spec.provider.name));
        resolved.source = match provider {
            None => Err(MetricFailure::new(
                MetricFailureReason::UnknownMetricsProvider,
                format!(
                    "tenant {tenant:?} has no metrics provider {:?}",
                    spec.provider.name
                ),
            )),
            Some(ProviderSpec::Static { values }) => values
                .metrics
                .get(&spec.provider.metric)
                .map(|value| MetricSource::Static(*value))
                .ok_or_else(|| {
                    MetricFailure::new(
                        MetricFailureReason::UnknownMetric,
                        format!(
                            "the static provider {:?} has no value {:?}",
                            spec.provider.name, spec.provider.metric
                        ),
                    )
                }),
            Some(ProviderSpec::Prometheus { prometheus }) => Ok(MetricSource::Prometheus {
                url: prometheus.url.clone(),
                query: spec.provider.metric.clone(),
                timeout_seconds: prometheus.timeout_seconds,
            }),
        };
        resolved
    }

    /// Every metric a cluster is scored on, resolved (empty for an unknown cluster).
    pub fn cluster_metric_sources(&self, cluster: &ClusterRef) -> Vec<ResolvedMetric> {
        self.cluster(cluster).map_or_else(Vec::new, |stored| {
            stored
                .metrics
                .iter()
                .map(|metric| self.resolve_metric(cluster, metric))
                .collect()
        })
    }
}
