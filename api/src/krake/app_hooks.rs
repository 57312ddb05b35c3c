//! An Application's hooks through the API (`krake.md` §6.7): the tokens a write issues (the
//! apply keeps the first ones a hook got), and the calls its instances make — `PUT …/complete`
//! and `PUT …/shutdown` with `{"token"}`, where the token is the credential (as Krake's hook
//! users' certificates are, an instance needs no other), and `PUT …/retry`, which a user makes
//! and Krake's RBAC allows as `applications/status:update`.

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use drover_model::krake::application::IssuedHooks;
use drover_model::krake::rbac::Scope;
use drover_model::krake::{HookCall, KrakeBody, KrakeChange, KrakeKey, Verb};
use serde_json::Value;
use uuid::Uuid;

use super::answer::{body_json, json_response, propose, shown};
use super::context::KrakeState;
use super::guard::{allow, authenticate, Caller};
use super::problem::Problem;
use crate::guard::Credentials;

/// Longest token a hook call may present (issued ones are 64 characters).
const MAX_TOKEN_LEN: usize = 256;

/// A new hook token: 244 random bits, URL-safe.
fn token() -> String {
    format!("{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple())
}

/// Gives an Application's write the tokens and endpoint its hooks would need.
pub fn issue(state: &KrakeState, body: &mut KrakeBody) {
    if let KrakeBody::Application(app) = body {
        app.issued = Some(IssuedHooks {
            endpoint: state.options.hook_endpoint.clone(),
            complete_token: token(),
            shutdown_token: token(),
        });
    }
}

/// The hook user Krake names a hook's caller.
fn hook_user(hook: &str) -> Caller {
    let user = format!("system:{hook}-hook");
    Caller {
        principal: user.clone(),
        user,
        operator: false,
    }
}

/// `PUT …/applications/{name}/{complete|shutdown|retry}`.
pub async fn call(
    state: KrakeState,
    credentials: Credentials,
    key: KrakeKey,
    hook: &str,
    body: Body,
) -> Result<Response, Problem> {
    let value = body_json(&state, body).await;
    let (caller, call) = match hook {
        "retry" => {
            let caller = authenticate(&state, &credentials)?;
            let scope = match key.namespace.as_deref() {
                Some(ns) => Scope::Namespace(ns),
                None => Scope::Global,
            };
            allow(
                &state,
                &caller,
                "kubernetes",
                "applications/status",
                Verb::Update,
                scope,
            )?;
            (caller, HookCall::Retry)
        }
        "complete" | "shutdown" => {
            let value = value?;
            let token = match value.get("token") {
                // No token issued is this long: refused without a write.
                Some(Value::String(token)) if token.len() > MAX_TOKEN_LEN => {
                    return Err(Problem::plain(
                        StatusCode::UNAUTHORIZED,
                        "401: No token has been provided or the provided one is invalid.",
                    ))
                }
                Some(Value::String(token)) => token.clone(),
                // As Krake: no token matches none issued, so the call is `401` (or `404` when
                // there is no such application), not a refusal of the body.
                Some(Value::Null) | None => String::new(),
                Some(_) => return Err(Problem::invalid("token", "Not a valid string.")),
            };
            let call = if hook == "complete" {
                HookCall::Complete { token }
            } else {
                HookCall::Shutdown { token }
            };
            (hook_user(hook), call)
        }
        _ => return Err(Problem::http(StatusCode::NOT_FOUND)),
    };
    let stored = propose(&state, &caller, key, KrakeChange::Hook { call }).await?;
    Ok(json_response(StatusCode::OK, &shown(&state, &stored)))
}
