//! Krake's REST API (release 1.0.1, https://gitlab.com/rak-n-rok/krake; docs/KRAKE.md) as a
//! dialect of Drover: its `core` group (roles
//! and their bindings, metrics and metrics providers, global and namespaced) and its
//! `kubernetes` group's Clusters (each a Drover cluster run by a `drover agent`), over the
//! same replicated state as the other dialects — a Krake namespace is a tenant, Krake's global
//! metrics and providers are the operator tenant's. Krake's envelope and metadata, its
//! operation semantics, its problem documents, `?watch` streams, `GET /` and `GET /me`, its
//! authentication and RBAC. `docs/KRAKE.md` lists the routes and every difference.

pub mod answer;
pub mod app_hooks;
pub mod app_wire;
pub mod cluster_checks;
pub mod cluster_wire;
pub mod context;
pub mod cors;
pub mod digest;
pub mod fields;
pub mod guard;
pub mod infra_wire;
pub mod journal;
pub mod objects;
pub mod problem;
pub mod root;
pub mod watch;
pub mod wire;

use axum::http::StatusCode;
use axum::routing::{get, put};
use axum::Router;

pub use context::{KrakeOptions, KrakeState};
use problem::Problem;

/// The groups served, each under its own path prefix.
pub const GROUPS: [&str; 3] = ["core", "kubernetes", "infrastructure"];

/// The Krake routes.
pub fn routes() -> Router<KrakeState> {
    let mut router = Router::new()
        .route("/", get(root::index))
        .route("/me", get(root::me));
    for group in GROUPS {
        router = router
            .route(
                &format!("/{group}/{{plural}}"),
                get(objects::list_plain).post(objects::create_global),
            )
            .route(
                &format!("/{group}/{{plural}}/{{name}}"),
                get(objects::get_one)
                    .put(objects::update_one)
                    .delete(objects::delete_one),
            )
            .route(
                &format!("/{group}/{{plural}}/{{name}}/{{subresource}}"),
                put(objects::subresource),
            )
            .route(
                &format!("/{group}/namespaces/{{namespace}}/{{plural}}"),
                get(objects::list_namespaced).post(objects::create_namespaced),
            )
            .route(
                &format!("/{group}/namespaces/{{namespace}}/{{plural}}/{{name}}"),
                get(objects::get_one)
                    .put(objects::update_one)
                    .delete(objects::delete_one),
            )
            .route(
                &format!("/{group}/namespaces/{{namespace}}/{{plural}}/{{name}}/{{subresource}}"),
                put(objects::subresource),
            );
    }
    router.method_not_allowed_fallback(|| async { Problem::http(StatusCode::METHOD_NOT_ALLOWED) })
}
