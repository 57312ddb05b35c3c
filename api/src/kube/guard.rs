//! The Kubernetes-style dialect's guard: lease objects in a namespace need a credential allowed
//! there ([`crate::guard`]); refusals are Kubernetes `Status` objects.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::status::KubeError;
use crate::core::Core;
use crate::guard::{check, Denied, Need};

/// The namespace a Kubernetes-style path names: `Some(Some(ns))` under `/namespaces/{ns}`,
/// `Some(None)` for a list across namespaces, `None` for discovery documents.
fn kube_scope(path: &str) -> Option<Option<&str>> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segments.as_slice() {
        ["apis", _, _, "namespaces", namespace, ..] => Some(Some(namespace)),
        ["apis", _, _, _plural] => Some(None),
        _ => None,
    }
}

/// Guards the Kubernetes-style lease routes; refusals are Kubernetes `Status` objects.
pub async fn guard(State(state): State<Core>, request: Request, next: Next) -> Response {
    let path = request.uri().path().to_string();
    let need = match kube_scope(&path) {
        Some(namespace) => Need::Namespace(namespace),
        None => Need::Authenticated,
    };
    match check(&state, &request, need) {
        Ok(principal) => crate::audit::scoped(principal, next.run(request)).await,
        Err(Denied::Unauthenticated(e)) => KubeError::unauthorized(e.to_string()).into_response(),
        Err(Denied::Forbidden(message)) => KubeError::forbidden(message).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_paths_name_their_namespace() {
        let ns = "/apis/coordination.k8s.io/v1/namespaces/shop/leases/x";
        assert_eq!(kube_scope(ns), Some(Some("shop")));
        assert_eq!(
            kube_scope("/apis/akka.io/v1/namespaces/shop/leases"),
            Some(Some("shop"))
        );
        assert_eq!(kube_scope("/apis/coordination.k8s.io/v1/leases"), Some(None));
        assert_eq!(kube_scope("/apis/coordination.k8s.io/v1"), None);
        assert_eq!(kube_scope("/version"), None);
        assert_eq!(kube_scope("/openapi/v3/apis/coordination.k8s.io/v1"), None);
    }
}
