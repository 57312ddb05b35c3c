//! The web console at `/ui/`: three files compiled into the binary (a page, a script, a
//! stylesheet; nothing fetched from elsewhere) that call this node's API with the caller's own
//! token. The page is served with a Content-Security-Policy that lets it load only its own
//! script and stylesheet and talk only to its own origin: no inline script or style, no
//! framing, no other host.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;

const INDEX: &str = include_str!("../ui/index.html");
const SCRIPT: &str = include_str!("../ui/app.js");
const STYLE: &str = include_str!("../ui/app.css");

/// The console's Content-Security-Policy.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
     connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The console's routes (no state: what it shows comes from the API).
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/ui", get(|| async { Redirect::permanent("/ui/") }))
        .route("/ui/", get(|| async { asset("text/html; charset=utf-8", INDEX) }))
        .route(
            "/ui/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/ui/app.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
        .route(
            "/ui/{*rest}",
            get(|| async { (StatusCode::NOT_FOUND, "no such file of the console") }),
        )
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_loads_only_its_own_files_and_never_parses_values_as_html() {
        assert!(INDEX.contains(r#"<script src="/ui/app.js" defer></script>"#));
        assert!(
            !INDEX.contains("<script>"),
            "no inline script: the policy forbids it"
        );
        assert!(
            !INDEX.contains("style="),
            "no inline style: the policy forbids it"
        );
        for forbidden in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
            "localStorage",
        ] {
            assert!(!SCRIPT.contains(forbidden), "the script uses {forbidden}");
        }
        assert!(!CSP.contains("unsafe"), "{CSP}");
    }
}
