//! The web console at `/ui/`: four files compiled into the binary (a page, a script, a
//! stylesheet, an icon — the browser asks the site's `/favicon.ico` otherwise, a `404` in its
//! log; nothing fetched from elsewhere) that call this node's API with the caller's own
//! token. Every answer under `/ui` — the files, the redirect, a `404` of a file the console does
//! not have, a `405` — carries a Content-Security-Policy that lets the page load only its own
//! script and stylesheet and talk only to its own origin (no inline script or style, no framing,
//! no other host), and the other security headers.

use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::map_response;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;

const INDEX: &str = include_str!("../ui/index.html");
const SCRIPT: &str = include_str!("../ui/app.js");
const STYLE: &str = include_str!("../ui/app.css");
const ICON: &str = include_str!("../ui/favicon.svg");

const HTML: &str = "text/html; charset=utf-8";

/// The console's Content-Security-Policy.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
     connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The console's routes (no state: what it shows comes from the API). `/ui/index.html` is the
/// page too, as a static server would answer it.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/ui", get(|| async { Redirect::permanent("/ui/") }))
        .route("/ui/", get(|| async { asset(HTML, INDEX) }))
        .route("/ui/index.html", get(|| async { asset(HTML, INDEX) }))
        .route(
            "/ui/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/ui/app.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
        .route("/ui/favicon.svg", get(|| async { asset("image/svg+xml", ICON) }))
        .route(
            "/ui/{*rest}",
            get(|| async { (StatusCode::NOT_FOUND, "no such file of the console") }),
        )
        // Its own, so that it is layered too: the API's router gives a default one to every
        // route that has none, after this layer.
        .method_not_allowed_fallback(|| async {
            (
                StatusCode::METHOD_NOT_ALLOWED,
                "the console's files are read with GET",
            )
        })
        .layer(map_response(secured))
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// The security headers, on every answer of the console's routes whatever its status.
async fn secured(mut response: Response) -> Response {
    let headers = response.headers_mut();
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
    use axum::body::Body;
    use axum::http::{Method, Request};
    use tower::ServiceExt;

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

    async fn answer(method: Method, path: &str) -> Response {
        let request = Request::builder().method(method).uri(path).body(Body::empty());
        match request {
            Ok(request) => match routes::<()>().oneshot(request).await {
                Ok(response) => response,
                Err(never) => match never {},
            },
            Err(error) => panic!("{path}: {error}"),
        }
    }

    #[tokio::test]
    async fn every_answer_under_ui_carries_the_security_headers() {
        for (method, path, status) in [
            (Method::GET, "/ui", StatusCode::PERMANENT_REDIRECT),
            (Method::GET, "/ui/", StatusCode::OK),
            (Method::GET, "/ui/index.html", StatusCode::OK),
            (Method::GET, "/ui/app.js", StatusCode::OK),
            (Method::GET, "/ui/app.css", StatusCode::OK),
            (Method::GET, "/ui/favicon.svg", StatusCode::OK),
            (Method::GET, "/ui/no-such-file", StatusCode::NOT_FOUND),
            (Method::GET, "/ui/a/b/c", StatusCode::NOT_FOUND),
            (Method::POST, "/ui/", StatusCode::METHOD_NOT_ALLOWED),
        ] {
            let response = answer(method.clone(), path).await;
            assert_eq!(response.status(), status, "{method} {path}");
            let headers = response.headers();
            for (name, value) in [
                (header::CONTENT_SECURITY_POLICY, CSP),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                (header::X_FRAME_OPTIONS, "DENY"),
                (header::REFERRER_POLICY, "no-referrer"),
            ] {
                assert_eq!(
                    headers.get(&name).and_then(|v| v.to_str().ok()),
                    Some(value),
                    "{method} {path}: {name}"
                );
            }
        }
        let index = answer(Method::GET, "/ui/index.html").await;
        assert_eq!(
            index
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok()),
            Some(HTML)
        );
    }
}
