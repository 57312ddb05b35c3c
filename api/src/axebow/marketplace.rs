//! The marketplace (Axebow K1–K3): a tenant's modules, published as npm packages to the
//! registry its spec names (`TenantSpec.registry`) through the registry's own publish protocol,
//! listed and described from the packages' documents. A bundle is read as hostile input before
//! anything is sent ([`super::bundle`]); a refused bundle publishes nothing. Calls go through
//! the node's registry transport, within the operator's egress policy.

use std::collections::BTreeMap;

use axum::extract::multipart::{MultipartError, MultipartRejection};
use axum::extract::{DefaultBodyLimit, Multipart, Path, State};
use axum::http::StatusCode;
use drover_model::platform::{PlatformError, PlatformRead};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::bundle::archive::{read_bundle, BundleError, BundleLimits};
use super::bundle::module::{check_npm_name, read_module, Artifact, ArtifactKind};
use super::bundle::package::{package, package_name, publish_document};
use super::context::{AxebowState, Caller};
use super::reply::{codes, ok, AxebowError, Envelope, Params};
use super::store;
use crate::registry::{authorization, package_url, RegistryAnswer, RegistryCalls};

/// The largest bundle upload (the multipart body as a whole).
pub const MAX_UPLOAD: usize = 40 << 20;

/// Most packages read for one listing.
const MAX_LISTED_PACKAGES: usize = 250;

/// Most module versions one listing gathers (before paging).
const MAX_LISTED_ITEMS: usize = 10_000;

/// The marketplace routes, with their own body limit (bundles are larger than API bodies).
pub fn routes() -> OpenApiRouter<AxebowState> {
    OpenApiRouter::new()
        .routes(routes!(publish, list))
        .routes(routes!(schema))
        .layer(DefaultBodyLimit::max(MAX_UPLOAD))
}

/// `PUT …/marketplace/module`: a multipart form.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct ModuleUpload {
    /// The zip of Kumori modules.
    #[schema(value_type = String, format = Binary)]
    bundle: Vec<u8>,
    /// `component` or `service`: the kind of the module's main artifact.
    #[schema(rename = "bundle-target-kind")]
    bundle_target_kind: ArtifactKind,
    /// Where the main artifact is in the bundle: `<module dir>[/<artifact>]`.
    #[schema(rename = "bundle-target-dir")]
    bundle_target_dir: String,
    /// A JSON array of strings.
    #[schema(rename = "bundle-tags")]
    bundle_tags: Option<String>,
}

/// What was published.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Published {
    /// The module's name.
    pub name: String,
    /// Its domain.
    pub domain: String,
    /// The version published.
    pub version: String,
    /// The npm package it was published as.
    pub package: String,
}

/// One module version as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModuleItem {
    /// Module name.
    pub name: String,
    /// Its domain.
    pub domain: String,
    /// The version.
    pub version: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// The kinds of its artifacts.
    pub artifact_types: Vec<ArtifactKind>,
}

/// Where a listing page starts.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Pagination {
    /// Items matching, in all.
    pub total: usize,
    /// The first item's position.
    pub offset: usize,
}

/// `GET …/marketplace/module`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ModuleList {
    /// Where this page is.
    pub pagination: Pagination,
    /// The page.
    pub items: Vec<ModuleItem>,
}

/// `GET …/marketplace/module` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Modules whose name contains this.
    pub name: Option<String>,
    /// A JSON array: modules carrying every one of these tags.
    pub tags: Option<String>,
    /// Modules of this domain.
    pub domain: Option<String>,
    /// Most items (default 100, at most 1,000).
    pub limit: Option<usize>,
    /// Items skipped.
    pub offset: Option<usize>,
}

/// `GET …/marketplace/module/schema` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SchemaParams {
    /// The module's domain.
    pub domain: String,
    /// The module's name.
    pub name: String,
    /// The version.
    pub version: String,
}

/// The tenant's registry as stored (credentials included), for a caller who may use it.
pub(super) struct Target {
    pub(super) endpoint: String,
    pub(super) domain: String,
    public: bool,
    pub(super) authorization: Option<String>,
    pub(super) calls: std::sync::Arc<dyn RegistryCalls>,
}

/// The registry of `tenant`, when `caller` may act for it (`admin` to publish, any member to
/// read).
pub(super) async fn target(
    state: &AxebowState,
    caller: &Caller,
    tenant: &str,
    publishing: bool,
) -> Result<Target, AxebowError> {
    let registry = store::read(state, &caller.0, PlatformRead::Tenant(tenant), |p, grant| {
        if publishing && !grant.reads_secrets() {
            return Err(PlatformError::Forbidden(format!(
                "publishing to tenant {tenant:?}'s marketplace takes its admin or owner role"
            )));
        }
        let stored = p
            .tenant(tenant)
            .ok_or_else(|| PlatformError::NotFound(format!("tenant {tenant:?} not found")))?;
        stored.spec.registry.clone().ok_or_else(|| {
            PlatformError::Conflict(format!(
                "tenant {tenant:?} has no module registry: set one with PATCH /tenant/{tenant} {{\"registry\": {{\"endpoint\", \"domain\", \"credentials\"}}}}"
            ))
        })
    })
    .await?;
    // Checked once the caller is known to be allowed: strangers learn nothing from it.
    let calls = state.axebow.options.registry.clone().ok_or_else(|| {
        AxebowError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            codes::UNAVAILABLE,
            "this node reaches no module registry",
        )
    })?;
    Ok(Target {
        authorization: authorization(registry.credentials.as_deref()),
        endpoint: registry.endpoint,
        domain: registry.domain,
        public: registry.public,
        calls,
    })
}

/// An answer of the registry that is not a success, as the caller sees it.
pub(super) fn refused(endpoint: &str, answer: &RegistryAnswer) -> AxebowError {
    let said = serde_json::from_slice::<Value>(&answer.body)
        .ok()
        .and_then(|v| v["error"].as_str().map(str::to_string))
        .unwrap_or_else(|| String::from_utf8_lossy(&answer.body).chars().take(200).collect());
    match answer.status {
        401 | 403 => AxebowError::new(
            StatusCode::BAD_GATEWAY,
            codes::UNAVAILABLE,
            format!("the registry {endpoint} refused the tenant's credentials ({}): {said}; set registry.credentials with PATCH /tenant/{{t}}", answer.status),
        ),
        409 => AxebowError::new(
            StatusCode::CONFLICT,
            codes::CONFLICT,
            format!("the registry {endpoint} already holds this version ({said}): publish a new version"),
        ),
        404 => AxebowError::not_found(format!("the registry {endpoint} has no such module ({said})")),
        status => AxebowError::new(
            StatusCode::BAD_GATEWAY,
            codes::UNAVAILABLE,
            format!("the registry {endpoint} answered {status}: {said}"),
        ),
    }
}

pub(super) fn unreachable(endpoint: &str, why: &str) -> AxebowError {
    AxebowError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        codes::UNAVAILABLE,
        format!("the registry {endpoint} does not answer: {why}"),
    )
}

pub(super) fn bundle_refused(error: BundleError) -> AxebowError {
    let status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::BAD_REQUEST);
    let code = if status == StatusCode::PAYLOAD_TOO_LARGE {
        codes::PAYLOAD_TOO_LARGE
    } else {
        codes::BAD_REQUEST
    };
    AxebowError::new(status, code, error.to_string())
}

pub(super) fn unprocessable(message: impl Into<String>) -> AxebowError {
    AxebowError::new(StatusCode::UNPROCESSABLE_ENTITY, codes::BAD_REQUEST, message)
}

/// The fields of the form.
#[derive(Default)]
struct Form {
    bundle: Option<bytes::Bytes>,
    kind: Option<String>,
    dir: Option<String>,
    tags: Option<String>,
}

/// A form that cannot be read: `413` past the upload limit, `400` otherwise.
pub(super) fn unreadable(field: &str, error: &MultipartError) -> AxebowError {
    if error.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return AxebowError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            codes::PAYLOAD_TOO_LARGE,
            format!("the form is larger than the {MAX_UPLOAD} bytes a bundle upload may be"),
        );
    }
    AxebowError::invalid(
        field,
        format!("not a readable multipart form: {}", error.body_text()),
    )
}

/// Refuses a field of a form given a second time (the later would silently win).
pub(super) fn once(seen: &mut std::collections::BTreeSet<String>, name: &str) -> Result<(), AxebowError> {
    if seen.insert(name.to_string()) {
        Ok(())
    } else {
        Err(AxebowError::invalid(
            name,
            "is given twice: send each field of the form once",
        ))
    }
}

async fn read_form(mut multipart: Multipart) -> Result<Form, AxebowError> {
    let mut form = Form::default();
    let mut seen = std::collections::BTreeSet::new();
    while let Some(field) = multipart
        .next_field()
        .await
        .map_err(|e| unreadable("bundle", &e))?
    {
        let name = field.name().unwrap_or_default().to_string();
        once(&mut seen, &name)?;
        let bytes = field.bytes().await.map_err(|e| unreadable(&name, &e))?;
        let text = || {
            String::from_utf8(bytes.to_vec()).map_err(|_| AxebowError::invalid(name.clone(), "must be text"))
        };
        match name.as_str() {
            "bundle" => form.bundle = Some(bytes),
            "bundle-target-kind" => form.kind = Some(text()?),
            "bundle-target-dir" => form.dir = Some(text()?),
            "bundle-tags" => form.tags = Some(text()?),
            other => {
                return Err(AxebowError::invalid(
                    other.to_string(),
                    "is not a field of this form: bundle, bundle-target-kind, bundle-target-dir, bundle-tags",
                ))
            }
        }
    }
    Ok(form)
}

fn tags_of(text: Option<&str>, field: &str) -> Result<Vec<String>, AxebowError> {
    match text {
        None => Ok(Vec::new()),
        Some(text) => serde_json::from_str::<Vec<String>>(text)
            .map_err(|e| AxebowError::invalid(field, format!("must be a JSON array of strings: {e}"))),
    }
}

/// Publishes the module of a bundle to the tenant's registry.
#[utoipa::path(put, path = "/api/1.0-beta/tenant/{tenant}/marketplace/module", tag = "marketplace",
    params(("tenant" = String, Path, description = "Tenant name")),
    request_body(content_type = "multipart/form-data", content = ModuleUpload),
    responses((status = 200, description = "Published", body = Envelope<Published>)))]
pub async fn publish(
    State(state): State<AxebowState>,
    caller: Caller,
    Path(tenant): Path<String>,
    headers: axum::http::HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Envelope<Published>, AxebowError> {
    // Said before a byte of the body is read (a client that sent `Expect: 100-continue` sends
    // none of it).
    let declared = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|length| length > MAX_UPLOAD as u64) {
        return Err(AxebowError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            codes::PAYLOAD_TOO_LARGE,
            format!("the form is larger than the {MAX_UPLOAD} bytes a bundle upload may be"),
        ));
    }
    let multipart = multipart
        .map_err(|e| AxebowError::invalid("bundle", format!("send a multipart/form-data body: {e}")))?;
    let target = target(&state, &caller, &tenant, true).await?;
    let form = read_form(multipart).await?;
    let bytes = form
        .bundle
        .ok_or_else(|| AxebowError::invalid("bundle", "the zip of the module is missing"))?;
    let kind: ArtifactKind = serde_json::from_value(Value::String(form.kind.unwrap_or_default()))
        .map_err(|_| AxebowError::invalid("bundle-target-kind", "must be component or service"))?;
    let dir = form.dir.ok_or_else(|| {
        AxebowError::invalid(
            "bundle-target-dir",
            "is missing: the module's directory in the bundle",
        )
    })?;
    let tags = tags_of(form.tags.as_deref(), "bundle-tags")?;
    let dir = dir.trim_matches('/').to_string();
    let (module_dir, artifact) = match dir.split_once('/') {
        Some((module, rest)) => (module.to_string(), rest.rsplit('/').next().map(str::to_string)),
        None => (dir.clone(), None),
    };
    if module_dir.is_empty() {
        return Err(AxebowError::invalid("bundle-target-dir", "is empty"));
    }
    // Inflating is CPU work: off the request's thread.
    let bundle = tokio::task::spawn_blocking(move || read_bundle(&bytes, BundleLimits::default()))
        .await
        .map_err(|e| AxebowError::internal(format!("reading the bundle: {e}")))?
        .map_err(bundle_refused)?;
    let files = bundle.under(&module_dir);
    if files.is_empty() {
        return Err(unprocessable(format!(
            "bundle-target-dir: the bundle has no directory {module_dir:?}"
        )));
    }
    let module = read_module(&module_dir, &files).map_err(|e| unprocessable(e.to_string()))?;
    if module.domain != target.domain {
        return Err(unprocessable(format!(
            "{module_dir}/kmodule: domain {:?} is not the tenant's registry domain {:?}",
            module.domain, target.domain
        )));
    }
    let main_ok = match &artifact {
        Some(name) => module.artifacts.get(name).is_some_and(|a| a.kind == kind),
        None => module.artifacts.values().any(|a| a.kind == kind),
    };
    if !main_ok {
        return Err(unprocessable(format!(
            "bundle-target-dir: module {:?} has no {} artifact{}",
            module.module,
            serde_json::to_value(kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            artifact.map(|a| format!(" named {a:?}")).unwrap_or_default()
        )));
    }
    let built = package(&module, &files, &tags, kind, &dir, target.public)
        .map_err(|e| unprocessable(format!("bundle: {e}")))?;
    let document = publish_document(&built, &target.endpoint);
    let body = serde_json::to_vec(&document).map_err(|e| AxebowError::internal(e.to_string()))?;
    let answer = target
        .calls
        .put_json(
            package_url(&target.endpoint, &built.name),
            target.authorization.clone(),
            body,
        )
        .await
        .map_err(|e| unreachable(&target.endpoint, &e.0))?;
    if !(200..300).contains(&answer.status) {
        return Err(refused(&target.endpoint, &answer));
    }
    tracing::info!(%tenant, package = %built.name, version = %built.version, "module published");
    Ok(ok(Published {
        name: module.module,
        domain: module.domain,
        version: built.version,
        package: built.name,
    }))
}

/// The package document (`GET /<package>`) of `name`, if the registry has it. One at a time:
/// a listing holds one document (at most what the transport reads) and the items taken from it.
pub(super) async fn document(target: &Target, name: &str) -> Result<Option<Value>, AxebowError> {
    let answer = target
        .calls
        .get(package_url(&target.endpoint, name), target.authorization.clone())
        .await
        .map_err(|e| unreachable(&target.endpoint, &e.0))?;
    match answer.status {
        200 => serde_json::from_slice(&answer.body).map(Some).map_err(|e| {
            AxebowError::new(
                StatusCode::BAD_GATEWAY,
                codes::UNAVAILABLE,
                format!(
                    "the registry {} answered no package document for {name}: {e}",
                    target.endpoint
                ),
            )
        }),
        404 => Ok(None),
        _ => Err(refused(&target.endpoint, &answer)),
    }
}

/// Whether a version of npm package `package` whose `kumori` metadata is `kumori` is a module
/// the tenant of `own_domain` may use. The package's scope and name decide which module it is:
/// a version whose metadata names another domain or module is no module at all (anyone may
/// write anything into a `package.json`; only the scope is the registry's to grant). Of the
/// modules, the tenant may use its own domain's and those published from a public registry.
pub(super) fn usable(package: &str, kumori: &Value, own_domain: &str) -> bool {
    let (Some(domain), Some(module)) = (kumori["domain"].as_str(), kumori["module"].as_str()) else {
        return false;
    };
    package_name(domain, module) == package && (domain == own_domain || kumori["public"] == Value::Bool(true))
}

/// The items of package `package`'s document the tenant may use: its own domain's, and public
/// ones.
fn items_of(package: &str, document: &Value, own_domain: &str) -> Vec<ModuleItem> {
    let Some(versions) = document["versions"].as_object() else {
        return Vec::new();
    };
    versions
        .iter()
        .filter_map(|(version, manifest)| {
            let kumori = &manifest["kumori"];
            let domain = kumori["domain"].as_str()?;
            if !usable(package, kumori, own_domain) {
                return None;
            }
            let artifacts: BTreeMap<String, Artifact> =
                serde_json::from_value(kumori["artifacts"].clone()).ok()?;
            let mut artifact_types: Vec<ArtifactKind> = artifacts.values().map(|a| a.kind).collect();
            artifact_types.sort_by_key(|k| *k as u8);
            artifact_types.dedup();
            Some(ModuleItem {
                name: kumori["module"].as_str()?.to_string(),
                domain: domain.to_string(),
                version: version.clone(),
                tags: serde_json::from_value(manifest["keywords"].clone()).unwrap_or_default(),
                artifact_types,
            })
        })
        .collect()
}

/// Lists the modules the tenant may use: its own domain's and public ones in its registry.
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/marketplace/module", tag = "marketplace",
    params(("tenant" = String, Path, description = "Tenant name"), ListParams),
    responses((status = 200, description = "A page of module versions", body = Envelope<ModuleList>)))]
pub async fn list(
    State(state): State<AxebowState>,
    caller: Caller,
    Path(tenant): Path<String>,
    Params(params): Params<ListParams>,
) -> Result<Envelope<ModuleList>, AxebowError> {
    let tags = tags_of(params.tags.as_deref(), "tags")?;
    let limit = params.limit.unwrap_or(100).min(1_000);
    let offset = params.offset.unwrap_or(0);
    let target = target(&state, &caller, &tenant, false).await?;
    // The registry's search matches names only: list what it holds, then read each package.
    let search = format!(
        "{}/-/v1/search?text=&size={MAX_LISTED_PACKAGES}",
        target.endpoint.trim_end_matches('/')
    );
    let answer = target
        .calls
        .get(search, target.authorization.clone())
        .await
        .map_err(|e| unreachable(&target.endpoint, &e.0))?;
    if answer.status != 200 {
        return Err(refused(&target.endpoint, &answer));
    }
    let found: Value = serde_json::from_slice(&answer.body).unwrap_or_default();
    let names: Vec<String> = found["objects"]
        .as_array()
        .map(|objects| {
            objects
                .iter()
                .filter_map(|o| o["package"]["name"].as_str().map(str::to_string))
                .filter(|n| n.starts_with('@'))
                .collect()
        })
        .unwrap_or_default();
    let mut items: Vec<ModuleItem> = Vec::new();
    for name in names.iter().take(MAX_LISTED_PACKAGES) {
        let Some(found) = document(&target, name).await? else {
            continue;
        };
        items.extend(
            items_of(name, &found, &target.domain)
                .into_iter()
                .filter(|item| params.name.as_deref().is_none_or(|n| item.name.contains(n)))
                .filter(|item| params.domain.as_deref().is_none_or(|d| item.domain == d))
                .filter(|item| tags.iter().all(|t| item.tags.contains(t))),
        );
        // A registry is the tenant's to fill: what one listing holds stays bounded.
        if items.len() >= MAX_LISTED_ITEMS {
            items.truncate(MAX_LISTED_ITEMS);
            break;
        }
    }
    items.sort_by(|a, b| (&a.domain, &a.name, &a.version).cmp(&(&b.domain, &b.name, &b.version)));
    let total = items.len();
    let items = items.into_iter().skip(offset).take(limit).collect();
    Ok(ok(ModuleList {
        pagination: Pagination { total, offset },
        items,
    }))
}

/// The kinds, schemas and roles of a published module version's artifacts.
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/marketplace/module/schema", tag = "marketplace",
    params(("tenant" = String, Path, description = "Tenant name"), SchemaParams),
    responses((status = 200, description = "Its artifacts by name", body = Envelope<BTreeMap<String, Artifact>>)))]
pub async fn schema(
    State(state): State<AxebowState>,
    caller: Caller,
    Path(tenant): Path<String>,
    Params(params): Params<SchemaParams>,
) -> Result<Envelope<BTreeMap<String, Artifact>>, AxebowError> {
    let target = target(&state, &caller, &tenant, false).await?;
    let name = package_name(&params.domain, &params.name);
    // A name npm refuses is no module: the registry is not asked about it.
    let valid = check_npm_name(&params.domain)
        .and(check_npm_name(&params.name))
        .is_ok();
    let found = if valid {
        document(&target, &name).await?
    } else {
        None
    };
    let artifacts = found
        .map(|d| d["versions"][&params.version]["kumori"].clone())
        .filter(|kumori| usable(&name, kumori, &target.domain))
        .and_then(|kumori| {
            serde_json::from_value::<BTreeMap<String, Artifact>>(kumori["artifacts"].clone()).ok()
        })
        .ok_or_else(|| {
            AxebowError::not_found(format!(
                "no module {}/{} version {} that tenant {tenant:?} may use",
                params.domain, params.name, params.version
            ))
        })?;
    Ok(ok(artifacts))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn version(domain: &str, module: &str, public: bool) -> Value {
        json!({"keywords": ["t"], "kumori": {"domain": domain, "module": module, "public": public,
               "artifacts": {"web": {"kind": "service", "schemas": [], "roles": []}}}})
    }

    #[test]
    fn a_listing_holds_what_the_scope_grants_not_what_a_package_claims() {
        let own = json!({"versions": {"1.0.0": version("acme.mods", "hello", false)}});
        let items = items_of("@acme.mods/hello", &own, "acme.mods");
        assert_eq!(
            items,
            [ModuleItem {
                name: "hello".into(),
                domain: "acme.mods".into(),
                version: "1.0.0".into(),
                tags: vec!["t".into()],
                artifact_types: vec![ArtifactKind::Service],
            }]
        );
        // Another tenant's: private is not listed, public is.
        assert!(items_of("@acme.mods/hello", &own, "other.mods").is_empty());
        let public = json!({"versions": {"1.0.0": version("acme.mods", "hello", true)}});
        assert_eq!(items_of("@acme.mods/hello", &public, "other.mods").len(), 1);
        // Published to @other.mods claiming acme.mods (or another name): no one's module.
        let forged = json!({"versions": {"1.0.0": version("acme.mods", "x", true)}});
        for tenant in ["acme.mods", "other.mods", "third"] {
            assert!(items_of("@other.mods/x", &forged, tenant).is_empty(), "{tenant}");
        }
        let renamed = json!({"versions": {"1.0.0": version("acme.mods", "y", false)}});
        assert!(items_of("@acme.mods/x", &renamed, "acme.mods").is_empty());
    }
}
