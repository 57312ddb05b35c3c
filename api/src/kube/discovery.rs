//! The discovery documents and OpenAPI v3 that kubectl reads before it talks about leases.

use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use axum::Json;
use drover_model::ObjectKind;
use serde_json::{json, Value};

use super::objects::kind_of_group;
use super::status::KubeError;

/// The Kubernetes version this API imitates.
const KUBE_MINOR: &str = "31";

/// `GET /version`.
pub async fn version() -> Json<Value> {
    Json(json!({
        "major": "1",
        "minor": KUBE_MINOR,
        "gitVersion": format!("v1.{KUBE_MINOR}.0-drover.{}", env!("CARGO_PKG_VERSION")),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": "",
        "compiler": "drover",
        "platform": "linux/amd64",
    }))
}

/// `GET /api`: the legacy core group, served empty.
pub async fn core_versions() -> Json<Value> {
    Json(json!({ "kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [] }))
}

/// `GET /api/v1`: no core resources are served.
pub async fn core_resources() -> Json<Value> {
    Json(json!({ "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "v1", "resources": [] }))
}

fn group_json(kind: ObjectKind) -> Value {
    let version = json!({ "groupVersion": kind.api_version(), "version": "v1" });
    json!({
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": kind.group(),
        "versions": [version.clone()],
        "preferredVersion": version,
    })
}

/// `GET /apis`.
pub async fn groups() -> Json<Value> {
    let groups: Vec<Value> = ObjectKind::ALL.iter().map(|kind| group_json(*kind)).collect();
    Json(json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups }))
}

/// `GET /apis/{group}`.
pub async fn group(Path(group): Path<String>) -> Response {
    match kind_of_group(&group) {
        Some(kind) => Json(group_json(kind)).into_response(),
        None => KubeError::no_route(&format!("/apis/{group}")).into_response(),
    }
}

/// `GET /apis/{group}/v1`.
pub async fn resources(Path(group): Path<String>) -> Response {
    let Some(kind) = kind_of_group(&group) else {
        return KubeError::no_route(&format!("/apis/{group}/v1")).into_response();
    };
    Json(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": kind.api_version(),
        "resources": [{
            "name": kind.plural(),
            "singularName": "lease",
            "namespaced": true,
            "kind": kind.kind_name(),
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
        }],
    }))
    .into_response()
}

fn lease_schema(kind: ObjectKind) -> Value {
    let spec = match kind {
        ObjectKind::CoordinationLease => json!({
            "type": "object",
            "properties": {
                "holderIdentity": { "type": "string" },
                "leaseDurationSeconds": { "type": "integer", "format": "int32" },
                "acquireTime": { "type": "string", "format": "date-time" },
                "renewTime": { "type": "string", "format": "date-time" },
                "leaseTransitions": { "type": "integer", "format": "int32" },
                "preferredHolder": { "type": "string" },
                "strategy": { "type": "string" },
            },
        }),
        ObjectKind::AkkaLease => json!({
            "type": "object",
            "properties": {
                "owner": { "type": "string" },
                "version": { "type": "string" },
                "time": { "type": "integer", "format": "int64" },
            },
        }),
    };
    json!({
        "type": "object",
        "properties": {
            "apiVersion": { "type": "string" },
            "kind": { "type": "string" },
            "metadata": { "type": "object" },
            "spec": spec,
        },
        "x-kubernetes-group-version-kind": [{ "group": kind.group(), "version": "v1", "kind": kind.kind_name() }],
    })
}

fn definition_name(kind: ObjectKind) -> String {
    match kind {
        ObjectKind::CoordinationLease => "io.k8s.api.coordination.v1.Lease".to_string(),
        ObjectKind::AkkaLease => "io.akka.v1.Lease".to_string(),
    }
}

/// `GET /openapi/v3`: the index of per-group documents.
pub async fn openapi_v3_index() -> Json<Value> {
    let mut paths = serde_json::Map::new();
    for kind in ObjectKind::ALL {
        paths.insert(
            format!("apis/{}", kind.api_version()),
            json!({ "serverRelativeURL": format!("/openapi/v3/apis/{}", kind.api_version()) }),
        );
    }
    Json(json!({ "paths": paths }))
}

/// `GET /openapi/v3/apis/{group}/v1`.
pub async fn openapi_v3_group(Path(group): Path<String>) -> Response {
    let Some(kind) = kind_of_group(&group) else {
        return KubeError::no_route(&format!("/openapi/v3/apis/{group}/v1")).into_response();
    };
    let collection = format!(
        "/apis/{}/namespaces/{{namespace}}/{}",
        kind.api_version(),
        kind.plural()
    );
    let item = format!("{collection}/{{name}}");
    let reference = json!({ "$ref": format!("#/components/schemas/{}", definition_name(kind)) });
    let body = json!({ "content": { "application/json": { "schema": reference } } });
    let field_validation =
        json!({ "name": "fieldValidation", "in": "query", "schema": { "type": "string" } });
    // kubectl looks for an operation tagged with the kind that takes `fieldValidation` before it
    // relies on server-side validation.
    let gvk = json!({ "group": kind.group(), "version": "v1", "kind": kind.kind_name() });
    let patch_body = json!({ "content": {
        "application/merge-patch+json": { "schema": { "type": "object" } },
        "application/strategic-merge-patch+json": { "schema": { "type": "object" } },
    } });
    let mut schemas = serde_json::Map::new();
    schemas.insert(definition_name(kind), lease_schema(kind));
    Json(json!({
        "openapi": "3.0.0",
        "info": { "title": "Drover", "version": env!("CARGO_PKG_VERSION") },
        "paths": {
            collection: {
                "get": { "responses": { "200": { "description": "OK" } } },
                "post": {
                    "x-kubernetes-group-version-kind": gvk.clone(),
                    "parameters": [field_validation.clone()], "requestBody": body.clone(), "responses": { "201": body.clone() },
                },
            },
            item: {
                "get": { "responses": { "200": body.clone() } },
                "put": {
                    "x-kubernetes-group-version-kind": gvk.clone(),
                    "parameters": [field_validation.clone()], "requestBody": body.clone(), "responses": { "200": body.clone() },
                },
                "patch": {
                    "x-kubernetes-group-version-kind": gvk,
                    "parameters": [field_validation], "requestBody": patch_body, "responses": { "200": body.clone() },
                },
                "delete": { "responses": { "200": { "description": "OK" } } },
            },
        },
        "components": { "schemas": schemas },
    }))
    .into_response()
}
