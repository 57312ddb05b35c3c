//! A service's roles and instances (Axebow S6–S10): the instances of a role as the agent of the
//! service's cluster reports them, restarting a role or one instance (`DELETE`, as the seed
//! says; committed, then carried out by the cluster's actor), and an instance's logs. Every
//! instance has one container, named after its role.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use drover_model::cluster::agent_api::{EndReason, Health, InstanceId, InstanceState, LogQuery, Usage};
use drover_model::platform::{PlatformError, PlatformRead};
use drover_model::service::placement::set_name;
use drover_model::service::ServiceOp;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::clusters::{agents, read_failed};
use super::context::AxebowState;
use super::context::Caller;
use super::reply::{done, ok, AxebowError, Empty, Envelope, Params};
use super::store;

/// One instance of a role.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstanceInfo {
    /// The instance id.
    pub id: String,
    /// The agent that runs it.
    pub node: String,
    /// Running (and healthy, when it has a probe).
    pub ready: bool,
    /// `starting`, `running`, `exited` or `failed`.
    pub status: InstanceState,
    /// Times it was started again.
    pub restarts: u32,
    /// Start time of its current run (RFC 3339).
    pub creation_timestamp: Option<String>,
    /// Exit code of its last run, when it ended.
    pub exit_code: Option<i32>,
    /// Why its last run ended, when the agent knows more than the exit code (`OOMKilled`: killed
    /// at its memory limit; `StartError`: its program could not be started).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<EndReason>,
    /// Runs killed at its memory limit.
    pub oom_kills: u32,
    /// What it uses now, as its agent measured it when asked (`exec` agents).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageInfo>,
}

/// What an instance uses now.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageInfo {
    /// CPU time of everything it ran, in seconds.
    pub cpu_seconds: f64,
    /// Resident memory of its processes, in bytes.
    pub memory_bytes: u64,
    /// The memory limit it runs under, in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_limit_bytes: Option<u64>,
    /// The CPU quota it runs under, in thousandths of a CPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_quota_millis: Option<u64>,
    /// Its processes now.
    pub processes: u32,
}

impl From<Usage> for UsageInfo {
    fn from(usage: Usage) -> Self {
        Self {
            cpu_seconds: usage.cpu_time_ms as f64 / 1000.0,
            memory_bytes: usage.memory_bytes,
            memory_limit_bytes: usage.memory_limit_bytes,
            cpu_quota_millis: usage.cpu_quota_millis,
            processes: usage.processes,
        }
    }
}

/// `GET …/service/{s}/role/{r}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RoleInfo {
    /// Instances by id, as the agent reports them.
    pub instances: BTreeMap<String, InstanceInfo>,
}

/// `GET …/logs/…` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogParams {
    /// Last lines (default 100, at most 10,000).
    pub tail: Option<u32>,
    /// Only what was written in the last `delta` seconds.
    pub delta: Option<u64>,
    /// Instead of the last lines, what was written from this byte offset on: the
    /// `x-drover-log-offset` of the previous read (how `drover service logs -f` follows).
    pub from: Option<u64>,
}

/// The endpoint and token of the cluster a service runs on, after checking the role exists.
async fn cluster_of(
    state: &AxebowState,
    caller: &Caller,
    tenant: &str,
    service: &str,
    role: &str,
) -> Result<drover_model::cluster::AgentAccess, AxebowError> {
    store::read(state, &caller.0, PlatformRead::Tenant(tenant), |p, _| {
        let stored = p.service(tenant, service)?;
        let has_role = stored
            .shown()
            .is_some_and(|r| r.deployment.roles.contains_key(role));
        if !has_role {
            return Err(PlatformError::NotFound(format!(
                "service {service:?} has no role {role:?}"
            )));
        }
        let cluster = stored
            .placement
            .as_ref()
            .and_then(|c| p.cluster(c))
            .ok_or_else(|| {
                PlatformError::Conflict(format!("service {service:?} does not run on a cluster yet"))
            })?;
        Ok(cluster.access())
    })
    .await
}

fn prefix(tenant: &str, service: &str, role: &str) -> Result<String, AxebowError> {
    let set = set_name(tenant, service)
        .ok_or_else(|| AxebowError::invalid("service", "not a valid service name"))?;
    Ok(format!("{set}.{role}."))
}

/// The instances of a role, from the agent of the service's cluster.
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/service/{service}/role/{role}", tag = "services",
    params(("tenant" = String, Path, description = "Tenant name"), ("service" = String, Path, description = "Service name"),
        ("role" = String, Path, description = "Role name")),
    responses((status = 200, description = "The role's instances", body = Envelope<RoleInfo>)))]
pub async fn role(
    State(state): State<AxebowState>,
    caller: Caller,
    Path((tenant, service, role)): Path<(String, String, String)>,
) -> Result<Envelope<RoleInfo>, AxebowError> {
    let agent = cluster_of(&state, &caller, &tenant, &service, &role).await?;
    let inventory = agents(&state)?.inventory(&agent).await.map_err(read_failed)?;
    let prefix = prefix(&tenant, &service, &role)?;
    let instances = inventory
        .instances
        .into_iter()
        .filter(|i| i.id.as_str().starts_with(&prefix))
        .map(|i| {
            let info = InstanceInfo {
                id: i.id.to_string(),
                node: inventory.agent.clone(),
                ready: i.state == InstanceState::Running && i.health != Health::Unhealthy,
                status: i.state,
                restarts: i.restarts,
                creation_timestamp: i.started_at,
                exit_code: i.exit_code,
                reason: i.reason,
                oom_kills: i.oom_kills,
                usage: i.usage.map(UsageInfo::from),
            };
            (info.id.clone(), info)
        })
        .collect();
    Ok(ok(RoleInfo { instances }))
}

async fn restart(
    state: AxebowState,
    caller: Caller,
    headers: HeaderMap,
    change: ServiceOp,
) -> Result<Empty, AxebowError> {
    store::write_service(&state, caller.0, change, &headers).await?;
    Ok(done())
}

/// Restarts every instance of a role.
#[utoipa::path(delete, path = "/api/1.0-beta/tenant/{tenant}/service/{service}/role/{role}", tag = "services",
    params(("tenant" = String, Path, description = "Tenant name"), ("service" = String, Path, description = "Service name"),
        ("role" = String, Path, description = "Role name")),
    responses((status = 200, description = "Restart requested", body = Empty)))]
pub async fn restart_role(
    State(state): State<AxebowState>,
    caller: Caller,
    headers: HeaderMap,
    Path((tenant, service, role)): Path<(String, String, String)>,
) -> Result<Empty, AxebowError> {
    let change = ServiceOp::Restart {
        tenant,
        service,
        role,
        instance: None,
    };
    restart(state, caller, headers, change).await
}

/// Restarts one instance.
#[utoipa::path(delete, path = "/api/1.0-beta/tenant/{tenant}/service/{service}/role/{role}/instance/{instance}", tag = "services",
    params(("tenant" = String, Path, description = "Tenant name"), ("service" = String, Path, description = "Service name"),
        ("role" = String, Path, description = "Role name"), ("instance" = String, Path, description = "Instance id")),
    responses((status = 200, description = "Restart requested", body = Empty)))]
pub async fn restart_instance(
    State(state): State<AxebowState>,
    caller: Caller,
    headers: HeaderMap,
    Path((tenant, service, role, instance)): Path<(String, String, String, String)>,
) -> Result<Empty, AxebowError> {
    let instance =
        InstanceId::parse(&instance).map_err(|e| AxebowError::invalid("instance", e.to_string()))?;
    let change = ServiceOp::Restart {
        tenant,
        service,
        role,
        instance: Some(instance),
    };
    restart(state, caller, headers, change).await
}

async fn logs_of(
    state: AxebowState,
    caller: Caller,
    (tenant, service, role, instance): (String, String, String, String),
    params: LogParams,
) -> Result<Response, AxebowError> {
    let id = InstanceId::parse(&instance).map_err(|e| AxebowError::invalid("instance", e.to_string()))?;
    if !id.as_str().starts_with(&prefix(&tenant, &service, &role)?) {
        return Err(AxebowError::not_found(format!(
            "{id} is not an instance of role {role:?} of {service:?}"
        )));
    }
    let agent = cluster_of(&state, &caller, &tenant, &service, &role).await?;
    let since = params.delta.map(|seconds| {
        crate::boskos::wire::rfc3339_ms(
            drover_raft::wall_clock_ms().saturating_sub(seconds.saturating_mul(1000)),
        )
    });
    let query = LogQuery {
        tail: params.tail,
        since,
        from: params.from,
    };
    let chunk = agents(&state)?
        .logs(&agent, &id, query)
        .await
        .map_err(read_failed)?;
    Ok(crate::agents::log_response(chunk))
}

/// An instance's output (stdout and stderr); `delta` keeps what the last N seconds wrote.
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/logs/service/{service}/role/{role}/instance/{instance}", tag = "services",
    params(("tenant" = String, Path, description = "Tenant name"), ("service" = String, Path, description = "Service name"),
        ("role" = String, Path, description = "Role name"), ("instance" = String, Path, description = "Instance id"), LogParams),
    responses((status = 200, description = "The output", body = String, content_type = "text/plain")))]
pub async fn logs(
    State(state): State<AxebowState>,
    caller: Caller,
    Path(path): Path<(String, String, String, String)>,
    Params(params): Params<LogParams>,
) -> Result<Response, AxebowError> {
    logs_of(state, caller, path, params).await
}

/// The same, naming the container (an instance has one, named after its role).
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/logs/service/{service}/role/{role}/instance/{instance}/container/{container}", tag = "services",
    params(("tenant" = String, Path, description = "Tenant name"), ("service" = String, Path, description = "Service name"),
        ("role" = String, Path, description = "Role name"), ("instance" = String, Path, description = "Instance id"),
        ("container" = String, Path, description = "Container name: the role's"), LogParams),
    responses((status = 200, description = "The output", body = String, content_type = "text/plain")))]
pub async fn container_logs(
    State(state): State<AxebowState>,
    caller: Caller,
    Path((tenant, service, role, instance, container)): Path<(String, String, String, String, String)>,
    Params(params): Params<LogParams>,
) -> Result<Response, AxebowError> {
    if container != role {
        return Err(AxebowError::not_found(format!(
            "an instance of role {role:?} has one container, {role:?}; no {container:?}"
        )));
    }
    logs_of(state, caller, (tenant, service, role, instance), params).await
}
