//! The Axebow platform API under `/api/1.0-beta/…`: users, tenants and members, accounts and
//! environments, Kumori resources; the `{data, events}` envelope and `{code, content}` errors;
//! bearer-token authentication and a per-caller rate limit; the OpenAPI document generated from
//! the same handler annotations that build the routes, and a browsable UI at `/docs`.

pub mod accounts;
pub mod bundle;
pub mod clusters;
pub mod context;
pub mod marketplace;
pub mod metrics;
pub mod openapi;
pub mod platform_info;
pub mod rate;
pub mod reply;
pub mod resolve;
pub mod resources;
pub mod service_bundle;
pub mod service_links;
pub mod service_metrics;
pub mod service_roles;
pub mod service_wait;
pub mod service_watch;
pub mod services;
mod store;
pub mod tenants;
pub mod users;

use axum::routing::get;
use axum::Router;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use utoipa_swagger_ui::SwaggerUi;

pub use context::{AxebowContext, AxebowState, PlatformOptions};

/// Where the generated OpenAPI document is served.
pub const OPENAPI_PATH: &str = "/api/1.0-beta/openapi.json";

/// The platform routes with their OpenAPI description, built from one list.
pub fn documented_routes() -> OpenApiRouter<AxebowState> {
    OpenApiRouter::with_openapi(openapi::base())
        .routes(routes!(platform_info::info))
        .routes(routes!(users::register, users::list, users::remove))
        .routes(routes!(users::info))
        .routes(routes!(users::add_profile))
        .routes(routes!(users::remove_profile))
        .routes(routes!(tenants::list))
        .routes(routes!(
            tenants::create,
            tenants::patch,
            tenants::delete,
            tenants::info
        ))
        .routes(routes!(tenants::set_pod_security))
        .routes(routes!(tenants::confirm, tenants::reject))
        .routes(routes!(
            tenants::invite,
            tenants::set_role,
            tenants::remove_member
        ))
        .routes(routes!(accounts::list))
        .routes(routes!(
            accounts::create,
            accounts::patch,
            accounts::get,
            accounts::delete
        ))
        .routes(routes!(accounts::list_environments))
        .routes(routes!(
            accounts::create_environment,
            accounts::patch_environment,
            accounts::get_environment,
            accounts::delete_environment
        ))
        .routes(routes!(clusters::list_all))
        .routes(routes!(clusters::list))
        .routes(routes!(
            clusters::register,
            clusters::patch,
            clusters::get,
            clusters::deregister
        ))
        .routes(routes!(clusters::drain))
        .routes(routes!(clusters::put_set, clusters::delete_set))
        .routes(routes!(clusters::inventory))
        .routes(routes!(clusters::logs))
        .routes(routes!(clusters::restart))
        .routes(routes!(clusters::environment_clusters))
        .routes(routes!(metrics::list_providers))
        .routes(routes!(
            metrics::put_provider,
            metrics::get_provider,
            metrics::delete_provider
        ))
        .routes(routes!(metrics::list_metrics))
        .routes(routes!(
            metrics::put_metric,
            metrics::get_metric,
            metrics::delete_metric
        ))
        .routes(routes!(services::list))
        .merge(services::routes())
        .routes(routes!(services::get_scale))
        .routes(routes!(services::history))
        .routes(routes!(services::placement))
        .routes(routes!(services::request))
        .routes(routes!(services::create_simple))
        .routes(routes!(services::events))
        .routes(routes!(services::update_simple))
        .routes(routes!(service_links::link, service_links::unlink))
        .routes(routes!(service_links::links))
        .routes(routes!(service_links::channels))
        .routes(routes!(service_roles::role, service_roles::restart_role))
        .routes(routes!(service_roles::restart_instance))
        .routes(routes!(service_roles::logs))
        .routes(routes!(service_roles::container_logs))
        .routes(routes!(services::decide_pending))
        .routes(routes!(services::scale))
        .routes(routes!(services::rollback))
        .routes(routes!(resources::list))
        .routes(routes!(
            resources::register,
            resources::update,
            resources::get,
            resources::unregister
        ))
        .merge(marketplace::routes())
}

/// The OpenAPI document served at [`OPENAPI_PATH`].
pub fn document() -> utoipa::openapi::OpenApi {
    let (_, api) = documented_routes().split_for_parts();
    openapi::finish(api)
}

/// The platform router: the documented routes, `/platform` without the prefix, the OpenAPI
/// document, `/docs`, and envelope-shaped `404`s for every other `/api/…` path.
pub fn routes() -> Router<AxebowState> {
    let (router, api) = documented_routes().split_for_parts();
    let api = openapi::finish(api);
    router
        .route("/platform", get(platform_info::info))
        .method_not_allowed_fallback(reply::wrong_method)
        .route("/api/{*rest}", axum::routing::any(reply::no_route))
        .merge(SwaggerUi::new("/docs").url(OPENAPI_PATH, api))
}

#[cfg(test)]
mod tests {
    /// The committed copy of the document (`docs/openapi.json`): a change to the platform API's
    /// description shows in review, and a refactoring that changes it fails here.
    const COMMITTED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/openapi.json");

    #[test]
    fn the_openapi_document_is_the_committed_one() {
        let served = serde_json::to_string_pretty(&super::document()).unwrap() + "\n";
        if std::env::var_os("DROVER_WRITE_OPENAPI").is_some() {
            std::fs::write(COMMITTED, &served).unwrap();
        }
        let committed = std::fs::read_to_string(COMMITTED).unwrap();
        assert!(
            committed == served,
            "the OpenAPI document differs from docs/openapi.json; if the change is meant, run \
             DROVER_WRITE_OPENAPI=1 cargo test -p drover-api the_openapi_document and commit it"
        );
    }
}
