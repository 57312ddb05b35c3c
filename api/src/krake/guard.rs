//! Who calls the Krake dialect and what they may do (`krake.md` §7). A request is
//! authenticated by Drover's verifier (a token in `Authorization`, bare as Krake's Keystone
//! strategy sends it or as `Bearer`, or the client certificate the node verified: its CN is the
//! user), else by Krake's static strategy when the node names a static user, else as
//! `system:anonymous` when anonymous access is on; otherwise `401`. An operator (a static token
//! of group `operators`, a member of the operator tenant) may do everything, as in every
//! dialect, and so may anyone on a node that runs open (as the static user, when one is named);
//! everyone else gets what the roles bound to them allow (RBAC), or `403`.

use axum::http::StatusCode;
use drover_model::audit::principal_of;
use drover_model::krake::rbac::{Access, Scope};
use drover_model::krake::Verb;

use super::context::KrakeState;
use super::problem::{python_str, Problem};
use crate::guard::{authorize, Credentials, Need};

/// The user of requests that carry no credential, when anonymous access is on.
pub const ANONYMOUS_USER: &str = "system:anonymous";

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The Krake user name: the credential's subject.
    pub user: String,
    /// Allowed everything.
    pub operator: bool,
    /// For the audit log.
    pub principal: String,
}

/// Authenticates a request.
pub fn authenticate(state: &KrakeState, credentials: &Credentials) -> Result<Caller, Problem> {
    if state.verifier.is_open() {
        let user = state.options.static_user.clone();
        return Ok(Caller {
            user: user.unwrap_or_else(|| ANONYMOUS_USER.to_string()),
            operator: true,
            principal: crate::guard::ANONYMOUS.to_string(),
        });
    }
    match crate::guard::verified(&state.core, credentials) {
        Ok(Some(verified)) => {
            let operator = authorize(&state.core, &verified, Need::Operator).is_ok();
            Ok(Caller {
                user: verified.identity.subject.clone(),
                operator,
                principal: principal_of(&verified.identity),
            })
        }
        Ok(None) => match (&state.options.static_user, state.options.allow_anonymous) {
            (Some(user), _) => Ok(Caller {
                user: user.clone(),
                operator: false,
                principal: format!("krake-static:{user}"),
            }),
            (None, true) => Ok(Caller {
                user: ANONYMOUS_USER.to_string(),
                operator: false,
                principal: ANONYMOUS_USER.to_string(),
            }),
            (None, false) => Err(Problem::plain(
                StatusCode::UNAUTHORIZED,
                "401: No user has been authenticated.",
            )),
        },
        Err(why) => Err(Problem::plain(
            StatusCode::UNAUTHORIZED,
            format!("401: Unauthorized: {why}"),
        )),
    }
}

/// Checks that `caller` may do `verb` on `resource` of group `api` in `scope`.
pub fn allow(
    state: &KrakeState,
    caller: &Caller,
    api: &str,
    resource: &str,
    verb: Verb,
    scope: Scope<'_>,
) -> Result<(), Problem> {
    if caller.operator {
        return Ok(());
    }
    let access = Access {
        api,
        resource,
        verb,
        scope,
    };
    if state.raft.local_read(|s| s.krake().allows(&caller.user, &access)) {
        return Ok(());
    }
    let place = match scope {
        Scope::Global => String::new(),
        Scope::Namespace(ns) => format!(" in namespace {}", python_str(ns)),
        Scope::AllNamespaces => " in every namespace".to_string(),
    };
    let verb = serde_json::to_value(verb)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    Err(Problem::plain(
        StatusCode::FORBIDDEN,
        format!(
            "403: Forbidden: no role bound to user {} allows {verb} of {api}/{resource}{place}",
            python_str(&caller.user)
        ),
    ))
}
