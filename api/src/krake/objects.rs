//! Krake's operations on every kind (`krake.md` §2.5): create (`409` when the name is taken),
//! read, list and list across namespaces (`?watch` streams instead), update of the full object
//! merged by the server (read-only fields ignored, an immutable name or namespace `400`, a body
//! equal to the object `400`), and delete (marking `deleted` and adding `cascade_deletion`;
//! `?force` removes at once).
//!
//! One difference on purpose: a `PUT` whose `metadata.modified` is not the object's is refused
//! with `409 TRANSACTION_ERROR` — the writer read an older version — where Krake keeps the last
//! writer's object. A writer that sends no `modified` still replaces what is there.

use std::collections::HashMap;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use drover_model::krake::apply::{keys_of, read};
use drover_model::krake::rbac::Scope;
use drover_model::krake::{KrakeBody, KrakeChange, KrakeKey, KrakeKind, KrakeMeta, KrakeStored, Verb};
use drover_raft::Consistency;
use serde_json::Value;

use super::answer::{body_json, json_response, propose, shown};
use super::cluster_checks::{agent_answers, blocking_state, wait_for};
use super::context::KrakeState;
use super::guard::{allow, authenticate, Caller};
use super::problem::{Problem, Title};
use super::watch::{watch, DEFAULT_HEARTBEAT};
use super::wire::{keep_unshown, parse, render, render_list, Incoming};
use crate::guard::Credentials;

/// The kind a route's group and plural name, when it is served with this scope.
fn kind_of(api: &str, plural: &str, namespaced: bool) -> Result<KrakeKind, Problem> {
    KrakeKind::by_plural(api, plural)
        .filter(|kind| kind.namespaced() == namespaced)
        .ok_or_else(|| Problem::http(StatusCode::NOT_FOUND))
}

fn scope(namespace: Option<&str>) -> Scope<'_> {
    namespace.map_or(Scope::Global, Scope::Namespace)
}

/// Authenticates the caller and checks that a role of theirs lets them do `verb` on objects of
/// `kind` in `namespace`.
fn admit(
    state: &KrakeState,
    credentials: &Credentials,
    kind: KrakeKind,
    namespace: Option<&str>,
    verb: Verb,
) -> Result<Caller, Problem> {
    let caller = authenticate(state, credentials)?;
    allow(state, &caller, kind.api(), kind.plural(), verb, scope(namespace))?;
    Ok(caller)
}

/// A query flag as webargs reads a boolean (`?force`, `?force=True`, `?force=1`).
fn flag(query: &HashMap<String, String>, name: &str) -> Result<bool, Problem> {
    match query.get(name).map(|v| v.to_ascii_lowercase()) {
        None => Ok(false),
        Some(v) if ["", "true", "1", "yes", "on", "t", "y"].contains(&v.as_str()) => Ok(true),
        Some(v) if ["false", "0", "no", "off", "f", "n"].contains(&v.as_str()) => Ok(false),
        Some(_) => Err(Problem::invalid(name, "Not a valid boolean.")),
    }
}

/// `?resourceVersion=V` on a watch: resume after the version a list returned.
fn resume_from(query: &HashMap<String, String>) -> Result<Option<u64>, Problem> {
    match query.get("resourceVersion").map(String::as_str) {
        None | Some("") => Ok(None),
        Some(text) => text.parse().map(Some).map_err(|_| {
            Problem::invalid(
                "resourceVersion",
                "Not a valid integer: give the resourceVersion a list returned.",
            )
        }),
    }
}

/// `?heartbeat=N` seconds: 0 (none) up to a watch's longest life. Checked on every list, a
/// watch or not, as Krake's query schema is.
fn heartbeat(query: &HashMap<String, String>) -> Result<u64, Problem> {
    let longest = crate::kube::watch::MAX_WATCH.as_secs();
    let Some(text) = query.get("heartbeat") else {
        return Ok(DEFAULT_HEARTBEAT);
    };
    let seconds: i128 = text
        .trim()
        .parse()
        .map_err(|_| Problem::invalid("heartbeat", "Not a valid integer."))?;
    if seconds < 0 {
        return Err(Problem::invalid(
            "heartbeat",
            "Must be greater than or equal to 0.",
        ));
    }
    u64::try_from(seconds)
        .ok()
        .filter(|s| *s <= longest)
        .ok_or_else(|| Problem::invalid("heartbeat", &format!("Must be between 0 and {longest}.")))
}

/// Answers a blocking write once its object is in the state asked for (or gone, or a minute
/// has passed): the object as it is then, or as the write left it when it is gone.
async fn blocked(state: &KrakeState, stored: &KrakeStored, wanted: &str) -> Result<Response, Problem> {
    wait_for(state, &stored.key, wanted).await;
    let now = state.raft.local_read(|s| {
        read(s.platform(), s.krake(), &stored.key).map(|(meta, body)| render(s, &stored.key, &meta, &body))
    });
    Ok(json_response(
        StatusCode::OK,
        &now.unwrap_or_else(|| shown(state, stored)),
    ))
}

/// The object `key` names, read linearizably, with how Krake shows it.
async fn current(state: &KrakeState, key: &KrakeKey) -> Result<(KrakeMeta, KrakeBody, Value), Problem> {
    let (found, _) = state
        .raft
        .read(Consistency::Linearizable, |s| {
            read(s.platform(), s.krake(), key).map(|(meta, body)| {
                let shown = render(s, key, &meta, &body);
                (meta, body, shown)
            })
        })
        .await?;
    found.ok_or_else(|| Problem::not_found(key.kind.name(), &key.name, key.namespace.as_deref()))
}

async fn do_create(
    state: KrakeState,
    credentials: Credentials,
    kind: KrakeKind,
    namespace: Option<String>,
    body: Body,
    query: HashMap<String, String>,
) -> Result<Response, Problem> {
    // The body is read first (bounded): a refusal that leaves it unread makes the server
    // close a connection the client may already be reusing.
    let value = body_json(&state, body).await;
    let caller = admit(&state, &credentials, kind, namespace.as_deref(), Verb::Create)?;
    let value = value?;
    let Incoming {
        name,
        input,
        mut body,
        ..
    } = parse(kind, &value)?;
    let blocking = blocking_state(kind, &query)?;
    super::app_hooks::issue(&state, &mut body);
    if let KrakeBody::Cluster(cluster) = &body {
        agent_answers(&state, cluster, None).await?;
    }
    super::cluster_checks::provider_target(&state, &body).await?;
    super::cluster_checks::pod_images(&state, &body).await?;
    let key = KrakeKey::new(kind, namespace.as_deref(), &name);
    let stored = propose(&state, &caller, key, KrakeChange::Create { meta: input, body })
        .await
        .map_err(|problem| {
            match problem.title {
                // Krake's words for a taken name.
                Some(Title::ResourceAlreadyExists) => {
                    let name = super::problem::python_str(&name);
                    let detail = match &namespace {
                        Some(ns) => format!(
                            "{} {name} already exists in namespace {}",
                            kind.name(),
                            super::problem::python_str(ns)
                        ),
                        None => format!("{} {name} already exists", kind.name()),
                    };
                    Problem::titled(StatusCode::CONFLICT, Title::ResourceAlreadyExists, detail)
                }
                _ => problem,
            }
        })?;
    if let Some(wanted) = blocking {
        return blocked(&state, &stored, &wanted).await;
    }
    Ok(json_response(StatusCode::OK, &shown(&state, &stored)))
}

async fn do_get(state: KrakeState, credentials: Credentials, key: KrakeKey) -> Result<Response, Problem> {
    admit(
        &state,
        &credentials,
        key.kind,
        key.namespace.as_deref(),
        Verb::Get,
    )?;
    let (_, _, shown) = current(&state, &key).await?;
    Ok(json_response(StatusCode::OK, &shown))
}

async fn do_list(
    state: KrakeState,
    credentials: Credentials,
    kind: KrakeKind,
    namespace: Option<String>,
    query: HashMap<String, String>,
) -> Result<Response, Problem> {
    let caller = authenticate(&state, &credentials)?;
    let reach = match &namespace {
        Some(ns) => Scope::Namespace(ns),
        None if kind.namespaced() => Scope::AllNamespaces,
        None => Scope::Global,
    };
    allow(&state, &caller, kind.api(), kind.plural(), Verb::List, reach)?;
    let heartbeat = heartbeat(&query)?;
    if query.contains_key("watch") {
        let resume = resume_from(&query)?;
        return watch(state, caller, kind, namespace, heartbeat, resume).await;
    }
    let ((items, version), _) = state
        .raft
        .read(Consistency::Linearizable, |s| {
            let items = keys_of(s.platform(), s.krake(), kind, namespace.as_deref())
                .into_iter()
                .filter_map(|key| {
                    read(s.platform(), s.krake(), &key).map(|(meta, body)| render(s, &key, &meta, &body))
                })
                .collect::<Vec<Value>>();
            (items, s.revision())
        })
        .await?;
    Ok(json_response(StatusCode::OK, &render_list(kind, items, version)))
}

async fn do_update(
    state: KrakeState,
    credentials: Credentials,
    key: KrakeKey,
    body: Body,
) -> Result<Response, Problem> {
    let value = body_json(&state, body).await;
    let caller = admit(
        &state,
        &credentials,
        key.kind,
        key.namespace.as_deref(),
        Verb::Update,
    )?;
    let value = value?;
    // Krake checks the body before it looks the object up.
    let mut incoming = parse(key.kind, &value)?;
    incoming.check_full_object()?;
    let (meta, stored_body, rendered) = current(&state, &key).await?;
    keep_unshown(&mut incoming.body, &stored_body);
    if let (KrakeBody::Cluster(cluster), KrakeBody::Cluster(stored)) = (&incoming.body, &stored_body) {
        agent_answers(&state, cluster, stored.join_token.as_deref()).await?;
    }
    super::cluster_checks::provider_target(&state, &incoming.body).await?;
    super::cluster_checks::pod_images(&state, &incoming.body).await?;
    let immutable = |field: &str| {
        Problem::titled(
            StatusCode::BAD_REQUEST,
            Title::UpdateError,
            format!("Trying to update an immutable field: {field}"),
        )
    };
    if incoming.name != key.name {
        return Err(immutable("name"));
    }
    if incoming.namespace.is_some() && incoming.namespace != key.namespace {
        return Err(immutable("namespace"));
    }
    if meta.in_deletion()
        && !incoming
            .input
            .finalizers
            .iter()
            .all(|f| meta.input.finalizers.contains(f))
    {
        return Err(Problem::titled(
            StatusCode::CONFLICT,
            Title::UpdateError,
            "Finalizers can only be removed if a deletion is in progress.",
        ));
    }
    let readonly_same = super::wire::READONLY
        .iter()
        .zip(&incoming.readonly)
        .all(|(name, sent)| same_readonly(sent.as_ref(), &rendered["metadata"][*name]));
    if readonly_same && incoming.input == meta.input && incoming.body == stored_body {
        return Err(Problem::titled(
            StatusCode::BAD_REQUEST,
            Title::UpdateError,
            "The body contained no update.",
        ));
    }
    let modified_us = incoming.modified_us();
    super::app_hooks::issue(&state, &mut incoming.body);
    let change = KrakeChange::Update {
        meta: incoming.input,
        body: incoming.body,
        modified_us,
    };
    let stored = propose(&state, &caller, key, change).await?;
    Ok(json_response(StatusCode::OK, &shown(&state, &stored)))
}

/// Whether a read-only metadata field sent back equals the one shown: times by the instant they
/// name, not by their spelling (Python's `isoformat` leaves out a fraction of zero, so a time on
/// a whole second comes back as `…:31+00:00` where Drover showed `…:31.000000+00:00`).
fn same_readonly(sent: Option<&Value>, shown: &Value) -> bool {
    match (sent, shown) {
        (Some(Value::String(sent)), Value::String(shown)) => {
            sent == shown
                || drover_model::time::parse_rfc3339_us(sent)
                    .is_some_and(|at| Some(at) == drover_model::time::parse_rfc3339_us(shown))
        }
        (Some(sent), shown) => sent == shown,
        (None, _) => false,
    }
}

async fn do_delete(
    state: KrakeState,
    credentials: Credentials,
    key: KrakeKey,
    query: HashMap<String, String>,
) -> Result<Response, Problem> {
    let caller = admit(
        &state,
        &credentials,
        key.kind,
        key.namespace.as_deref(),
        Verb::Delete,
    )?;
    let force = flag(&query, "force")?;
    let blocking = blocking_state(key.kind, &query)?;
    let stored = propose(&state, &caller, key.clone(), KrakeChange::Delete { force })
        .await
        .map_err(|problem| match problem.title {
            Some(Title::NotFoundError) => {
                Problem::not_found(key.kind.name(), &key.name, key.namespace.as_deref())
            }
            _ => problem,
        })?;
    if let Some(wanted) = blocking {
        return blocked(&state, &stored, &wanted).await;
    }
    Ok(json_response(StatusCode::OK, &shown(&state, &stored)))
}

fn not_found_problem(problem: Problem, key: &KrakeKey) -> Problem {
    match problem.title {
        Some(Title::NotFoundError) => {
            Problem::not_found(key.kind.name(), &key.name, key.namespace.as_deref())
        }
        _ => problem,
    }
}

// The handlers of each route shape. The group is the path's first segment; the routes are
// registered per group (`/core/…`), so no other dialect's path is taken.

/// The path's parameters and its group.
struct Params {
    api: String,
    map: HashMap<String, String>,
}

impl Params {
    fn of(uri: &Uri, map: HashMap<String, String>) -> Self {
        let api = uri
            .path()
            .trim_start_matches('/')
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string();
        Self { api, map }
    }

    fn get(&self, name: &str) -> String {
        self.map.get(name).cloned().unwrap_or_default()
    }

    fn key(&self, namespaced: bool) -> Result<KrakeKey, Problem> {
        let kind = kind_of(&self.api, &self.get("plural"), namespaced)?;
        let namespace = namespaced.then(|| self.get("namespace"));
        Ok(KrakeKey::new(kind, namespace.as_deref(), &self.get("name")))
    }
}

/// `GET /{api}/{plural}`: a global kind's list, or a namespaced kind's across namespaces.
pub async fn list_plain(
    State(state): State<KrakeState>,
    credentials: Credentials,
    uri: Uri,
    Path(map): Path<HashMap<String, String>>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, Problem> {
    let params = Params::of(&uri, map);
    let kind = KrakeKind::by_plural(&params.api, &params.get("plural"))
        .ok_or_else(|| Problem::http(StatusCode::NOT_FOUND))?;
    do_list(state, credentials, kind, None, query).await
}

/// `POST /{api}/{plural}`: create an object of a global kind.
pub async fn create_global(
    State(state): State<KrakeState>,
    credentials: Credentials,
    uri: Uri,
    Path(map): Path<HashMap<String, String>>,
    Query(query): Query<HashMap<String, String>>,
    body: Body,
) -> Result<Response, Problem> {
    let params = Params::of(&uri, map);
    let kind = match KrakeKind::by_plural(&params.api, &params.get("plural")) {
        Some(kind) if kind.namespaced() => return Err(Problem::http(StatusCode::METHOD_NOT_ALLOWED)),
        Some(kind) => kind,
        None => return Err(Problem::http(StatusCode::NOT_FOUND)),
    };
    do_create(state, credentials, kind, None, body, query).await
}

/// `POST /{api}/namespaces/{namespace}/{plural}`: the namespace is the path's.
pub async fn create_namespaced(
    State(state): State<KrakeState>,
    credentials: Credentials,
    uri: Uri,
    Path(map): Path<HashMap<String, String>>,
    Query(query): Query<HashMap<String, String>>,
    body: Body,
) -> Result<Response, Problem> {
    let params = Params::of(&uri, map);
    let kind = kind_of(&params.api, &params.get("plural"), true)?;
    do_create(
        state,
        credentials,
        kind,
        Some(params.get("namespace")),
        body,
        query,
    )
    .await
}

/// `GET /{api}/namespaces/{namespace}/{plural}`.
pub async fn list_namespaced(
    State(state): State<KrakeState>,
    credentials: Credentials,
    uri: Uri,
    Path(map): Path<HashMap<String, String>>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, Problem> {
    let params = Params::of(&uri, map);
    let kind = kind_of(&params.api, &params.get("plural"), true)?;
    do_list(state, credentials, kind, Some(params.get("namespace")), query).await
}

/// `GET` of one object (`/{api}/{plural}/{name}` or `/{api}/namespaces/{ns}/{plural}/{name}`).
pub async fn get_one(
    State(state): State<KrakeState>,
    credentials: Credentials,
    uri: Uri,
    Path(map): Path<HashMap<String, String>>,
) -> Result<Response, Problem> {
    let params = Params::of(&uri, map);
    let key = params.key(params.map.contains_key("namespace"))?;
    do_get(state, credentials, key).await
}

/// `PUT` of one object.
pub async fn update_one(
    State(state): State<KrakeState>,
    credentials: Credentials,
    uri: Uri,
    Path(map): Path<HashMap<String, String>>,
    body: Body,
) -> Result<Response, Problem> {
    let params = Params::of(&uri, map);
    let key = params.key(params.map.contains_key("namespace"))?;
    do_update(state, credentials, key.clone(), body)
        .await
        .map_err(|p| not_found_problem(p, &key))
}

/// `DELETE` of one object.
pub async fn delete_one(
    State(state): State<KrakeState>,
    credentials: Credentials,
    uri: Uri,
    Path(map): Path<HashMap<String, String>>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, Problem> {
    let params = Params::of(&uri, map);
    let key = params.key(params.map.contains_key("namespace"))?;
    do_delete(state, credentials, key, query).await
}

/// `PUT …/{name}/{subresource}` (`status`, `binding`): authorized as Krake does
/// (`plural/subresource:update`), then refused — a Cluster's status is what Drover's cluster
/// actor observes, and Drover does not schedule clusters to clouds.
pub async fn subresource(
    State(state): State<KrakeState>,
    credentials: Credentials,
    uri: Uri,
    Path(map): Path<HashMap<String, String>>,
    body: Body,
) -> Result<Response, Problem> {
    let params = Params::of(&uri, map);
    let key = params.key(params.map.contains_key("namespace"))?;
    let sub = params.get("subresource");
    if key.kind == KrakeKind::Application && ["complete", "shutdown", "retry"].contains(&sub.as_str()) {
        return super::app_hooks::call(state, credentials, key.clone(), &sub, body)
            .await
            .map_err(|p| not_found_problem(p, &key));
    }
    let _ = body_json(&state, body).await;
    let caller = authenticate(&state, &credentials)?;
    let resource = format!("{}/{sub}", key.kind.plural());
    allow(
        &state,
        &caller,
        key.kind.api(),
        &resource,
        Verb::Update,
        scope(key.namespace.as_deref()),
    )?;
    current(&state, &key).await?;
    let why = match (key.kind, sub.as_str()) {
        (KrakeKind::Cluster, "status") => "the status of a Cluster is what Drover's cluster actor observes of its agent; it is not written through the API",
        (KrakeKind::Cluster, "binding") => "Drover does not schedule clusters to clouds: a Cluster is registered by its drover agent's kubeconfig",
        (KrakeKind::Application, "status") => "the status of an Application is what Drover's service actor observes of its instances; it is not written through the API",
        (KrakeKind::GlobalCloud | KrakeKind::Cloud, "status") => "the status of a cloud is what Drover resolves of its metrics; it is not written through the API",
        (KrakeKind::Application, "binding") => "Drover's scheduler places applications (with create-first migration); a binding is not written through the API",
        _ => return Err(Problem::http(StatusCode::NOT_FOUND)),
    };
    Err(Problem::invalid(&sub, why))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::same_readonly;

    #[test]
    fn read_only_times_are_compared_by_instant_not_spelling() {
        let shown = json!("2026-11-27T10:16:31.000000+00:00");
        assert!(same_readonly(Some(&json!("2026-11-27T10:16:31+00:00")), &shown));
        assert!(same_readonly(Some(&json!("2026-11-27T10:16:31Z")), &shown));
        assert!(same_readonly(Some(&shown), &shown));
        assert!(!same_readonly(Some(&json!("2026-11-27T10:16:32+00:00")), &shown));
        assert!(!same_readonly(None, &shown));
        assert!(same_readonly(Some(&json!(null)), &json!(null)));
        assert!(same_readonly(Some(&json!("a-uid")), &json!("a-uid")));
        assert!(!same_readonly(Some(&json!("a-uid")), &json!("b-uid")));
    }
}
