//! The calls of applications' `shutdown` hooks the leader owes (`krake.md` §6.7): a pure
//! function of the committed state and the leader's clock, so a new leader owes what the old
//! one did.

use super::application::{agent_host, service_addresses, Cleaning, SHUTDOWN_SERVICE};

/// A call of an application's `shutdown` hook the leader owes: `PUT {url}` once per grace
/// (`until_ms` tells one grace from the next, after a `/retry`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ShutdownCall {
    /// The tenant (namespace).
    pub tenant: String,
    /// The application.
    pub name: String,
    /// The end of the grace it is called in.
    pub until_ms: u64,
    /// `http://<its shutdown Service's address>/shutdown`.
    pub url: String,
}

/// The `shutdown` calls due at committed time `now_ms`: every application waiting for its
/// hook within its grace, placed on a cluster, whose manifest has a Service named `shutdown`
/// (without one it cannot be asked, as in Krake, and goes `DEGRADED` when the grace ends).
pub fn shutdown_calls(platform: &crate::platform::Platform, now_ms: u64) -> Vec<ShutdownCall> {
    let mut calls = Vec::new();
    for (tenant_name, tenant) in platform.tenants() {
        for (name, extras) in &tenant.krake.applications {
            let Some(Cleaning::Waiting { until_ms }) = extras.cleaning else {
                continue;
            };
            if now_ms > until_ms {
                continue;
            }
            let service = tenant.services.get(name);
            let Some(cluster) = service.and_then(|s| s.placement.as_ref()) else {
                continue;
            };
            let Some(stored) = platform
                .tenant(&cluster.tenant)
                .and_then(|t| t.clusters.get(&cluster.name))
            else {
                continue;
            };
            let addresses = service_addresses(extras, agent_host(&stored.endpoint), service);
            if let Some(address) = addresses.get(SHUTDOWN_SERVICE) {
                calls.push(ShutdownCall {
                    tenant: tenant_name.clone(),
                    name: name.clone(),
                    until_ms,
                    url: format!("http://{address}/shutdown"),
                });
            }
        }
    }
    calls
}
