//! The OpenAPI document of the platform API: the generated paths plus what every operation
//! shares (bearer authentication and the error answers with their `{code, content}` body).

use utoipa::openapi::path::Operation;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, ResponseBuilder};
use utoipa::{OpenApi as _, PartialSchema, ToSchema};

use super::platform_info::API_VERSION;
use super::reply::{ErrorBody, ErrorContent};

#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "Drover platform API (Axebow 1.0-beta)",
        description = "Users, tenants and roles, accounts, environments and Kumori resources. \
            Successful answers are `{data, events}`; errors are `{code, content}`. Every call but \
            `GET /api/1.0-beta/platform` needs `Authorization: Bearer <token>`."
    ),
    components(schemas(ErrorBody, ErrorContent))
)]
struct ApiDoc;

const BEARER: &str = "bearer";

/// The document before the paths are added.
pub fn base() -> OpenApi {
    let mut api = ApiDoc::openapi();
    api.info.version = API_VERSION.to_string();
    api
}

/// The error answers an authenticated operation may give.
const ERRORS: [(&str, &str); 10] = [
    (
        "400",
        "The request is malformed; `content.field` names what to fix",
    ),
    ("401", "No credential, or one that was refused"),
    ("403", "The caller may not do this"),
    ("404", "No such object"),
    ("409", "The request conflicts with the current state"),
    ("413", "The body is larger than the limit"),
    ("415", "The body is not JSON"),
    ("429", "Too many requests from this caller"),
    ("503", "No leader is available now"),
    ("504", "The write was not confirmed in time"),
];

fn add_errors(operation: &mut Operation) {
    for (status, description) in ERRORS {
        let content = ContentBuilder::new()
            .schema(Some(Ref::from_schema_name(ErrorBody::name())))
            .build();
        let response = ResponseBuilder::new()
            .description(description)
            .content("application/json", content)
            .build();
        operation
            .responses
            .responses
            .entry(status.to_string())
            .or_insert(response.into());
    }
}

/// Adds bearer authentication and the error answers to every operation that needs a
/// credential (operations marked `security(())` answer anyone).
pub fn finish(mut api: OpenApi) -> OpenApi {
    let components = api.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        BEARER,
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .bearer_format("JWT")
                .build(),
        ),
    );
    components
        .schemas
        .entry(ErrorBody::name().into_owned())
        .or_insert_with(ErrorBody::schema);
    for item in api.paths.paths.values_mut() {
        let operations = [
            &mut item.get,
            &mut item.post,
            &mut item.put,
            &mut item.patch,
            &mut item.delete,
        ];
        for operation in operations.into_iter().flatten() {
            let public = operation.security.as_ref().is_some_and(|s| !s.is_empty());
            if public {
                continue;
            }
            operation.security = Some(vec![SecurityRequirement::new(BEARER, Vec::<String>::new())]);
            add_errors(operation);
        }
    }
    api
}
