//! The lease objects themselves: create, read, list (or watch), replace and delete, with
//! `resourceVersion` compare-and-set, field validation and the consistency a read asks for.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::Engine;
use drover_model::validation::{validate_contents, validate_name, validate_namespace};
use drover_model::{Command, CommandResult, ObjectKey, ObjectKind, Precondition, Proposal, StoredObject};
use drover_raft::Consistency;
use serde_json::json;

use super::selector::Selector;
use super::status::KubeError;
use super::watch;
use super::wire::{kube_object, kube_page, parse_incoming, FieldValidation, Incoming};
use crate::core::Core;

/// Header that says how fresh a read was.
pub const CONSISTENCY_HEADER: &str = "x-drover-consistency";

/// The kind served under an API group.
pub fn kind_of_group(group: &str) -> Option<ObjectKind> {
    ObjectKind::ALL.into_iter().find(|kind| kind.group() == group)
}

/// Resolves `group` and `plural` of a path to a kind, or `404`.
pub(crate) fn resolve(group: &str, plural: &str) -> Result<ObjectKind, KubeError> {
    kind_of_group(group)
        .filter(|kind| kind.plural() == plural)
        .ok_or_else(|| KubeError::no_route(&format!("/apis/{group}/v1/{plural}")))
}

fn consistency(query: &HashMap<String, String>) -> Result<Consistency, KubeError> {
    match query.get("consistency").map(String::as_str) {
        None | Some("") | Some("linearizable") => {
            // Kubernetes' resourceVersion=0 means "any version is fine": serve locally.
            if query.get("resourceVersion").map(String::as_str) == Some("0") {
                Ok(Consistency::Stale)
            } else {
                Ok(Consistency::Linearizable)
            }
        }
        Some("stale") => Ok(Consistency::Stale),
        Some(other) => Err(KubeError::bad_request(format!(
            "consistency must be \"linearizable\" or \"stale\", got {other:?}"
        ))),
    }
}

fn with_consistency(mut response: Response, consistency: Consistency) -> Response {
    let value = match consistency {
        Consistency::Linearizable => "linearizable",
        Consistency::Stale => "stale",
    };
    response
        .headers_mut()
        .insert(CONSISTENCY_HEADER, HeaderValue::from_static(value));
    response
}

pub(crate) fn idempotency_key(headers: &HeaderMap) -> Result<Option<(String, String)>, KubeError> {
    crate::idempotency::idempotency_key(headers).map_err(KubeError::bad_request)
}

/// A body may name its namespace, but only the one in the path.
fn check_body_namespace(incoming: &Incoming, namespace: &str) -> Result<(), KubeError> {
    if incoming.namespace.as_deref().is_some_and(|ns| ns != namespace) {
        return Err(KubeError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}

/// Creates and replaces take JSON, as the API server's JSON serializer does (`415` otherwise;
/// a request without a `Content-Type` is read as JSON).
fn check_json_body(headers: &HeaderMap) -> Result<(), KubeError> {
    let Some(value) = headers.get(axum::http::header::CONTENT_TYPE) else {
        return Ok(());
    };
    let media = value
        .to_str()
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    if media == "application/json" || media == "*/*" {
        Ok(())
    } else {
        Err(KubeError::unsupported_media_type(format!(
            "the body of a create or replace must be application/json, not {media:?}"
        )))
    }
}

pub(crate) fn check_names(kind: ObjectKind, namespace: &str, name: &str) -> Result<(), KubeError> {
    validate_namespace(namespace)
        .and_then(|()| validate_name(kind, name))
        .map_err(|error| invalid_object(kind, name, error))
}

/// Checks a create or replace as the state machine will (size, labels, annotations), so that a
/// bad one is answered before it is proposed.
pub(crate) fn check_contents(command: &Command) -> Result<(), KubeError> {
    match command {
        Command::Create {
            key,
            spec,
            labels,
            annotations,
            ..
        }
        | Command::Replace {
            key,
            spec,
            labels,
            annotations,
            ..
        } => validate_contents(key, labels, annotations, spec)
            .map_err(|error| invalid_object(key.kind, &key.name, error)),
        _ => Ok(()),
    }
}

fn invalid_object(kind: ObjectKind, name: &str, error: drover_model::DomainError) -> KubeError {
    match error {
        drover_model::DomainError::Invalid { field, message } => {
            KubeError::invalid(kind, name, &field, &message)
        }
        other => KubeError::from_domain(other),
    }
}

/// Wall-clock time in Kubernetes' `metav1.Time` form.
fn now_rfc3339() -> String {
    let format = time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");
    time::OffsetDateTime::now_utc()
        .format(&format)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".into())
}

fn generated_name(prefix: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let random = uuid::Uuid::new_v4();
    let suffix: String = random.as_bytes()[..5]
        .iter()
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect();
    format!("{prefix}{suffix}")
}

pub(crate) async fn commit(state: &Core, proposal: Proposal) -> Result<CommandResult, KubeError> {
    let proposal = proposal.with_principal(crate::audit::principal());
    Ok(state.raft.write_answered(proposal).await?.result)
}

pub(crate) fn stored(result: CommandResult) -> Result<StoredObject, KubeError> {
    match result {
        CommandResult::Stored(object) | CommandResult::Deleted(object) => Ok(object),
        CommandResult::Refused(error) => Err(KubeError::from_domain(error)),
        CommandResult::Done
        | CommandResult::Pool(_)
        | CommandResult::Platform(_)
        | CommandResult::Service(_)
        | CommandResult::Krake(_)
        | CommandResult::Batch { .. } => Err(KubeError::internal("the command produced no object")),
    }
}

pub(crate) async fn list_all_namespaces(
    State(state): State<Core>,
    Path((group, plural)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, KubeError> {
    let kind = resolve(&group, &plural)?;
    list_or_watch_in(state, kind, None, query).await
}

pub(crate) async fn list_or_watch(
    State(state): State<Core>,
    Path((group, namespace, plural)): Path<(String, String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, KubeError> {
    let kind = resolve(&group, &plural)?;
    list_or_watch_in(state, kind, Some(namespace), query).await
}

async fn list_or_watch_in(
    state: Core,
    kind: ObjectKind,
    namespace: Option<String>,
    query: HashMap<String, String>,
) -> Result<Response, KubeError> {
    let selector = Selector::parse(
        query.get("labelSelector").map(String::as_str),
        query.get("fieldSelector").map(String::as_str),
    )?;
    if matches!(query.get("watch").map(String::as_str), Some("true" | "1")) {
        return watch::watch(state, kind, namespace, selector, &query).await;
    }
    let consistency = consistency(&query)?;
    let page = Page::from_query(&query)?;
    let (mut items, revision) = state
        .raft
        .read(consistency, |s| {
            s.objects_of(kind, namespace.as_deref())
                .filter(|object| {
                    page.after
                        .as_ref()
                        .is_none_or(|(ns, name)| position(object) > (ns.as_str(), name.as_str()))
                })
                .filter(|object| selector.matches(object))
                .take(page.limit.map_or(usize::MAX, |limit| limit.saturating_add(1)))
                .cloned()
                .collect::<Vec<_>>()
        })
        .await?;
    let next = match page.limit {
        Some(limit) if items.len() > limit => {
            items.truncate(limit);
            items.last().map(|last| continue_token(position(last)))
        }
        _ => None,
    };
    Ok(with_consistency(
        Json(kube_page(kind, &items, revision, next)).into_response(),
        consistency,
    ))
}

/// `limit` and `continue` of a list, as Kubernetes clients page with them. A page continues
/// after the last object of the one before, in the current state (not at the first page's
/// revision: Drover keeps no old versions of objects to list from).
struct Page {
    limit: Option<usize>,
    after: Option<(String, String)>,
}

impl Page {
    fn from_query(query: &HashMap<String, String>) -> Result<Self, KubeError> {
        let limit = match query.get("limit").map(String::as_str) {
            None | Some("") | Some("0") => None,
            Some(text) => Some(text.parse::<usize>().map_err(|_| {
                KubeError::bad_request(format!("limit must be a whole number, got {text:?}"))
            })?),
        };
        let after = match query.get("continue").map(String::as_str) {
            None | Some("") => None,
            Some(token) => Some(parse_continue(token).ok_or_else(|| {
                KubeError::bad_request("continue must be a token from a previous list's metadata.continue")
            })?),
        };
        Ok(Self { limit, after })
    }
}

/// Where an object stands in list order (after its kind): namespace, then name.
fn position(object: &StoredObject) -> (&str, &str) {
    (&object.key.namespace, &object.key.name)
}

fn continue_token((namespace, name): (&str, &str)) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{namespace}/{name}"))
}

fn parse_continue(token: &str) -> Option<(String, String)> {
    let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (namespace, name) = text.split_once('/')?;
    Some((namespace.to_string(), name.to_string()))
}

pub(crate) async fn get_one(
    State(state): State<Core>,
    Path((group, namespace, plural, name)): Path<(String, String, String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, KubeError> {
    let kind = resolve(&group, &plural)?;
    let consistency = consistency(&query)?;
    let key = ObjectKey::new(kind, namespace, name.clone());
    let (object, _) = state.raft.read(consistency, |s| s.get(&key).cloned()).await?;
    let object = object.ok_or_else(|| KubeError::not_found(kind, &name))?;
    Ok(with_consistency(
        Json(kube_object(&object)).into_response(),
        consistency,
    ))
}

pub(crate) async fn create(
    State(state): State<Core>,
    Path((group, namespace, plural)): Path<(String, String, String)>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, KubeError> {
    let kind = resolve(&group, &plural)?;
    check_json_body(&headers)?;
    let incoming = parse_incoming(kind, &body, FieldValidation::from_query(&query)?)?;
    check_body_namespace(&incoming, &namespace)?;
    let name = match (incoming.name.is_empty(), incoming.generate_name.is_empty()) {
        (false, _) => incoming.name.clone(),
        (true, false) => generated_name(&incoming.generate_name),
        (true, true) => {
            return Err(KubeError::invalid(
                kind,
                "",
                "metadata.name",
                "name or generateName is required",
            ))
        }
    };
    check_names(kind, &namespace, &name)?;
    let command = Command::Create {
        key: ObjectKey::new(kind, namespace, name),
        spec: incoming.spec,
        labels: incoming.labels,
        annotations: incoming.annotations,
        uid: uuid::Uuid::new_v4().to_string(),
        created_at: now_rfc3339(),
    };
    check_contents(&command)?;
    let proposal = Proposal::new(command).with_idempotency(idempotency_key(&headers)?);
    let object = stored(commit(&state, proposal).await?)?;
    Ok((StatusCode::CREATED, Json(kube_object(&object))).into_response())
}

pub(crate) async fn replace(
    State(state): State<Core>,
    Path((group, namespace, plural, name)): Path<(String, String, String, String)>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, KubeError> {
    let kind = resolve(&group, &plural)?;
    check_json_body(&headers)?;
    let incoming = parse_incoming(kind, &body, FieldValidation::from_query(&query)?)?;
    if !incoming.name.is_empty() && incoming.name != name {
        return Err(KubeError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            incoming.name
        )));
    }
    check_body_namespace(&incoming, &namespace)?;
    check_names(kind, &namespace, &name)?;
    let command = Command::Replace {
        key: ObjectKey::new(kind, namespace, name),
        spec: incoming.spec,
        labels: incoming.labels,
        annotations: incoming.annotations,
        precondition: Precondition {
            resource_version: incoming.resource_version,
            uid: incoming.uid,
        },
    };
    check_contents(&command)?;
    let proposal = Proposal::new(command).with_idempotency(idempotency_key(&headers)?);
    let object = stored(commit(&state, proposal).await?)?;
    Ok(Json(kube_object(&object)).into_response())
}

/// `DeleteOptions`, of which only the preconditions matter here.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeleteOptions {
    #[serde(default)]
    preconditions: Option<DeletePreconditions>,
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeletePreconditions {
    #[serde(default)]
    uid: Option<String>,
    #[serde(default)]
    resource_version: Option<String>,
}

pub(crate) async fn remove(
    State(state): State<Core>,
    Path((group, namespace, plural, name)): Path<(String, String, String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, KubeError> {
    let kind = resolve(&group, &plural)?;
    let options: DeleteOptions = if body.is_empty() {
        DeleteOptions::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| KubeError::bad_request(format!("DeleteOptions: {e}")))?
    };
    let preconditions = options.preconditions.unwrap_or_default();
    let resource_version = match preconditions.resource_version.as_deref() {
        None | Some("") => None,
        Some(text) => Some(text.parse::<u64>().map_err(|_| {
            KubeError::bad_request(format!("preconditions.resourceVersion {text:?} must be a number"))
        })?),
    };
    let command = Command::Delete {
        key: ObjectKey::new(kind, namespace, name.clone()),
        precondition: Precondition {
            resource_version,
            uid: preconditions.uid,
        },
    };
    check_contents(&command)?;
    let proposal = Proposal::new(command).with_idempotency(idempotency_key(&headers)?);
    let object = stored(commit(&state, proposal).await?)?;
    Ok(Json(json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": { "name": name, "group": kind.group(), "kind": kind.plural(), "uid": object.meta.uid },
    }))
    .into_response())
}
