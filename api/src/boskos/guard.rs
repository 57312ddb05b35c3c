//! The Boskos dialect's guard (and the pool administration's): any valid credential may use the
//! pools, writing their configuration needs an operator ([`crate::guard`]).

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{BoskosError, BoskosState};
use crate::guard::{check, Denied, Need};

/// Guards the Boskos and pool routes; writing the pool configuration needs an operator.
/// Refusals are plain text, as the Boskos server writes errors.
pub async fn guard(State(state): State<BoskosState>, request: Request, next: Next) -> Response {
    let need = if request.uri().path() == "/pools/config" && request.method() != Method::GET {
        Need::Operator
    } else {
        Need::Authenticated
    };
    match check(&state, &request, need) {
        Ok(principal) => crate::audit::scoped(principal, next.run(request)).await,
        // Not 401: the Boskos Go client reads 401 as "owned by someone else" and polls forever.
        // 403 is an error it reports, so a missing or wrong password fails fast.
        Err(Denied::Unauthenticated(e)) => BoskosError::new(
            StatusCode::FORBIDDEN,
            format!("{e} (Boskos clients send the token as their password, HTTP Basic)"),
        )
        .into_response(),
        Err(Denied::Forbidden(message)) => BoskosError::new(StatusCode::FORBIDDEN, message).into_response(),
    }
}
