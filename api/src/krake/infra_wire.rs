//! Krake's infrastructure providers and clouds on the wire (`krake.md` §3.3): their specs as
//! Krake writes them, every password and token shown as [`REDACTED_SECRET`] (sending that back
//! keeps the stored one); a cloud's status from its metric references as Drover resolves them
//! (`FAILING_METRICS` with Krake's reason for a metric or provider that does not exist,
//! `ONLINE` otherwise — Drover creates no clusters on clouds and reads no cloud's metric
//! values). Reading a body: Krake's required fields and types.

use drover_model::krake::infrastructure::{ImProvider, OpenstackCloud, ProviderRef, REDACTED_SECRET};
use drover_model::krake::KrakeKey;
use drover_model::State;
use serde_json::{json, Map, Value};

use super::fields::{field, metric_refs, required};
use super::problem::Problem;

fn secret(value: &Option<String>) -> Value {
    match value {
        Some(_) => json!(REDACTED_SECRET),
        None => Value::Null,
    }
}

/// A provider's spec as Krake shows it.
pub fn provider_spec(provider: &ImProvider) -> Value {
    json!({"type": "im", "im": {
        "url": provider.url,
        "username": provider.username,
        "password": secret(&provider.password),
        "token": secret(&provider.token),
    }})
}

/// A cloud's spec as Krake shows it.
pub fn cloud_spec(cloud: &OpenstackCloud) -> Value {
    json!({"type": "openstack", "openstack": {
        "url": cloud.url,
        "auth": {"type": "password", "password": {
            "version": cloud.version,
            "user": {"username": cloud.username, "password": REDACTED_SECRET,
                     "domain_name": cloud.domain_name, "comment": cloud.user_comment},
            "project": {"name": cloud.project, "domain_id": cloud.project_domain_id,
                        "comment": cloud.project_comment},
        }},
        "metrics": cloud.metrics,
        "infrastructure_provider": {"name": cloud.infrastructure_provider.name,
                                    "namespaced": cloud.infrastructure_provider.namespaced},
    }})
}

/// A cloud's status: its metric references resolved in its tenant.
pub fn cloud_status(state: &State, key: &KrakeKey, cloud: &OpenstackCloud) -> Value {
    let reasons: Map<String, Value> = cloud
        .metrics
        .iter()
        .filter_map(|metric| {
            let failure = state
                .platform()
                .resolve_metric_of(key.tenant(), metric)
                .source
                .err()?;
            Some((
                metric.name.clone(),
                json!({"code": super::cluster_wire::metric_reason_code(failure.reason), "message": failure.message}),
            ))
        })
        .collect();
    let state = if reasons.is_empty() {
        "ONLINE"
    } else {
        "FAILING_METRICS"
    };
    json!({"state": state, "metrics_reasons": reasons})
}

fn object<'a>(value: Option<&'a Value>, path: &str) -> Result<&'a Map<String, Value>, Problem> {
    match value {
        Some(Value::Object(map)) => Ok(map),
        None | Some(Value::Null) => Err(Problem::invalid(path, "Missing data for required field.")),
        Some(_) => Err(Problem::invalid(
            &format!("{path}._schema"),
            "Invalid input type.",
        )),
    }
}

/// The polymorphic `{type, <type>: {…}}` of a spec, checked to be of `expected` type.
fn typed<'a>(spec: Option<&'a Value>, expected: &str) -> Result<&'a Map<String, Value>, Problem> {
    let spec = object(spec, "spec")?;
    let kind: String = required(spec, "type", "spec")?;
    if kind != expected {
        return Err(Problem::invalid(
            "spec.type",
            &format!("Unknown type {kind:?}: Krake 1.0.1 knows {expected}."),
        ));
    }
    object(spec.get(expected), &format!("spec.{expected}"))
}

/// Reads an infrastructure provider's spec.
pub fn parse_provider(spec: Option<&Value>) -> Result<ImProvider, Problem> {
    let im = typed(spec, "im")?;
    Ok(ImProvider {
        url: required(im, "url", "spec.im")?,
        username: field(im, "username", "spec.im")?,
        password: field(im, "password", "spec.im")?,
        token: field(im, "token", "spec.im")?,
    })
}

/// Reads a cloud's spec.
pub fn parse_cloud(spec: Option<&Value>) -> Result<OpenstackCloud, Problem> {
    let openstack = typed(spec, "openstack")?;
    let path = "spec.openstack";
    let auth = object(openstack.get("auth"), &format!("{path}.auth"))?;
    let method: String = required(auth, "type", &format!("{path}.auth"))?;
    if method != "password" {
        return Err(Problem::invalid(
            &format!("{path}.auth.type"),
            &format!("Unknown type {method:?}: Krake 1.0.1 knows password."),
        ));
    }
    let password_path = format!("{path}.auth.password");
    let password = object(auth.get("password"), &password_path)?;
    let user_path = format!("{password_path}.user");
    let user = object(password.get("user"), &user_path)?;
    let project_path = format!("{password_path}.project");
    let project = object(password.get("project"), &project_path)?;
    let provider = object(
        openstack.get("infrastructure_provider"),
        &format!("{path}.infrastructure_provider"),
    )?;
    let metrics = metric_refs(openstack, path)?;
    Ok(OpenstackCloud {
        url: required(openstack, "url", path)?,
        version: field(password, "version", &password_path)?.unwrap_or_else(|| "3".to_string()),
        username: required(user, "username", &user_path)?,
        password: required(user, "password", &user_path)?,
        domain_name: field(user, "domain_name", &user_path)?.unwrap_or_else(|| "Default".to_string()),
        user_comment: field(user, "comment", &user_path)?,
        project: required(project, "name", &project_path)?,
        project_domain_id: field(project, "domain_id", &project_path)?
            .unwrap_or_else(|| "default".to_string()),
        project_comment: field(project, "comment", &project_path)?,
        metrics,
        infrastructure_provider: ProviderRef {
            name: required(provider, "name", &format!("{path}.infrastructure_provider"))?,
            namespaced: field(provider, "namespaced", &format!("{path}.infrastructure_provider"))?
                .unwrap_or(false),
        },
    })
}

/// Keeps the stored secrets where an update sends back what a reader was shown.
pub fn keep_secrets(incoming: &mut drover_model::krake::KrakeBody, stored: &drover_model::krake::KrakeBody) {
    use drover_model::krake::KrakeBody;
    let shown = |value: &Option<String>| value.as_deref() == Some(REDACTED_SECRET);
    match (incoming, stored) {
        (KrakeBody::InfrastructureProvider(new), KrakeBody::InfrastructureProvider(old)) => {
            if shown(&new.password) {
                new.password.clone_from(&old.password);
            }
            if shown(&new.token) {
                new.token.clone_from(&old.token);
            }
        }
        (KrakeBody::Cloud(new), KrakeBody::Cloud(old)) if new.password == REDACTED_SECRET => {
            new.password.clone_from(&old.password);
        }
        _ => {}
    }
}
