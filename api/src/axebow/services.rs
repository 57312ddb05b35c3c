//! `/tenant/{t}/service/…`: services and their revisions (Axebow S1–S5, S11, S13–S15, S17–S19):
//! create with a JSON deployment, `dryrun` and `accept`; accept or reject the pending revision;
//! full updates, merge patches, scale and rollback naming their `previous`; history, scale, the
//! summary and full views; delete.
//!
//! Create, full update and partial update also take a Kumori bundle (`multipart/form-data`),
//! and the `…/simple` forms a marketplace reference: both in [`super::service_bundle`]. `wait`
//! is in [`super::service_wait`], roles, instances and logs in [`super::service_roles`].

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use drover_model::cluster::ClusterRef;
use drover_model::platform::{PlatformError, PlatformRead};
use drover_model::scheduling::Decision;
use drover_model::service::placement::RunStatus;
use drover_model::service::reconcile::ServiceEvent;
use drover_model::service::simple::SimpleBody;
use drover_model::service::views::{HistoryEntry, RevisionInfo, ServiceFull, ServiceStatus, ServiceSummary};
use drover_model::service::{Change, Deployment, Orphaned, ServiceOp};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::context::AxebowState;
use super::context::Caller;
use super::reply::{codes, done, ok, AxebowError, Body, Empty, Envelope, Params};
use super::service_bundle::{from_bundle, from_simple, DeploymentForm, ServiceUpload, MAX_SERVICE_FORM};
use super::service_wait::{converged, gone, request_status, wait_of, Wait};
use super::service_watch::{watch, WatchLine, WatchParams, Watched};
use super::store;

/// A deployment and a comment: the body of a create and of a full update.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeploymentBody {
    /// What the service deploys.
    pub deployment: Deployment,
    /// Why.
    #[serde(default)]
    pub comment: String,
}

/// `PATCH …/revision/{revision}/scale`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScaleBody {
    /// Instances by role; roles left out keep theirs.
    pub scale: BTreeMap<String, u32>,
}

/// Parameters of the calls that make a revision.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RevisionParams {
    /// Validate, cost and choose the environment, store nothing.
    pub dryrun: Option<bool>,
    /// Accept the revision at once when it is within the environment's marks.
    pub accept: Option<bool>,
    /// Seconds to wait until the revision runs exactly (`0`: no limit); see `service_wait`.
    pub wait: Option<String>,
    /// Remove the links that use channels the new revision drops (else such an update is `409`).
    pub remove_links: Option<bool>,
}

/// `PUT …/revision[/{r}]` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DecideParams {
    /// `true` accepts the pending revision, `false` rejects it.
    pub accept: Option<bool>,
}

/// `GET …/service/{s}` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct GetParams {
    /// `true`: the summary; otherwise the full service.
    pub summary: Option<bool>,
}

/// The summary or the full service.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum ServiceView {
    /// `summary=true`.
    Summary(ServiceSummary),
    /// Otherwise.
    Full(Box<ServiceFull>),
}

/// A revision number from the path; a bad one is the caller's `400` in the platform's shape.
fn number(field: &str, text: &str) -> Result<u64, AxebowError> {
    text.parse()
        .map_err(|_| AxebowError::invalid(field, format!("{text:?} is not a revision number")))
}

fn missing(tenant: &str, service: &str) -> PlatformError {
    PlatformError::NotFound(format!("service {service:?} of tenant {tenant:?} not found"))
}

/// What a call answers when its `wait` runs out.
#[derive(Clone, Copy)]
enum OnTimeout {
    /// `201` with a request id (create and updates).
    Created,
    /// `408` (rollback, scale, delete).
    Timeout,
}

fn request_id(revision: u64) -> String {
    revision.to_string()
}

fn timed_out(service: &str, revision: u64) -> AxebowError {
    AxebowError::new(
        StatusCode::REQUEST_TIMEOUT,
        codes::TIMEOUT,
        format!(
            "revision {revision} is committed but does not run yet; follow it with GET …/service/{service}/request/{}",
            request_id(revision)
        ),
    )
}

/// A call that makes a revision: the path's tenant, service and previous revision, the change
/// and what a timed-out `wait` answers.
struct RevisionCall {
    tenant: String,
    service: String,
    previous: String,
    change: Change,
    comment: String,
    on_timeout: OnTimeout,
}

/// Makes a revision (or, with `dryrun`, computes it), waits as asked, and answers its info.
async fn revision(
    state: &AxebowState,
    caller: Caller,
    headers: &HeaderMap,
    params: &RevisionParams,
    call: RevisionCall,
) -> Result<(StatusCode, Envelope<RevisionInfo>), AxebowError> {
    let wait = wait_of(params.wait.as_deref())?;
    let RevisionCall {
        tenant,
        service,
        previous,
        change,
        comment,
        on_timeout,
    } = call;
    let change = ServiceOp::Revise {
        tenant: tenant.clone(),
        service: service.clone(),
        previous: number("revision", &previous)?,
        change,
        comment,
        accept: params.accept == Some(true),
        remove_links: params.remove_links == Some(true),
    };
    let info_of = |p: &drover_model::platform::Platform, number: Option<u64>| {
        p.service(&tenant, &service)?
            .revision_info(number.unwrap_or_default())
            .ok_or_else(|| missing(&tenant, &service))
    };
    if params.dryrun == Some(true) {
        return store::dry_run(state, &caller.0, change, |p, outcome| {
            info_of(p, outcome.revision)
        })
        .await
        .map(|info| (StatusCode::OK, ok(info)));
    }
    let outcome = store::write_service(state, caller.0.clone(), change, headers).await?;
    let number = outcome.revision.unwrap_or_default();
    let finished = !outcome.accepted || converged(state, &tenant, &service, number, wait).await;
    let mut info = store::read(state, &caller.0, PlatformRead::Tenant(&tenant), |p, _| {
        info_of(p, outcome.revision)
    })
    .await?;
    match (finished, on_timeout) {
        (true, _) => Ok((StatusCode::OK, ok(info))),
        (false, OnTimeout::Created) => {
            info.request_id = Some(request_id(number));
            Ok((StatusCode::CREATED, ok(info)))
        }
        (false, OnTimeout::Timeout) => Err(timed_out(&service, number)),
    }
}

/// Creates a service with its first revision; the tenant's rules choose the environment.
#[utoipa::path(post, path = "/api/1.0-beta/tenant/{tenant}/service/{service}", tag = "services",
    request_body(content((DeploymentBody = "application/json"), (ServiceUpload = "multipart/form-data")),
        description = "A deployment as JSON, or a Kumori bundle with its `deployment` module"),
    params(("tenant" = String, Path, description = "Tenant name"), ("service" = String, Path, description = "Service name"), RevisionParams),
    responses((status = 200, description = "Created (or, with dryrun, what would be)", body = Envelope<ServiceStatus>),
        (status = 201, description = "Created; the wait ran out (requestId)", body = Envelope<ServiceStatus>),
        (status = 422, description = "A bundle or module that cannot be deployed (the message names the file)", body = super::reply::ErrorBody),
        (status = 502, description = "The tenant's registry refused its credentials or answered what Drover cannot use", body = super::reply::ErrorBody)))]
pub async fn create(
    State(state): State<AxebowState>,
    caller: Caller,
    headers: HeaderMap,
    Path((tenant, service)): Path<(String, String)>,
    Params(params): Params<RevisionParams>,
    form: DeploymentForm<DeploymentBody>,
) -> Result<(StatusCode, Envelope<ServiceStatus>), AxebowError> {
    let (deployment, comment) = whole_deployment(&state, &caller, &tenant, form).await?;
    create_service(
        state,
        caller,
        headers,
        params,
        (tenant, service, deployment, comment),
    )
    .await
}

/// Creates a service from the simple form (`artifact` described inline, or a marketplace
/// module named by `artifact.ref`).
#[utoipa::path(post, path = "/api/1.0-beta/tenant/{tenant}/service/{service}/simple", tag = "services", request_body = SimpleBody,
    params(("tenant" = String, Path, description = "Tenant name"), ("service" = String, Path, description = "Service name"), RevisionParams),
    responses((status = 200, description = "Created (or, with dryrun, what would be)", body = Envelope<ServiceStatus>),
        (status = 201, description = "Created; the wait ran out (requestId)", body = Envelope<ServiceStatus>),
        (status = 422, description = "A bundle or module that cannot be deployed (the message names the file)", body = super::reply::ErrorBody),
        (status = 502, description = "The tenant's registry refused its credentials or answered what Drover cannot use", body = super::reply::ErrorBody)))]
pub async fn create_simple(
    State(state): State<AxebowState>,
    caller: Caller,
    headers: HeaderMap,
    Path((tenant, service)): Path<(String, String)>,
    Params(params): Params<RevisionParams>,
    Body(body): Body<SimpleBody>,
) -> Result<(StatusCode, Envelope<ServiceStatus>), AxebowError> {
    let (deployment, comment) = from_simple(&state, &caller, &tenant, body).await?;
    create_service(
        state,
        caller,
        headers,
        params,
        (tenant, service, deployment, comment),
    )
    .await
}

/// The deployment and comment of a create or a full update: the JSON body's, or the one a whole
/// bundle makes.
async fn whole_deployment(
    state: &AxebowState,
    caller: &Caller,
    tenant: &str,
    form: DeploymentForm<DeploymentBody>,
) -> Result<(Deployment, String), AxebowError> {
    Ok(match form {
        DeploymentForm::Json(body) => (body.deployment, body.comment),
        DeploymentForm::Bundle(form) => (
            from_bundle(state, caller, tenant, form.bundle, None).await?,
            form.comment,
        ),
    })
}

/// Creates `(tenant, service)` deploying `deployment` with `comment`: the shared body of both
/// create forms.
async fn create_service(
    state: AxebowState,
    caller: Caller,
    headers: HeaderMap,
    params: RevisionParams,
    (tenant, service, deployment, comment): (String, String, Deployment, String),
) -> Result<(StatusCode, Envelope<ServiceStatus>), AxebowError> {
    let wait = wait_of(params.wait.as_deref())?;
    let change = ServiceOp::Create {
        tenant: tenant.clone(),
        service: service.clone(),
        uid: uuid::Uuid::new_v4().to_string(),
        deployment,
        comment,
        accept: params.accept == Some(true),
    };
    let status_of = |p: &drover_model::platform::Platform| p.service(&tenant, &service).map(|s| s.status());
    if params.dryrun == Some(true) {
        // An accepted dry run also says where the scheduler would place the service now.
        let placed = |p: &drover_model::platform::Platform| {
            let mut status = status_of(p)?;
            status.placement = p.schedule_service(&tenant, &service, &p.reserved());
            Ok(status)
        };
        return store::dry_run(&state, &caller.0, change, |p, _| placed(p))
            .await
            .map(|status| (StatusCode::OK, ok(status)));
    }
    let outcome = store::write_service(&state, caller.0.clone(), change, &headers).await?;
    let finished = !outcome.accepted || converged(&state, &tenant, &service, 1, wait).await;
    // The write waited until this node applied it, and the caller was authorized for the
    // tenant where it was applied: this replica answers without another round to the leader
    // (which cost every create a second linearizable read). Only when the wait for the apply
    // ran out is the leader asked.
    let mut status = match state.raft.local_read(|s| status_of(s.platform()).ok()) {
        Some(status) => status,
        None => {
            store::read(&state, &caller.0, PlatformRead::Tenant(&tenant), |p, _| {
                status_of(p)
            })
            .await?
        }
    };
    if finished {
        return Ok((StatusCode::OK, ok(status)));
    }
    status.request_id = Some(request_id(1));
    Ok((StatusCode::CREATED, ok(status)))
}

/// A new revision with a whole deployment, made from `previous` (the current revision).
#[utoipa::path(post, path = "/api/1.0-beta/tenant/{tenant}/service/{service}/revision/{revision}", tag = "services",
    request_body(content((DeploymentBody = "application/json"), (ServiceUpload = "multipart/form-data")),
        description = "A whole deployment as JSON, or a whole Kumori bundle"),
    params(("tenant" = String, Path, description = "Tenant name"), ("service" = String, Path, description = "Service name"),
        ("revision" = String, Path, description = "The current revision's number, which the new one names as its previous"), RevisionParams),
    responses((status = 200, description = "The new revision", body = Envelope<RevisionInfo>),
        (status = 201, description = "Made; the wait ran out (requestId)", body = Envelope<RevisionInfo>),
        (status = 422, description = "A bundle or module that cannot be deployed (the message names the file)", body = super::reply::ErrorBody),
        (status = 502, description = "The tenant's registry refused its credentials or answered what Drover cannot use", body = super::reply::ErrorBody)))]
pub async fn update(
    State(state): State<AxebowState>,
    caller: Caller,
    headers: HeaderMap,
    Path((tenant, service, previous)): Path<(String, String, String)>,
    Params(params): Params<RevisionParams>,
    form: DeploymentForm<DeploymentBody>,
) -> Result<(StatusCode, Envelope<RevisionInfo>), AxebowError> {
    let (deployment, comment) = whole_deployment(&state, &caller, &tenant, form).await?;
    let call = RevisionCall {
        tenant,
        service,
        previous,
        change: Change::Put { deployment },
        comment,
        on_timeout: OnTimeout::Created,
    };
    revision(&state, caller, &headers, &params, call).await
}

/// A new revision from the simple form, made from `previous` (the current revision).
#[utoipa::path(post, path = "/api/1.0-beta/tenant/{tenant}/service/{service}/revision/{revision}/simple", tag = "services", request_body = SimpleBody,
    params(("tenant" = String, Path, description = "Tenant name"), ("service" = String, Path, description = "Service name"),
        ("revision" = String, Path, description = "The current revision's number, which the new one names as its previous"), RevisionParams),
    responses((status = 200, description = "The new revision", body = Envelope<RevisionInfo>),
        (status = 201, description = "Made; the wait ran out (requestId)", body = Envelope<RevisionInfo>),
        (status = 422, description = "A bundle or module that cannot be deployed (the message names the file)", body = super::reply::ErrorBody),
        (status = 502, description = "The tenant's registry refused its credentials or answered what Drover cannot use", body = super::reply::ErrorBody)))]
pub async fn update_simple(
    State(state): State<AxebowState>,
    caller: Caller,
    headers: HeaderMap,
    Path((tenant, service, previous)): Path<(String, String, String)>,
    Params(params): Params<RevisionParams>,
    Body(body): Body<SimpleBody>,
) -> Result<(StatusCode, Envelope<RevisionInfo>), AxebowError> {
    let (deployment, comment) = from_simple(&state, &caller, &tenant, body).await?;
    let call = RevisionCall {
        tenant,
        service,
        previous,
        change: Change::Put { deployment },
        comment,
        on_timeout: OnTimeout::Created,
    };
    revision(&state, caller, &headers, &params, call).await
}

/// A new revision: a JSON merge patch (RFC 7396) of the deployment of `previous`, or a partial
/// Kumori bundle applied to the bundle it was built from.
#[utoipa::path(patch, path = "/api/1.0-beta/tenant/{tenant}/service/{service}/revision/{revision}", tag = "services",
    request_body(content((Object = "application/json"), (ServiceUpload = "multipart/form-data")),
        description = "A merge patch of the previous revision's deployment, or a partial bundle (the modules it carries replace theirs, its manifest is merged over the previous one)"),
    params(("tenant" = String, Path, description = "Tenant name"), ("service" = String, Path, description = "Service name"),
        ("revision" = String, Path, description = "The current revision's number, which the new one names as its previous"), RevisionParams),
    responses((status = 200, description = "The new revision", body = Envelope<RevisionInfo>),
        (status = 201, description = "Made; the wait ran out (requestId)", body = Envelope<RevisionInfo>),
        (status = 422, description = "A bundle or module that cannot be deployed (the message names the file)", body = super::reply::ErrorBody),
        (status = 502, description = "The tenant's registry refused its credentials or answered what Drover cannot use", body = super::reply::ErrorBody)))]
pub async fn patch(
    State(state): State<AxebowState>,
    caller: Caller,
    headers: HeaderMap,
    Path((tenant, service, previous)): Path<(String, String, String)>,
    Params(params): Params<RevisionParams>,
    form: DeploymentForm<Value>,
) -> Result<(StatusCode, Envelope<RevisionInfo>), AxebowError> {
    let (change, comment) = match form {
        DeploymentForm::Json(patch) => (Change::Patch { patch }, String::new()),
        DeploymentForm::Bundle(form) => {
            let base = source_of_revision(&state, &caller, &tenant, &service, &previous).await?;
            let deployment = from_bundle(&state, &caller, &tenant, form.bundle, base).await?;
            (Change::BundlePatch { deployment }, form.comment)
        }
    };
    let call = RevisionCall {
        tenant,
        service,
        previous,
        change,
        comment,
        on_timeout: OnTimeout::Created,
    };
    revision(&state, caller, &headers, &params, call).await
}

/// The source revision `previous` of the service was built from (none when it was written as
/// JSON). Whether `previous` is still the current one is checked when the new revision is
/// committed.
async fn source_of_revision(
    state: &AxebowState,
    caller: &Caller,
    tenant: &str,
    service: &str,
    previous: &str,
) -> Result<Option<drover_model::service::source::DeploymentSource>, AxebowError> {
    let number = number("revision", previous)?;
    store::read(state, &caller.0, PlatformRead::Tenant(tenant), |p, _| {
        let found = p.service(tenant, service)?;
        let revision = found.revisions.get(&number).ok_or_else(|| {
            PlatformError::NotFound(format!("revision {number} of service {service:?} not found"))
        })?;
        Ok(revision.deployment.source.clone())
    })
    .await
}

/// The routes that take a bundle beside JSON, with a body limit a bundle fits in (JSON bodies
/// keep the API's own, [`DeploymentForm`]).
pub fn routes() -> utoipa_axum::router::OpenApiRouter<AxebowState> {
    use utoipa_axum::routes;
    utoipa_axum::router::OpenApiRouter::new()
        .routes(routes!(create, get, delete))
        .routes(routes!(update, patch, decide_revision))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_SERVICE_FORM))
}

/// A new revision with new instance counts (roles left out keep theirs).
#[utoipa::path(patch, path = "/api/1.0-beta/tenant/{tenant}/service/{service}/revision/{revision}/scale", tag = "services", request_body = ScaleBody,
    params(("tenant" = String, Path, description = "Tenant name"), ("service" = String, Path, description = "Service name"),
        ("revision" = String, Path, description = "The current revision's number, which the new one names as its previous"), RevisionParams),
    responses((status = 200, description = "The new revision", body = Envelope<RevisionInfo>),
        (status = 408, description = "Made; the wait ran out", body = super::reply::ErrorBody)))]
pub async fn scale(
    State(state): State<AxebowState>,
    caller: Caller,
    headers: HeaderMap,
    Path((tenant, service, previous)): Path<(String, String, String)>,
    Params(params): Params<RevisionParams>,
    Body(body): Body<ScaleBody>,
) -> Result<(StatusCode, Envelope<RevisionInfo>), AxebowError> {
    let call = RevisionCall {
        tenant,
        service,
        previous,
        change: Change::Scale { scale: body.scale },
        comment: String::new(),
        on_timeout: OnTimeout::Timeout,
    };
    revision(&state, caller, &headers, &params, call).await
}

/// A new revision of type `ROLLBACK` copying revision `target`'s deployment.
#[utoipa::path(put, path = "/api/1.0-beta/tenant/{tenant}/service/{service}/revision/{revision}/rollback/{target}", tag = "services",
    params(("tenant" = String, Path, description = "Tenant name"), ("service" = String, Path, description = "Service name"),
        ("revision" = String, Path, description = "The current revision's number, which the new one names as its previous"), ("target" = String, Path, description = "The number of the revision to reinstate"), RevisionParams),
    responses((status = 200, description = "The new revision", body = Envelope<RevisionInfo>),
        (status = 408, description = "Made; the wait ran out", body = super::reply::ErrorBody)))]
pub async fn rollback(
    State(state): State<AxebowState>,
    caller: Caller,
    headers: HeaderMap,
    Path((tenant, service, previous, target)): Path<(String, String, String, String)>,
    Params(params): Params<RevisionParams>,
) -> Result<(StatusCode, Envelope<RevisionInfo>), AxebowError> {
    let call = RevisionCall {
        tenant,
        service,
        previous,
        change: Change::Rollback {
            target: number("target", &target)?,
        },
        comment: String::new(),
        on_timeout: OnTimeout::Timeout,
    };
    revision(&state, caller, &headers, &params, call).await
}

async fn decide(
    state: AxebowState,
    caller: Caller,
    headers: HeaderMap,
    (tenant, service, revision): (String, String, Option<u64>),
    params: DecideParams,
) -> Result<Empty, AxebowError> {
    let accept = params
        .accept
        .ok_or_else(|| AxebowError::invalid("accept", "say accept=true or accept=false"))?;
    let change = ServiceOp::Decide {
        tenant,
        service,
        revision,
        accept,
    };
    store::write_service(&state, caller.0, change, &headers).await?;
    Ok(done())
}

/// Accepts (`accept=true`) or rejects the pending revision; rejecting the first one removes the
/// service.
#[utoipa::path(put, path = "/api/1.0-beta/tenant/{tenant}/service/{service}/revision/{revision}", tag = "services",
    params(("tenant" = String, Path, description = "Tenant name"), ("service" = String, Path, description = "Service name"),
        ("revision" = String, Path, description = "The pending revision's number"), DecideParams),
    responses((status = 200, description = "Decided", body = Empty)))]
pub async fn decide_revision(
    State(state): State<AxebowState>,
    caller: Caller,
    headers: HeaderMap,
    Path((tenant, service, revision)): Path<(String, String, String)>,
    Params(params): Params<DecideParams>,
) -> Result<Empty, AxebowError> {
    let revision = number("revision", &revision)?;
    decide(state, caller, headers, (tenant, service, Some(revision)), params).await
}

/// Accepts or rejects the pending revision, whichever it is.
#[utoipa::path(put, path = "/api/1.0-beta/tenant/{tenant}/service/{service}/revision", tag = "services",
    params(("tenant" = String, Path, description = "Tenant name"), ("service" = String, Path, description = "Service name"), DecideParams),
    responses((status = 200, description = "Decided", body = Empty)))]
pub async fn decide_pending(
    State(state): State<AxebowState>,
    caller: Caller,
    headers: HeaderMap,
    Path((tenant, service)): Path<(String, String)>,
    Params(params): Params<DecideParams>,
) -> Result<Empty, AxebowError> {
    decide(state, caller, headers, (tenant, service, None), params).await
}

/// `DELETE …/service/{s}` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeleteParams {
    /// Seconds to wait until the service is gone (`0`: no limit); `408` when it is not by then.
    pub wait: Option<String>,
    /// Operators only: remove the object now, leaving its instances to be removed by its
    /// cluster's actor when the cluster answers; the answer says what was left.
    pub force: Option<bool>,
}

/// What a delete did.
#[derive(Debug, Serialize, ToSchema)]
pub struct Deleted {
    /// The object is gone.
    pub removed: bool,
    /// The object stays, `deleting`, until its actor has removed its instances.
    pub deleting: bool,
    /// What a forced delete left running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orphaned: Option<Orphaned>,
}

/// Deletes a service and its history. A service that may have instances running is marked
/// `deleting` and goes once its actor has removed them from its cluster (a finalizer); one that
/// never ran goes at once.
#[utoipa::path(delete, path = "/api/1.0-beta/tenant/{tenant}/service/{service}", tag = "services",
    params(("tenant" = String, Path, description = "Tenant name"), ("service" = String, Path, description = "Service name"), DeleteParams),
    responses((status = 200, description = "Removed, or deleting", body = Envelope<Deleted>),
        (status = 403, description = "`force` by a non-operator", body = super::reply::ErrorBody),
        (status = 408, description = "Deleting; its instances have not all gone yet", body = super::reply::ErrorBody)))]
pub async fn delete(
    State(state): State<AxebowState>,
    caller: Caller,
    headers: HeaderMap,
    Path((tenant, service)): Path<(String, String)>,
    Params(params): Params<DeleteParams>,
) -> Result<Envelope<Deleted>, AxebowError> {
    let wait = wait_of(params.wait.as_deref())?;
    let change = ServiceOp::Delete {
        tenant: tenant.clone(),
        service: service.clone(),
        force: params.force.unwrap_or(false),
    };
    let outcome = store::write_service(&state, caller.0, change, &headers).await?;
    if outcome.deleting && !gone(&state, &tenant, &service, wait).await {
        return Err(AxebowError::new(
            StatusCode::REQUEST_TIMEOUT,
            codes::TIMEOUT,
            format!("service {service:?} is deleting: its instances have not all been removed yet"),
        ));
    }
    Ok(ok(Deleted {
        removed: outcome.removed || outcome.deleting && wait != Wait::No,
        deleting: outcome.deleting && wait == Wait::No,
        orphaned: outcome.orphaned,
    }))
}

/// What a request id resolves to.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestStatus {
    /// The request id.
    pub request_id: String,
    /// Whether the revision it made runs exactly now.
    pub done: bool,
    /// Where the service stands.
    pub status: RunStatus,
}

/// Looks up a request id that a `wait` answered with: whether the revision it made runs.
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/service/{service}/request/{request}", tag = "services",
    params(("tenant" = String, Path, description = "Tenant name"), ("service" = String, Path, description = "Service name"),
        ("request" = String, Path, description = "The request id")),
    responses((status = 200, description = "Where the request stands", body = Envelope<RequestStatus>)))]
pub async fn request(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    Path((tenant, service, request)): Path<(String, String, String)>,
) -> Result<Envelope<RequestStatus>, AxebowError> {
    let revision = number("request", &request)?;
    store::read(&state, &caller, PlatformRead::Tenant(&tenant), |p, _| {
        let service_ref = p.service(&tenant, &service)?;
        if !service_ref.revisions.contains_key(&revision) {
            return Err(PlatformError::NotFound(format!(
                "no request {request} for service {service:?}"
            )));
        }
        Ok(())
    })
    .await?;
    let (done, status) =
        request_status(&state, &tenant, &service, revision).ok_or_else(|| missing(&tenant, &service))?;
    Ok(ok(RequestStatus {
        request_id: request,
        done,
        status,
    }))
}

/// The names of a tenant's services; with `watch=true`, a stream of their changes
/// (`{"type", "object"}` lines, see `service_watch`).
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/service", tag = "services",
    params(("tenant" = String, Path, description = "Tenant name"), WatchParams),
    responses((status = 200, description = "Names (or, watching, a stream of changes)",
        content((Envelope<Vec<String>> = "application/json"), (WatchLine = "application/x-ndjson")))))]
pub async fn list(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    Path(tenant): Path<String>,
    Params(params): Params<WatchParams>,
) -> Result<Response, AxebowError> {
    if params.watching() {
        return watch(state, caller, Watched::Services { tenant }, &params).await;
    }
    store::read(&state, &caller, PlatformRead::Tenant(&tenant), |p, _| {
        Ok(p.tenant(&tenant)
            .map(|t| t.services.keys().cloned().collect::<Vec<_>>())
            .unwrap_or_default())
    })
    .await
    .map(|names| ok(names).into_response())
}

/// A service's events (its last phase changes, in Axebow's shape); with `watch=true`, a
/// stream of new and recounted ones.
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/service/{service}/events", tag = "services",
    params(("tenant" = String, Path, description = "Tenant name"), ("service" = String, Path, description = "Service name"), WatchParams),
    responses((status = 200, description = "Events (or, watching, a stream of them)",
        content((Envelope<Vec<ServiceEvent>> = "application/json"), (WatchLine = "application/x-ndjson")))))]
pub async fn events(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    Path((tenant, service)): Path<(String, String)>,
    Params(params): Params<WatchParams>,
) -> Result<Response, AxebowError> {
    if params.watching() {
        return watch(state, caller, Watched::Events { tenant, service }, &params).await;
    }
    store::read(&state, &caller, PlatformRead::Tenant(&tenant), |p, _| {
        Ok(p.service(&tenant, &service)?
            .events
            .iter()
            .cloned()
            .collect::<Vec<_>>())
    })
    .await
    .map(|events| ok(events).into_response())
}

/// One service: the summary (`summary=true`) or the full view of its current revision.
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/service/{service}", tag = "services",
    params(("tenant" = String, Path, description = "Tenant name"), ("service" = String, Path, description = "Service name"), GetParams),
    responses((status = 200, description = "The service", body = Envelope<ServiceView>)))]
pub async fn get(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    Path((tenant, service)): Path<(String, String)>,
    Params(params): Params<GetParams>,
) -> Result<Envelope<ServiceView>, AxebowError> {
    store::read(&state, &caller, PlatformRead::Tenant(&tenant), |p, _| {
        let stored = p.service(&tenant, &service)?;
        if params.summary == Some(true) {
            return Ok(ServiceView::Summary(stored.summary()));
        }
        let mut full = stored.full().ok_or_else(|| missing(&tenant, &service))?;
        full.status = Some(p.service_run_status(&tenant, &service)?);
        full.links = p.links_of(&tenant, &service)?.iter().map(Into::into).collect();
        Ok(ServiceView::Full(Box::new(full)))
    })
    .await
    .map(ok)
}

/// Instances by role of the current revision.
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/service/{service}/scale", tag = "services",
    params(("tenant" = String, Path, description = "Tenant name"), ("service" = String, Path, description = "Service name")),
    responses((status = 200, description = "Instances by role", body = Envelope<BTreeMap<String, u32>>)))]
pub async fn get_scale(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    Path((tenant, service)): Path<(String, String)>,
) -> Result<Envelope<BTreeMap<String, u32>>, AxebowError> {
    store::read(&state, &caller, PlatformRead::Tenant(&tenant), |p, _| {
        p.service(&tenant, &service).map(|s| s.scale())
    })
    .await
    .map(ok)
}

/// Where the service runs (or is moving to), the decision that put it there, and how the
/// scheduler scores its clusters now (Krake's scoring from the committed state: constraints,
/// capacity, metrics, stickiness). `now.chosen` differing from `cluster` means it will move at
/// its next rescoring, if it may move and rested since its last move.
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/service/{service}/placement", tag = "services",
    params(("tenant" = String, Path, description = "Tenant name"), ("service" = String, Path, description = "Service name")),
    responses((status = 200, description = "Its placement, explained", body = Envelope<PlacementView>)))]
pub async fn placement(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    Path((tenant, service)): Path<(String, String)>,
) -> Result<Envelope<PlacementView>, AxebowError> {
    store::read(&state, &caller, PlatformRead::Tenant(&tenant), |p, _| {
        let stored = p.service(&tenant, &service)?;
        Ok(PlacementView {
            cluster: stored.placement.clone(),
            migrating_to: stored.migrating_to.clone(),
            decision: stored.scheduling.clone(),
            now: p.schedule_service(&tenant, &service, &p.reserved()),
        })
    })
    .await
    .map(ok)
}

/// `GET …/service/{s}/placement`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementView {
    /// Where it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterRef>,
    /// Where it is being moved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrating_to: Option<ClusterRef>,
    /// The decision that placed it (or moved it last).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// The decision the scheduler would take now (none before a revision is accepted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<Decision>,
}

/// Every revision with its type, `previous`, `original` and `reinstates`.
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/service/{service}/history", tag = "services",
    params(("tenant" = String, Path, description = "Tenant name"), ("service" = String, Path, description = "Service name")),
    responses((status = 200, description = "The history", body = Envelope<Vec<HistoryEntry>>)))]
pub async fn history(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    Path((tenant, service)): Path<(String, String)>,
) -> Result<Envelope<Vec<HistoryEntry>>, AxebowError> {
    store::read(&state, &caller, PlatformRead::Tenant(&tenant), |p, _| {
        p.service(&tenant, &service).map(|s| s.history())
    })
    .await
    .map(ok)
}
