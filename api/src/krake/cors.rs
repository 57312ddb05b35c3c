//! Cross-origin requests to Krake's routes, as Krake's server answers them (`aiohttp_cors` with
//! credentials allowed, any request header, the methods `DELETE`, `GET`, `OPTIONS`, `POST`,
//! `PUT`), for the origins the operator allows (`--krake-cors-origin`, `*` for any): a
//! preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) is answered `200`
//! with `Access-Control-Allow-Origin` (the request's origin), `-Credentials: true`, `-Methods`
//! (the method asked for) and `-Headers` (those asked for), or `403` with Krake's words; every
//! other request from an allowed origin gets `Access-Control-Allow-Origin` and
//! `-Credentials`. With no origin allowed (the default; Krake's is `*`) nothing changes:
//! browsers refuse cross-origin reads.

use axum::extract::{Request, State};
use axum::http::header::{
    ACCESS_CONTROL_ALLOW_CREDENTIALS, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS,
    ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_REQUEST_HEADERS, ACCESS_CONTROL_REQUEST_METHOD, ORIGIN,
};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::context::KrakeState;

/// The methods a preflight may ask for, as Krake allows them.
const METHODS: [&str; 5] = ["DELETE", "GET", "OPTIONS", "POST", "PUT"];

/// Whether `origin` is one of `allowed` (or `allowed` holds `*`).
fn allowed(allowed: &[String], origin: &str) -> bool {
    allowed.iter().any(|a| a == "*" || a == origin)
}

/// The answer to a preflight from `origin`: the headers to send, or why it is refused.
fn preflight(
    origins: &[String],
    origin: &str,
    headers: &HeaderMap,
) -> Result<Vec<(axum::http::HeaderName, String)>, String> {
    let method = headers
        .get(ACCESS_CONTROL_REQUEST_METHOD)
        .and_then(|m| m.to_str().ok())
        .ok_or("CORS preflight request failed: 'Access-Control-Request-Method' header is not specified")?;
    if !METHODS.contains(&method) {
        return Err(format!(
            "CORS preflight request failed: request method '{method}' is not allowed for '{origin}' origin"
        ));
    }
    if !allowed(origins, origin) {
        return Err(format!(
            "CORS preflight request failed: origin '{origin}' is not allowed"
        ));
    }
    let mut answer = vec![
        (ACCESS_CONTROL_ALLOW_ORIGIN, origin.to_string()),
        (ACCESS_CONTROL_ALLOW_CREDENTIALS, "true".to_string()),
        (ACCESS_CONTROL_ALLOW_METHODS, method.to_string()),
    ];
    let asked: Vec<String> = headers
        .get(ACCESS_CONTROL_REQUEST_HEADERS)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .split(',')
        .map(|h| h.trim().to_ascii_uppercase())
        .filter(|h| !h.is_empty())
        .collect();
    if !asked.is_empty() {
        answer.push((ACCESS_CONTROL_ALLOW_HEADERS, asked.join(",")));
    }
    Ok(answer)
}

/// The layer over Krake's routes (see the module).
pub async fn cors(State(state): State<KrakeState>, request: Request, next: Next) -> Response {
    let origins = &state.options.cors_origins;
    if origins.is_empty() {
        return next.run(request).await;
    }
    let origin = request
        .headers()
        .get(ORIGIN)
        .and_then(|o| o.to_str().ok())
        .map(str::to_string);
    if request.method() == Method::OPTIONS {
        let Some(origin) = origin else {
            return (
                StatusCode::FORBIDDEN,
                "CORS preflight request failed: origin header is not specified in the request",
            )
                .into_response();
        };
        return match preflight(origins, &origin, request.headers()) {
            Ok(headers) => with_headers(StatusCode::OK.into_response(), headers),
            Err(why) => (StatusCode::FORBIDDEN, why).into_response(),
        };
    }
    let response = next.run(request).await;
    match origin {
        Some(origin) if allowed(origins, &origin) => with_headers(
            response,
            vec![
                (ACCESS_CONTROL_ALLOW_ORIGIN, origin),
                (ACCESS_CONTROL_ALLOW_CREDENTIALS, "true".to_string()),
            ],
        ),
        _ => response,
    }
}

fn with_headers(mut response: Response, headers: Vec<(axum::http::HeaderName, String)>) -> Response {
    for (name, value) in headers {
        // A value that is no header value (an origin sent with bytes a header cannot hold
        // would not have been read) is left out.
        if let Ok(value) = HeaderValue::from_str(&value) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(method: &str, headers: Option<&str>) -> HeaderMap {
        let mut map = HeaderMap::new();
        map.insert(
            ACCESS_CONTROL_REQUEST_METHOD,
            HeaderValue::from_str(method).expect("value"),
        );
        if let Some(headers) = headers {
            map.insert(
                ACCESS_CONTROL_REQUEST_HEADERS,
                HeaderValue::from_str(headers).expect("value"),
            );
        }
        map
    }

    #[test]
    fn a_preflight_is_answered_for_allowed_origins_and_methods_only() {
        let origins = vec!["https://ui.example".to_string()];
        let answer = preflight(
            &origins,
            "https://ui.example",
            &asked("PUT", Some("authorization, content-type")),
        )
        .expect("allowed");
        let value = |name| answer.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str());
        assert_eq!(value(ACCESS_CONTROL_ALLOW_ORIGIN), Some("https://ui.example"));
        assert_eq!(value(ACCESS_CONTROL_ALLOW_CREDENTIALS), Some("true"));
        assert_eq!(value(ACCESS_CONTROL_ALLOW_METHODS), Some("PUT"));
        assert_eq!(
            value(ACCESS_CONTROL_ALLOW_HEADERS),
            Some("AUTHORIZATION,CONTENT-TYPE")
        );
        let refused = preflight(&origins, "https://evil.example", &asked("GET", None)).expect_err("refused");
        assert!(
            refused.contains("origin 'https://evil.example' is not allowed"),
            "{refused}"
        );
        let refused = preflight(&origins, "https://ui.example", &asked("PATCH", None)).expect_err("refused");
        assert!(
            refused.contains("request method 'PATCH' is not allowed"),
            "{refused}"
        );
        let any = vec!["*".to_string()];
        assert!(preflight(&any, "http://anything", &asked("DELETE", None)).is_ok());
        assert!(preflight(&any, "http://anything", &HeaderMap::new()).is_err());
    }
}
