//! Platform reads and writes through the replicated store: every write is one
//! [`PlatformCommand`] whose authorization is decided where it is applied; every read checks the
//! caller against the same rules on the state it reads.

use axum::http::HeaderMap;
use drover_model::cluster::{ClusterCommand, ClusterOp};
use drover_model::platform::{
    Grant, Identity, Platform, PlatformCommand, PlatformError, PlatformOp, PlatformRead, PlatformResult,
};
use drover_model::service::{ServiceCommand, ServiceOp, ServiceOutcome};
use drover_model::{Command, CommandResult, Proposal};
use drover_raft::Consistency;

use super::context::AxebowState;
use super::reply::AxebowError;
use crate::idempotency::idempotency_key;

/// Commits one platform change made by `caller`.
pub async fn write(
    state: &AxebowState,
    caller: Identity,
    op: PlatformOp,
    headers: &HeaderMap,
) -> Result<PlatformResult, AxebowError> {
    let key = idempotency_key(headers).map_err(|message| AxebowError::invalid("Idempotency-Key", message))?;
    let proposal = Proposal::new(Command::Platform(PlatformCommand { caller, op })).with_idempotency(key);
    match state.raft.write(proposal).await?.result {
        CommandResult::Platform(result) => Ok(result),
        CommandResult::Refused(error) => Err(error.into()),
        other => Err(AxebowError::internal(format!("unexpected result {other:?}"))),
    }
}

/// Reads the platform (linearizably) after checking `caller` against what `read` requires.
pub async fn read<R>(
    state: &AxebowState,
    caller: &Identity,
    read: PlatformRead<'_>,
    f: impl FnOnce(&Platform, &Grant) -> Result<R, PlatformError>,
) -> Result<R, AxebowError> {
    let (result, _) = state
        .raft
        .read(Consistency::Linearizable, |s| {
            let platform = s.platform();
            let grant = platform.authorize(caller, read.requirement())?;
            f(platform, &grant)
        })
        .await?;
    Ok(result?)
}

/// Commits one cluster change made by `caller` (authorized where it is applied).
pub async fn write_cluster(
    state: &AxebowState,
    caller: Identity,
    change: ClusterOp,
    headers: &HeaderMap,
) -> Result<(), AxebowError> {
    let key = idempotency_key(headers).map_err(|message| AxebowError::invalid("Idempotency-Key", message))?;
    let proposal =
        Proposal::new(Command::Cluster(ClusterCommand::User { caller, change })).with_idempotency(key);
    match state.raft.write(proposal).await?.result {
        CommandResult::Refused(error) => Err(error.into()),
        _ => Ok(()),
    }
}

/// Commits one service change made by `caller` (authorized where it is applied).
pub async fn write_service(
    state: &AxebowState,
    caller: Identity,
    change: ServiceOp,
    headers: &HeaderMap,
) -> Result<ServiceOutcome, AxebowError> {
    let key = idempotency_key(headers).map_err(|message| AxebowError::invalid("Idempotency-Key", message))?;
    pod_images(state, &change).await?;
    let proposal = Proposal::new(Command::Service(ServiceCommand { caller, change })).with_idempotency(key);
    match state.raft.write(proposal).await?.result {
        CommandResult::Service(outcome) => Ok(outcome),
        CommandResult::Refused(error) => Err(error.into()),
        other => Err(AxebowError::internal(format!("unexpected result {other:?}"))),
    }
}

/// Refuses a service change whose pods name an image the tenant may not pull (a registry not
/// on `--image-registry-allow`, or a host the egress policy refuses): `422` naming
/// `roles.<role>.exec.pod.containers[i].image`, whichever way the deployment came (JSON, the
/// simple form, a bundle's component `code`, a merge patch). A rollback runs what was checked
/// when it was written.
async fn pod_images(state: &AxebowState, change: &ServiceOp) -> Result<(), AxebowError> {
    use drover_model::image_policy::{deployment_images, patch_images};
    use drover_model::service::Change;
    let images = match change {
        ServiceOp::Create { deployment, .. }
        | ServiceOp::Revise {
            change: Change::Put { deployment } | Change::BundlePatch { deployment },
            ..
        } => deployment_images(deployment),
        ServiceOp::Revise {
            change: Change::Patch { patch },
            ..
        } => patch_images(patch),
        _ => return Ok(()),
    };
    images_allowed(state, images).await
}

/// Refuses the first of `images` the tenant may not pull, naming its field (`422`).
pub async fn images_allowed(
    state: &AxebowState,
    images: Vec<drover_model::image_policy::ImageField>,
) -> Result<(), AxebowError> {
    let options = &state.axebow.options;
    match crate::images::first_refused(&options.image_registries, &options.egress, images).await {
        Some((field, why)) => Err(AxebowError::refused(field, why)),
        None => Ok(()),
    }
}

/// Applies a service change to a copy of the platform and reads the copy: a dry run that
/// stores nothing.
pub async fn dry_run<R>(
    state: &AxebowState,
    caller: &Identity,
    change: ServiceOp,
    f: impl FnOnce(&Platform, &ServiceOutcome) -> Result<R, PlatformError>,
) -> Result<R, AxebowError> {
    pod_images(state, &change).await?;
    let tenant = change.tenant().to_string();
    let command = ServiceCommand {
        caller: caller.clone(),
        change,
    };
    read(state, caller, PlatformRead::Tenant(&tenant), |platform, _| {
        let mut copy = platform.clone();
        let outcome = copy.apply_service(drover_raft::wall_clock_ms(), &command)?;
        f(&copy, &outcome)
    })
    .await
}
