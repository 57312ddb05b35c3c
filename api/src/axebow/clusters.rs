//! `/tenant/{t}/cluster/…`: workload clusters (register, list, get, change labels, endpoint or
//! token, drain, deregister), desired sets pinned to a cluster, and live reads of its agent
//! (inventory, an instance's logs); `/cluster`: every cluster, for operators;
//! `…/environment/{e}/clusters`: the clusters an environment may use.
//!
//! Admins of a tenant register its own clusters; platform-wide clusters belong to the operator
//! tenant. Any member reads; the join token is write-only and never returned.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use drover_model::cluster::agent_api::{InstanceId, Inventory, LogQuery, SetName};
use drover_model::cluster::views::{ClusterView, EnvironmentClusters};
use drover_model::cluster::{ClusterOp, ClusterPatch, ClusterRef, ClusterRegistration, SetSpec};
use drover_model::platform::{Identity, PlatformRead, Requirement, Role};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::context::AxebowState;
use super::context::Caller;
use super::reply::{codes, done, ok, AxebowError, Body, Empty, Envelope, Params};
use super::store;
use crate::agents::AgentReadError;

/// `PUT …/cluster/{c}/drain`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DrainBody {
    /// `true`: drain (NOTREADY, nothing new placed there); `false`: back in service.
    pub draining: bool,
}

/// `GET …/instance/{id}/logs` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogParams {
    /// Last lines (the agent's default 100, at most 10,000).
    pub tail: Option<u32>,
    /// Only what was written after this RFC 3339 time.
    pub since: Option<String>,
    /// Instead of the last lines, what was written from this byte offset on: the
    /// `x-drover-log-offset` of the previous read (how `drover service logs -f` follows).
    pub from: Option<u64>,
}

fn at(tenant: String, name: String) -> ClusterRef {
    ClusterRef { tenant, name }
}

fn set_name(text: &str) -> Result<SetName, AxebowError> {
    SetName::parse(text).map_err(|e| AxebowError::invalid("set", e.to_string()))
}

/// Registers a cluster: its agent's endpoint and join token, and labels (tenant admins;
/// operators for the operator tenant's platform-wide clusters).
#[utoipa::path(post, path = "/api/1.0-beta/tenant/{tenant}/cluster/{cluster}", tag = "clusters", request_body = ClusterRegistration,
    params(("tenant" = String, Path, description = "Tenant name (operator: platform-wide)"), ("cluster" = String, Path, description = "Cluster name")),
    responses((status = 200, description = "Registered", body = Empty)))]
pub async fn register(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path((tenant, name)): Path<(String, String)>,
    Body(registration): Body<ClusterRegistration>,
) -> Result<Empty, AxebowError> {
    let cluster = at(tenant, name);
    let allowed = state.axebow.options.allow_plain_http_agents;
    if let Some((field, message)) =
        crate::agents::agent_transport_refused(allowed, &registration.endpoint, registration.ca.as_deref())
    {
        return Err(AxebowError::invalid(field, message));
    }
    refuse_a_bound_agent(&state, &caller, &cluster, &registration).await?;
    let change = ClusterOp::Register {
        cluster,
        uid: uuid::Uuid::new_v4().to_string(),
        registration,
    };
    store::write_cluster(&state, caller, change, &headers).await?;
    Ok(done())
}

/// Refuses (`409`) to register an agent that is already bound to another registered cluster
/// object, whatever address it is given under: its agent id and binding are read from the
/// agent itself. Only a caller who may register clusters in the tenant makes this node call the
/// endpoint; an agent that does not answer (yet) is registered, and the agent still refuses a
/// second cluster object's changes.
async fn refuse_a_bound_agent(
    state: &AxebowState,
    caller: &Identity,
    cluster: &ClusterRef,
    registration: &ClusterRegistration,
) -> Result<(), AxebowError> {
    let requirement = Requirement::Tenant {
        tenant: &cluster.tenant,
        role: Role::Admin,
    };
    store::read(
        state,
        caller,
        PlatformRead::Tenant(&cluster.tenant),
        |platform, _| platform.authorize(caller, requirement).map(|_| ()),
    )
    .await?;
    // Only an endpoint the apply would accept is called; the apply refuses the rest with a 400.
    let Some(agents) = state.agents.clone() else {
        return Ok(());
    };
    if drover_model::platform::validate_endpoint(&registration.endpoint).is_err() {
        return Ok(());
    }
    let access = drover_model::cluster::AgentAccess {
        endpoint: registration.endpoint.clone(),
        token: registration.join_token.clone(),
        ca: registration.ca.clone(),
    };
    let identity = match agents.identity(&access).await {
        Ok(Some(identity)) => identity,
        // Not reachable, refused, or an agent without identity: nothing to compare with.
        Ok(None) | Err(_) => return Ok(()),
    };
    let Some(bound) = identity.cluster_uid else {
        return Ok(());
    };
    let tenant = cluster.tenant.clone();
    let driver = store::read(
        state,
        caller,
        PlatformRead::Tenant(&cluster.tenant),
        move |platform, _| {
            Ok(platform
                .clusters()
                .find(|(_, stored)| stored.uid == bound)
                .map(|(at, _)| at))
        },
    )
    .await?;
    match driver {
        Some(other) => {
            // Named when the caller may see it: its own tenant's, or a platform-wide one.
            let whom = if other.tenant == tenant || other.tenant == drover_model::platform::OPERATOR_TENANT {
                format!("cluster {}/{}", other.tenant, other.name)
            } else {
                "a cluster of another tenant".to_string()
            };
            Err(AxebowError::new(
                StatusCode::CONFLICT,
                codes::CONFLICT,
                format!(
                    "the agent at {} (agent {}) is already driven by {whom}; one agent is one cluster: deregister that one first",
                    registration.endpoint, identity.agent_id
                ),
            ))
        }
        // Bound to a cluster object that no longer exists: the new one takes it over.
        None => Ok(()),
    }
}

/// Changes a cluster's labels, endpoint or join token (what is left out stays).
#[utoipa::path(patch, path = "/api/1.0-beta/tenant/{tenant}/cluster/{cluster}", tag = "clusters", request_body = ClusterPatch,
    params(("tenant" = String, Path, description = "Tenant name"), ("cluster" = String, Path, description = "Cluster name")),
    responses((status = 200, description = "Changed", body = Empty)))]
pub async fn patch(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path((tenant, name)): Path<(String, String)>,
    Body(patch): Body<ClusterPatch>,
) -> Result<Empty, AxebowError> {
    let allowed = state.axebow.options.allow_plain_http_agents;
    let endpoint = patch.endpoint.as_deref().unwrap_or("https://");
    if let Some((field, message)) =
        crate::agents::agent_transport_refused(allowed, endpoint, patch.ca.as_deref())
    {
        return Err(AxebowError::invalid(field, message));
    }
    let change = ClusterOp::Patch {
        cluster: at(tenant, name),
        patch,
    };
    store::write_cluster(&state, caller, change, &headers).await?;
    Ok(done())
}

/// Drains a cluster (`NOTREADY`) or returns it to service.
#[utoipa::path(put, path = "/api/1.0-beta/tenant/{tenant}/cluster/{cluster}/drain", tag = "clusters", request_body = DrainBody,
    params(("tenant" = String, Path, description = "Tenant name"), ("cluster" = String, Path, description = "Cluster name")),
    responses((status = 200, description = "Changed", body = Empty)))]
pub async fn drain(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path((tenant, name)): Path<(String, String)>,
    Body(body): Body<DrainBody>,
) -> Result<Empty, AxebowError> {
    let change = ClusterOp::Drain {
        cluster: at(tenant, name),
        draining: body.draining,
    };
    store::write_cluster(&state, caller, change, &headers).await?;
    Ok(done())
}

/// Deregisters a cluster. Its agent is not told: what runs there keeps running until the agent
/// is given other desired sets or stopped.
#[utoipa::path(delete, path = "/api/1.0-beta/tenant/{tenant}/cluster/{cluster}", tag = "clusters",
    params(("tenant" = String, Path, description = "Tenant name"), ("cluster" = String, Path, description = "Cluster name")),
    responses((status = 200, description = "Deregistered", body = Empty)))]
pub async fn deregister(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path((tenant, name)): Path<(String, String)>,
) -> Result<Empty, AxebowError> {
    let change = ClusterOp::Deregister {
        cluster: at(tenant, name),
    };
    store::write_cluster(&state, caller, change, &headers).await?;
    Ok(done())
}

/// One cluster: endpoint, labels, state with its reason, facts, instance counts, the recent
/// transitions and the pinned sets (never the join token).
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/cluster/{cluster}", tag = "clusters",
    params(("tenant" = String, Path, description = "Tenant name"), ("cluster" = String, Path, description = "Cluster name")),
    responses((status = 200, description = "The cluster", body = Envelope<ClusterView>)))]
pub async fn get(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    Path((tenant, name)): Path<(String, String)>,
) -> Result<Envelope<ClusterView>, AxebowError> {
    let cluster = at(tenant, name);
    store::read(&state, &caller, PlatformRead::Tenant(&cluster.tenant), |p, _| {
        p.cluster_view(&cluster)
    })
    .await
    .map(ok)
}

/// The clusters of a tenant.
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/cluster", tag = "clusters",
    params(("tenant" = String, Path, description = "Tenant name")),
    responses((status = 200, description = "The clusters", body = Envelope<Vec<ClusterView>>)))]
pub async fn list(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    Path(tenant): Path<String>,
) -> Result<Envelope<Vec<ClusterView>>, AxebowError> {
    store::read(&state, &caller, PlatformRead::Tenant(&tenant), |p, _| {
        p.cluster_list(&tenant)
    })
    .await
    .map(ok)
}

/// Every cluster of every tenant (operators).
#[utoipa::path(get, path = "/api/1.0-beta/cluster", tag = "clusters",
    responses((status = 200, description = "The clusters", body = Envelope<Vec<ClusterView>>)))]
pub async fn list_all(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
) -> Result<Envelope<Vec<ClusterView>>, AxebowError> {
    let (views, _) = state
        .raft
        .read(drover_raft::Consistency::Linearizable, |s| {
            let platform = s.platform();
            platform.authorize(&caller, Requirement::Operator)?;
            Ok::<_, drover_model::platform::PlatformError>(platform.all_clusters())
        })
        .await?;
    Ok(ok(views?))
}

/// Pins a desired set to the cluster: `count` instances of one program, with ids
/// `{set}.main.r{revision}.{ordinal}` (the revision rises when the program, resources or env
/// change). The leader's cluster actor sends it to the agent.
#[utoipa::path(put, path = "/api/1.0-beta/tenant/{tenant}/cluster/{cluster}/set/{set}", tag = "clusters", request_body = SetSpec,
    params(("tenant" = String, Path, description = "Tenant name"), ("cluster" = String, Path, description = "Cluster name"),
        ("set" = String, Path, description = "Set name")),
    responses((status = 200, description = "Stored", body = Empty)))]
pub async fn put_set(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path((tenant, name, set)): Path<(String, String, String)>,
    Body(spec): Body<SetSpec>,
) -> Result<Empty, AxebowError> {
    store::images_allowed(&state, drover_model::image_policy::set_images(&spec)).await?;
    let change = ClusterOp::PutSet {
        cluster: at(tenant, name),
        set: set_name(&set)?,
        spec,
    };
    store::write_cluster(&state, caller, change, &headers).await?;
    Ok(done())
}

/// Removes a desired set; the agent stops its instances.
#[utoipa::path(delete, path = "/api/1.0-beta/tenant/{tenant}/cluster/{cluster}/set/{set}", tag = "clusters",
    params(("tenant" = String, Path, description = "Tenant name"), ("cluster" = String, Path, description = "Cluster name"),
        ("set" = String, Path, description = "Set name")),
    responses((status = 200, description = "Removed", body = Empty)))]
pub async fn delete_set(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path((tenant, name, set)): Path<(String, String, String)>,
) -> Result<Empty, AxebowError> {
    let change = ClusterOp::DeleteSet {
        cluster: at(tenant, name),
        set: set_name(&set)?,
    };
    store::write_cluster(&state, caller, change, &headers).await?;
    Ok(done())
}

/// The clusters an environment may use (its tenant's own and, unless it is isolated, the
/// platform-wide ones, narrowed by its `clusters` selection) and their free capacity.
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/account/{account}/environment/{environment}/clusters", tag = "clusters",
    params(("tenant" = String, Path, description = "Tenant name"), ("account" = String, Path, description = "Account name"),
        ("environment" = String, Path, description = "Environment name")),
    responses((status = 200, description = "The usable clusters", body = Envelope<EnvironmentClusters>)))]
pub async fn environment_clusters(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    Path((tenant, account, environment)): Path<(String, String, String)>,
) -> Result<Envelope<EnvironmentClusters>, AxebowError> {
    store::read(&state, &caller, PlatformRead::Tenant(&tenant), |p, _| {
        p.environment_clusters(&tenant, &account, &environment)
    })
    .await
    .map(ok)
}

/// Asks the leader's cluster actor to restart one pinned instance (admins). The request is
/// committed at once and carried out at the actor's next probe; the cluster shows it under
/// `pending_restarts` until then.
#[utoipa::path(post, path = "/api/1.0-beta/tenant/{tenant}/cluster/{cluster}/instance/{instance}/restart", tag = "clusters",
    params(("tenant" = String, Path, description = "Tenant name"), ("cluster" = String, Path, description = "Cluster name"),
        ("instance" = String, Path, description = "Instance id")),
    responses((status = 200, description = "Requested", body = Empty)))]
pub async fn restart(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path((tenant, name, instance)): Path<(String, String, String)>,
) -> Result<Empty, AxebowError> {
    let instance =
        InstanceId::parse(&instance).map_err(|e| AxebowError::invalid("instance", e.to_string()))?;
    let change = ClusterOp::RestartInstance {
        cluster: at(tenant, name),
        instance,
    };
    store::write_cluster(&state, caller, change, &headers).await?;
    Ok(done())
}

/// The committed endpoint and token of a cluster the caller may read.
async fn agent_of(
    state: &AxebowState,
    caller: &Caller,
    cluster: &ClusterRef,
) -> Result<drover_model::cluster::AgentAccess, AxebowError> {
    store::read(state, &caller.0, PlatformRead::Tenant(&cluster.tenant), |p, _| {
        p.cluster_view(cluster)?;
        Ok(p.cluster(cluster)
            .map_or_else(|| drover_model::cluster::AgentAccess::new("", ""), |c| c.access()))
    })
    .await
}

pub(super) fn read_failed(error: AgentReadError) -> AxebowError {
    match error {
        AgentReadError::Unreachable(_) => AxebowError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            codes::UNAVAILABLE,
            error.to_string(),
        ),
        AgentReadError::NotFound(message) => AxebowError::not_found(message),
        AgentReadError::BadQuery(message) => AxebowError::invalid("query", message),
        AgentReadError::Refused(_) => {
            AxebowError::new(StatusCode::BAD_GATEWAY, codes::UNAVAILABLE, error.to_string())
        }
    }
}

pub(super) fn agents(
    state: &AxebowState,
) -> Result<std::sync::Arc<dyn crate::agents::AgentReads>, AxebowError> {
    state.agents.clone().ok_or_else(|| {
        AxebowError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            codes::UNAVAILABLE,
            "this node cannot reach agents",
        )
    })
}

/// What the cluster's agent runs now, read from the agent itself.
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/cluster/{cluster}/inventory", tag = "clusters",
    params(("tenant" = String, Path, description = "Tenant name"), ("cluster" = String, Path, description = "Cluster name")),
    responses((status = 200, description = "The agent's inventory", body = Envelope<Inventory>)))]
pub async fn inventory(
    State(state): State<AxebowState>,
    caller: Caller,
    Path((tenant, name)): Path<(String, String)>,
) -> Result<Envelope<Inventory>, AxebowError> {
    let agent = agent_of(&state, &caller, &at(tenant, name)).await?;
    let inventory = agents(&state)?.inventory(&agent).await.map_err(read_failed)?;
    Ok(ok(inventory))
}

/// The captured output of one instance, read from the agent.
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/cluster/{cluster}/instance/{instance}/logs", tag = "clusters",
    params(("tenant" = String, Path, description = "Tenant name"), ("cluster" = String, Path, description = "Cluster name"),
        ("instance" = String, Path, description = "Instance id"), LogParams),
    responses((status = 200, description = "The instance's output", body = String, content_type = "text/plain")))]
pub async fn logs(
    State(state): State<AxebowState>,
    caller: Caller,
    Path((tenant, name, instance)): Path<(String, String, String)>,
    Params(params): Params<LogParams>,
) -> Result<Response, AxebowError> {
    let id = InstanceId::parse(&instance).map_err(|e| AxebowError::invalid("instance", e.to_string()))?;
    if let Some(since) = &params.since {
        if since.is_empty() || since.len() > 64 {
            return Err(AxebowError::invalid(
                "since",
                "an RFC 3339 time such as 2026-11-23T10:00:00Z",
            ));
        }
    }
    let agent = agent_of(&state, &caller, &at(tenant, name)).await?;
    let query = LogQuery {
        tail: params.tail,
        since: params.since,
        from: params.from,
    };
    let chunk = agents(&state)?
        .logs(&agent, &id, query)
        .await
        .map_err(read_failed)?;
    Ok(crate::agents::log_response(chunk))
}
