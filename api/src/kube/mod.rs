//! The Kubernetes dialect: `coordination.k8s.io/v1` and `akka.io/v1` leases with
//! `resourceVersion` compare-and-set, Kubernetes `Status` errors, watches, and the discovery
//! documents existing clients (kubectl, client-go, the Python client, Akka) read first.

pub mod discovery;
pub mod guard;
pub mod objects;
pub mod patch;
pub mod selector;
pub mod status;
pub mod watch;
pub mod wire;

use axum::routing::get;
use axum::Router;

use self::objects::{create, get_one, list_all_namespaces, list_or_watch, remove, replace};
use crate::core::Core;

pub use self::objects::{kind_of_group, CONSISTENCY_HEADER};
pub use crate::idempotency::IDEMPOTENCY_HEADER;

/// Routes of the Kubernetes dialect.
pub fn routes() -> Router<Core> {
    Router::new()
        .route("/version", get(discovery::version))
        .route("/api", get(discovery::core_versions))
        .route("/api/v1", get(discovery::core_resources))
        .route("/apis", get(discovery::groups))
        .route("/apis/{group}", get(discovery::group))
        .route("/apis/{group}/v1", get(discovery::resources))
        .route("/openapi/v3", get(discovery::openapi_v3_index))
        .route("/openapi/v3/apis/{group}/v1", get(discovery::openapi_v3_group))
        .route("/apis/{group}/v1/{plural}", get(list_all_namespaces))
        .route(
            "/apis/{group}/v1/namespaces/{namespace}/{plural}",
            get(list_or_watch).post(create),
        )
        .route(
            "/apis/{group}/v1/namespaces/{namespace}/{plural}/{name}",
            get(get_one).put(replace).patch(patch::patch).delete(remove),
        )
}
