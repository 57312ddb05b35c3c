//! `PATCH` of lease objects with JSON merge patches (RFC 7386). Strategic merge patches are
//! accepted too: lease objects hold no lists, so for them the two are the same.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::Json;
use drover_model::merge_patch::merge_patch;
use drover_model::{Command, CommandResult, DomainError, ObjectKey, Precondition, Proposal};
use drover_raft::Consistency;
use serde_json::Value;

use super::objects::{check_contents, check_names, commit, idempotency_key, resolve, stored};
use super::status::KubeError;
use super::wire::{kube_object, object_json, parse_incoming, FieldValidation};
use crate::core::Core;

/// How often a patch without a `resourceVersion` is retried after losing a race.
const PATCH_ATTEMPTS: usize = 5;

fn check_content_type(headers: &HeaderMap) -> Result<(), KubeError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim();
    match content_type {
        "application/merge-patch+json" | "application/strategic-merge-patch+json" => Ok(()),
        other => Err(KubeError::unsupported_media_type(format!(
            "patch content type {other:?} is not supported: use application/merge-patch+json or application/strategic-merge-patch+json"
        ))),
    }
}

/// `PATCH …/{name}`.
pub async fn patch(
    State(state): State<Core>,
    Path((group, namespace, plural, name)): Path<(String, String, String, String)>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, KubeError> {
    let kind = resolve(&group, &plural)?;
    check_content_type(&headers)?;
    let validation = FieldValidation::from_query(&query)?;
    let patch: Value = serde_json::from_slice(&body)
        .map_err(|e| KubeError::bad_request(format!("the patch is not valid JSON: {e}")))?;
    let explicit_version = !patch["metadata"]["resourceVersion"].is_null();
    let key = ObjectKey::new(kind, namespace.clone(), name.clone());
    let idempotency = idempotency_key(&headers)?;
    for _ in 0..PATCH_ATTEMPTS {
        let (current, _) = state
            .raft
            .read(Consistency::Linearizable, |s| s.get(&key).cloned())
            .await?;
        let current = current.ok_or_else(|| KubeError::not_found(kind, &name))?;
        let mut document = object_json(&current);
        merge_patch(&mut document, &patch);
        if !explicit_version {
            document["metadata"]["resourceVersion"] =
                Value::String(current.meta.resource_version.to_string());
        }
        let bytes = serde_json::to_vec(&document).map_err(|e| KubeError::internal(e.to_string()))?;
        let incoming = parse_incoming(kind, &bytes, validation)?;
        if incoming.name != name || incoming.namespace.as_deref() != Some(namespace.as_str()) {
            return Err(KubeError::bad_request(
                "a patch cannot change metadata.name or metadata.namespace",
            ));
        }
        check_names(kind, &namespace, &name)?;
        let command = Command::Replace {
            key: key.clone(),
            spec: incoming.spec,
            labels: incoming.labels,
            annotations: incoming.annotations,
            precondition: Precondition {
                resource_version: incoming.resource_version,
                uid: Some(current.meta.uid.clone()),
            },
        };
        check_contents(&command)?;
        let proposal = Proposal::new(command).with_idempotency(idempotency.clone());
        match commit(&state, proposal).await? {
            CommandResult::Refused(DomainError::Conflict { .. }) if !explicit_version => continue,
            result => return Ok(Json(kube_object(&stored(result)?)).into_response()),
        }
    }
    Err(KubeError::from_domain(DomainError::Conflict {
        key,
        message: "the object kept changing while the patch was applied; try again".to_string(),
    }))
}
