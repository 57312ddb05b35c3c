//! Services from Kumori modules (Axebow S11, S12, S14–S16): the multipart bundle form of create,
//! full update and partial update, and the `…/simple` form's marketplace references. Both end
//! in a [`DeploymentSource`] — the manifest and the bundle's modules — from which the roles are
//! built (a module of the bundle, one resolved through the tenant's registry and pinned to the
//! version found, or roles given inline), kept in the deployment so that a partial update
//! patches it and a rollback runs exactly what ran.

use axum::extract::{FromRequest, Multipart, Request};
use axum::http::{header, StatusCode};
use bytes::Bytes;
use drover_model::service::simple::{SimpleBody, SimpleDeployment};
use drover_model::service::source::DeploymentSource;
use drover_model::service::Deployment;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::bundle::archive::{read_bundle, BundleLimits};
use super::bundle::code::{resolve_pulls, secret_name};
use super::bundle::deploy::{
    artifact_roles, borrowed, chosen_artifact, origin, read_service_bundle, source_of, ArtifactRoles, Origin,
};
use super::bundle::module::read_module;
use super::context::{AxebowState, Caller};
use super::marketplace::{bundle_refused, once, unprocessable, unreadable};
use super::reply::{codes, AxebowError, Body};
use super::resolve::{pin, resolve};
use super::store;
use drover_model::platform::{PlatformRead, ResourceKind};
use drover_model::service::ResourceUse;

/// The largest service bundle form (the multipart body as a whole).
pub const MAX_SERVICE_FORM: usize = 4 << 20;

/// What a service bundle may hold: its files are kept with every revision
/// ([`drover_model::service::source::MAX_SOURCE_BYTES`]), so 1 MiB inflated in all.
fn service_bundle_limits() -> BundleLimits {
    BundleLimits {
        max_file: 1 << 20,
        max_total: 1 << 20,
        ..BundleLimits::default()
    }
}

/// The multipart form of create and updates (`#ServiceSpec`).
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct ServiceUpload {
    /// The Kumori bundle (a zip with a `deployment` module).
    #[schema(value_type = String, format = Binary)]
    bundle: Vec<u8>,
    /// A JSON object: `{"meta": {...}, "comment": "..."}`.
    spec: Option<String>,
}

/// `spec` of the form.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FormSpec {
    #[serde(default)]
    #[allow(dead_code)]
    meta: Value,
    #[serde(default)]
    comment: String,
}

/// A bundle form as read.
#[derive(Debug)]
pub struct ServiceForm {
    /// The zip.
    pub bundle: Bytes,
    /// The revision's comment.
    pub comment: String,
}

/// A route's body: JSON (`application/json`) or a bundle form (`multipart/form-data`).
#[derive(Debug)]
pub enum DeploymentForm<T> {
    /// JSON.
    Json(T),
    /// A bundle.
    Bundle(ServiceForm),
}

fn too_large() -> AxebowError {
    AxebowError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        codes::PAYLOAD_TOO_LARGE,
        format!("the form is larger than the {MAX_SERVICE_FORM} bytes a service bundle upload may be"),
    )
}

impl<T: DeserializeOwned> FromRequest<AxebowState> for DeploymentForm<T> {
    type Rejection = AxebowError;

    async fn from_request(request: Request, state: &AxebowState) -> Result<Self, Self::Rejection> {
        let multipart = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| {
                ct.trim_start()
                    .to_ascii_lowercase()
                    .starts_with("multipart/form-data")
            });
        let declared = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if !multipart {
            // These routes allow a bundle's size; JSON keeps the API's limit.
            let limit = state.max_body_bytes;
            let (parts, body) = request.into_parts();
            let bytes = axum::body::to_bytes(body, limit).await.map_err(|_| {
                AxebowError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    codes::PAYLOAD_TOO_LARGE,
                    format!("the body is larger than the {limit} bytes a JSON body may be"),
                )
            })?;
            let request = Request::from_parts(parts, axum::body::Body::from(bytes));
            let Body(value) = Body::<T>::from_request(request, state).await?;
            return Ok(DeploymentForm::Json(value));
        }
        // Said before a byte of the body is read.
        if declared.is_some_and(|length| length > MAX_SERVICE_FORM as u64) {
            return Err(too_large());
        }
        let mut multipart = Multipart::from_request(request, state).await.map_err(|e| {
            AxebowError::invalid(
                "bundle",
                format!("send a multipart/form-data body: {}", e.body_text()),
            )
        })?;
        let (mut bundle, mut spec) = (None, FormSpec::default());
        let mut seen = std::collections::BTreeSet::new();
        while let Some(field) = multipart
            .next_field()
            .await
            .map_err(|e| unreadable("bundle", &e))?
        {
            let name = field.name().unwrap_or_default().to_string();
            once(&mut seen, &name)?;
            let bytes = field.bytes().await.map_err(|e| unreadable(&name, &e))?;
            match name.as_str() {
                "bundle" => bundle = Some(bytes),
                "spec" => {
                    spec = serde_json::from_slice(&bytes).map_err(|e| {
                        AxebowError::invalid(
                            "spec",
                            format!("must be a JSON object {{\"meta\", \"comment\"}}: {e}"),
                        )
                    })?
                }
                other => {
                    return Err(AxebowError::invalid(
                        other.to_string(),
                        "is not a field of this form: bundle, spec",
                    ))
                }
            }
        }
        let bundle = bundle
            .ok_or_else(|| AxebowError::invalid("bundle", "the zip of the service's modules is missing"))?;
        Ok(DeploymentForm::Bundle(ServiceForm {
            bundle,
            comment: spec.comment,
        }))
    }
}

/// The deployment a bundle makes: alone, or (a partial update) applied to `previous`, the
/// source of the revision it updates.
pub async fn from_bundle(
    state: &AxebowState,
    caller: &Caller,
    tenant: &str,
    bundle: Bytes,
    previous: Option<DeploymentSource>,
) -> Result<Deployment, AxebowError> {
    // Only a member's bundle is worth inflating: strangers learn nothing and cost nothing.
    store::read(state, &caller.0, PlatformRead::Tenant(tenant), |_, _| Ok(())).await?;
    // Inflating is CPU work: off the request's thread.
    let read = tokio::task::spawn_blocking(move || {
        read_bundle(&bundle, service_bundle_limits())
            .map_err(bundle_refused)
            .and_then(|bundle| read_service_bundle(&bundle).map_err(|e| unprocessable(e.to_string())))
    })
    .await
    .map_err(|e| AxebowError::internal(format!("reading the bundle: {e}")))??;
    let source = source_of(previous.as_ref(), read).map_err(|e| unprocessable(e.to_string()))?;
    build(state, caller, tenant, source).await
}

/// The deployment and comment of a `…/simple` body: roles given inline, or the module its
/// `artifact.ref` names, resolved through the tenant's marketplace.
pub async fn from_simple(
    state: &AxebowState,
    caller: &Caller,
    tenant: &str,
    body: SimpleBody,
) -> Result<(Deployment, String), AxebowError> {
    if body.deployment.reference()?.is_none() {
        return Ok(body.into_deployment()?);
    }
    let manifest =
        serde_json::to_value(&body.deployment).map_err(|e| AxebowError::internal(e.to_string()))?;
    let source = DeploymentSource {
        manifest,
        modules: Default::default(),
    };
    Ok((build(state, caller, tenant, source).await?, body.comment))
}

/// Builds the deployment `source` describes, pinning a marketplace reference to the version it
/// resolved to.
async fn build(
    state: &AxebowState,
    caller: &Caller,
    tenant: &str,
    mut source: DeploymentSource,
) -> Result<Deployment, AxebowError> {
    let (manifest, origin): (SimpleDeployment, Origin) =
        origin(&source).map_err(|e| unprocessable(e.to_string()))?;
    let built = match origin {
        Origin::Inline => {
            return Ok(manifest.clone().build(manifest.artifact, Some(source))?);
        }
        Origin::Bundled(dir, reference) => {
            let files = source.modules.get(&dir).cloned().unwrap_or_default();
            let files = borrowed(&files);
            let module = read_module(&dir, &files).map_err(|e| unprocessable(e.to_string()))?;
            let (name, _) =
                chosen_artifact(&module, &reference, None).map_err(|e| unprocessable(e.to_string()))?;
            artifact_roles(&module, &files, name).map_err(|e| unprocessable(e.to_string()))?
        }
        Origin::Marketplace(reference) => {
            let found = resolve(state, caller, tenant, &reference).await?;
            pin(&mut source.manifest, &found.version);
            let files = super::resolve::borrowed(&found.files);
            let (name, _) = chosen_artifact(&found.module, &reference, found.main.as_deref())
                .map_err(|e| unprocessable(e.to_string()))?;
            artifact_roles(&found.module, &files, name)
                .map_err(|e| unprocessable(format!("{}@{}: {e}", reference.module, found.version)))?
        }
    };
    let bindings = manifest.config.resource.clone();
    let (artifact, secrets) = with_pull_credentials(state, caller, tenant, built, &bindings).await?;
    let mut deployment = manifest.build(artifact, Some(source))?;
    // A secret named directly (not bound in config.resource) is used as bound ones are.
    for name in secrets {
        let used = ResourceUse {
            kind: ResourceKind::Secret.as_str().to_string(),
            name,
        };
        if !deployment.resources.contains(&used) {
            deployment.resources.push(used);
        }
    }
    Ok(deployment)
}

/// The artifact with each pod's pull credentials, from the secrets its `hub.secret`s name in
/// `tenant` (the deploying tenant's own, read now: the credentials are kept in the revision,
/// and no view shows them), and the names of those secrets.
async fn with_pull_credentials(
    state: &AxebowState,
    caller: &Caller,
    tenant: &str,
    built: ArtifactRoles,
    bindings: &std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>,
) -> Result<(drover_model::service::simple::SimpleArtifact, Vec<String>), AxebowError> {
    let ArtifactRoles { mut artifact, pulls } = built;
    if pulls.is_empty() {
        return Ok((artifact, Vec::new()));
    }
    let mut names = Vec::new();
    for hub in pulls.values().flatten() {
        let name = secret_name(hub, bindings).map_err(unprocessable)?;
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let wanted = names.clone();
    let secrets = store::read(state, &caller.0, PlatformRead::Tenant(tenant), move |p, _| {
        let stored = p
            .tenant(tenant)
            .and_then(|t| t.resources.get(&ResourceKind::Secret));
        Ok(wanted
            .iter()
            .filter_map(|name| {
                let value = stored?.get(name)?.data.as_str()?;
                Some((name.clone(), value.to_string()))
            })
            .collect())
    })
    .await?;
    let resolved = resolve_pulls(&pulls, bindings, &secrets, tenant).map_err(unprocessable)?;
    for (role, auths) in resolved {
        if let Some(pod) = artifact.roles.get_mut(&role).and_then(|r| r.exec.pod.as_mut()) {
            pod.pull_auth = auths;
        }
    }
    Ok((artifact, names))
}
