//! Answers to requests no route takes, in the words of the dialect the path belongs to, never an
//! empty body: under Krake's groups (`/core`, `/kubernetes`, `/infrastructure`) a Krake problem
//! document (`404: Not Found`, `405: Method Not Allowed`, as Krake's server puts them), under
//! `/apis/` a Kubernetes `Status`, anywhere else (Boskos, k8s-claimer, operations) a line of
//! text naming the path, the method and where the routes are listed. The platform API
//! (`/api/…`) answers its own ([`crate::axebow`]).

use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

use crate::krake::problem::Problem;
use crate::krake::GROUPS;
use crate::kube::status::KubeError;

/// Whether `path` lies under one of Krake's groups.
fn krake_path(path: &str) -> bool {
    let first = path.trim_start_matches('/').split('/').next().unwrap_or_default();
    GROUPS.contains(&first)
}

/// `404` for a path no route matches.
pub async fn no_route(method: Method, uri: Uri) -> Response {
    let path = uri.path();
    if krake_path(path) {
        return Problem::http(StatusCode::NOT_FOUND).into_response();
    }
    if path.starts_with("/apis/") {
        return KubeError::no_route(path).into_response();
    }
    (
        StatusCode::NOT_FOUND,
        format!("404: no route for {method} {path} on this node; the routes are listed at /docs\n"),
    )
        .into_response()
}

/// `405` for a route that does not take the request's method.
pub async fn wrong_method(method: Method, uri: Uri) -> Response {
    let path = uri.path();
    if krake_path(path) {
        return Problem::http(StatusCode::METHOD_NOT_ALLOWED).into_response();
    }
    (
        StatusCode::METHOD_NOT_ALLOWED,
        format!("405: {path} does not take {method} (the Allow header lists what it takes; the routes are listed at /docs)\n"),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::krake_path;

    #[test]
    fn krakes_groups_are_told_by_the_first_segment() {
        assert!(krake_path("/core/namespaces/ns/metrics/x/y/z"));
        assert!(krake_path("/kubernetes/clusters"));
        assert!(krake_path("/infrastructure"));
        assert!(!krake_path("/release"));
        assert!(!krake_path("/corex/roles"));
        assert!(!krake_path("/"));
    }
}
