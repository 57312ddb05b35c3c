//! Settings of the platform API: trusted token issuers, static API tokens, operators, the port
//! range and IaaS providers, request size and rate limits. Flags and `DROVER_*` variables
//! override the `[platform]` table of the TOML file; several issuers are configured there as
//! `[[platform.issuers]]`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use clap::Args;
use drover_api::auth::{parse_algorithm, IssuerKey, StaticToken, Verifier};
use drover_api::axebow::rate::RateLimit;
use drover_api::axebow::PlatformOptions;
use drover_model::platform::Identity;
use serde::Deserialize;

use crate::error::NodeError;
use crate::setting::invalid;

/// Platform flags of `drover serve`.
#[derive(Debug, Clone, Default, Args)]
pub struct PlatformArgs {
    /// Issuer (`iss`) of the bearer JWTs the platform API accepts.
    #[arg(long, env = "DROVER_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,
    /// Audience (`aud`) those JWTs must name [default: drover].
    #[arg(long, env = "DROVER_JWT_AUDIENCE")]
    pub jwt_audience: Option<String>,
    /// The one signing algorithm accepted (HS256, RS256, ES256, EdDSA, …) [default: HS256].
    #[arg(long, env = "DROVER_JWT_ALGORITHM")]
    pub jwt_algorithm: Option<String>,
    /// File with the HMAC secret (HS*) or the PEM public key (RS*, PS*, ES*, EdDSA).
    #[arg(long, env = "DROVER_JWT_KEY_FILE")]
    pub jwt_key_file: Option<PathBuf>,
    /// Static API tokens for machines: lines of `token,name[,group…]` (as kube-apiserver's
    /// --token-auth-file); groups `operators`, `namespace:<ns>`, `namespace:*`; `#` starts a
    /// comment.
    #[arg(long, env = "DROVER_API_TOKENS_FILE")]
    pub api_tokens_file: Option<PathBuf>,
    /// Identities that become operators when they register, as `issuer=subject`, comma
    /// separated (static tokens: `drover-static=<name>`).
    #[arg(long, env = "DROVER_OPERATORS", value_delimiter = ',')]
    pub operators: Vec<String>,
    /// Ports tenants may register, `first-last` [default: 30000-32767].
    #[arg(long, env = "DROVER_PORT_RANGE")]
    pub port_range: Option<String>,
    /// IaaS providers accounts may name, comma separated [default: sim].
    #[arg(long, env = "DROVER_IAAS_PROVIDERS", value_delimiter = ',')]
    pub iaas_providers: Vec<String>,
    /// Name of this installation in the platform info [default: drover].
    #[arg(long, env = "DROVER_INSTANCE_NAME")]
    pub instance_name: Option<String>,
    /// Domain under which services get default names [default: drover.localhost].
    #[arg(long, env = "DROVER_REFERENCE_DOMAIN")]
    pub reference_domain: Option<String>,
    /// Requests per second one caller may make to one node's platform API [default: 50].
    #[arg(long, env = "DROVER_RATE_LIMIT")]
    pub rate_limit: Option<f64>,
    /// Requests one caller may make in a burst [default: 100].
    #[arg(long, env = "DROVER_RATE_BURST")]
    pub rate_burst: Option<u32>,
    /// Largest request body in bytes [default: 1048576].
    #[arg(long, env = "DROVER_MAX_BODY_BYTES")]
    pub max_body_bytes: Option<usize>,
    /// Clusters whose agent serves plain HTTP (`http://` endpoints) may be registered; their
    /// join token crosses the network in the clear, and their status says `plain-http`.
    /// Off: agents are reached over TLS only.
    #[arg(long, env = "DROVER_ALLOW_PLAIN_HTTP_AGENTS")]
    pub allow_plain_http_agents: bool,
}

/// One trusted issuer in the TOML file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IssuerFile {
    issuer: String,
    #[serde(default)]
    audience: Option<String>,
    #[serde(default)]
    algorithm: Option<String>,
    key_file: PathBuf,
}

/// The `[platform]` table of the TOML file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlatformFile {
    #[serde(default)]
    issuers: Vec<IssuerFile>,
    api_tokens_file: Option<PathBuf>,
    #[serde(default)]
    operators: Vec<String>,
    port_range: Option<String>,
    #[serde(default)]
    iaas_providers: Vec<String>,
    instance_name: Option<String>,
    reference_domain: Option<String>,
    rate_limit: Option<f64>,
    rate_burst: Option<u32>,
    max_body_bytes: Option<usize>,
    allow_plain_http_agents: Option<bool>,
}

/// The checked platform settings.
#[derive(Debug, Clone)]
pub struct PlatformSettings {
    /// Checks bearer tokens.
    pub verifier: Verifier,
    /// Platform options.
    pub options: PlatformOptions,
    /// Largest request body.
    pub max_body_bytes: usize,
}

fn issuer_key(
    setting: &str,
    issuer: &str,
    audience: Option<&str>,
    algorithm: Option<&str>,
    key_file: &Path,
) -> Result<IssuerKey, NodeError> {
    let algorithm_name = algorithm.unwrap_or("HS256");
    let algorithm = parse_algorithm(algorithm_name).ok_or_else(|| {
        invalid(
            setting,
            format!("unknown algorithm {algorithm_name:?}; use HS256, RS256, ES256, EdDSA, …"),
        )
    })?;
    // An HMAC key signs tokens: it must be as private as the cluster secret. Public keys need not.
    if algorithm_name.starts_with("HS") {
        crate::setting::check_private(key_file, setting)?;
    }
    let key = std::fs::read(key_file)
        .map_err(|e| invalid(setting, format!("cannot read {}: {e}", key_file.display())))?;
    IssuerKey::new(issuer, audience.unwrap_or("drover"), algorithm, &key)
        .map_err(|e| invalid(setting, e.to_string()))
}

/// Reads a `token,name[,group…]` file.
fn read_tokens(path: &Path) -> Result<HashMap<String, StaticToken>, NodeError> {
    crate::setting::check_private(path, "api-tokens-file")?;
    let text = std::fs::read_to_string(path)
        .map_err(|e| invalid("api-tokens-file", format!("cannot read {}: {e}", path.display())))?;
    let mut tokens = HashMap::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split(',').map(str::trim);
        let (Some(token), Some(name)) = (fields.next(), fields.next()) else {
            return Err(invalid(
                "api-tokens-file",
                format!("line {}: expected token,name", number + 1),
            ));
        };
        if token.len() < 16 || name.is_empty() {
            return Err(invalid(
                "api-tokens-file",
                format!(
                    "line {}: the token must be at least 16 characters and the name not empty",
                    number + 1
                ),
            ));
        }
        let groups: Vec<String> = fields.filter(|g| !g.is_empty()).map(str::to_string).collect();
        if let Some(bad) = groups
            .iter()
            .find(|g| *g != "operators" && !g.starts_with("namespace:"))
        {
            return Err(invalid(
                "api-tokens-file",
                format!(
                    "line {}: unknown group {bad:?}; use operators, namespace:<ns> or namespace:*",
                    number + 1
                ),
            ));
        }
        let entry = StaticToken {
            name: name.to_string(),
            groups,
        };
        if tokens.insert(token.to_string(), entry).is_some() {
            return Err(invalid(
                "api-tokens-file",
                format!("line {}: the token appears twice", number + 1),
            ));
        }
    }
    Ok(tokens)
}

fn parse_operator(text: &str) -> Result<Identity, NodeError> {
    match text.trim().split_once('=') {
        Some((issuer, subject)) if !issuer.is_empty() && !subject.is_empty() => Ok(Identity {
            issuer: issuer.to_string(),
            subject: subject.to_string(),
        }),
        _ => Err(invalid("operators", format!("{text:?} must be issuer=subject"))),
    }
}

fn parse_port_range(text: &str) -> Result<std::ops::RangeInclusive<u16>, NodeError> {
    let parsed = text
        .split_once('-')
        .and_then(|(a, b)| Some((a.trim().parse::<u16>().ok()?, b.trim().parse::<u16>().ok()?)));
    match parsed {
        Some((first, last)) if first >= 1 && first <= last => Ok(first..=last),
        _ => Err(invalid(
            "port-range",
            format!("{text:?} must be first-last, such as 30000-32767"),
        )),
    }
}

/// Merges flags over the file and checks everything; keys are read now.
pub fn platform_settings(args: &PlatformArgs, file: PlatformFile) -> Result<PlatformSettings, NodeError> {
    let mut issuers = Vec::new();
    match (&args.jwt_issuer, &args.jwt_key_file) {
        (Some(issuer), Some(key_file)) => issuers.push(issuer_key(
            "jwt-issuer",
            issuer,
            args.jwt_audience.as_deref(),
            args.jwt_algorithm.as_deref(),
            key_file,
        )?),
        (None, None) => {}
        _ => {
            return Err(invalid(
                "jwt-issuer",
                "--jwt-issuer and --jwt-key-file go together",
            ))
        }
    }
    for entry in &file.issuers {
        issuers.push(issuer_key(
            "platform.issuers",
            &entry.issuer,
            entry.audience.as_deref(),
            entry.algorithm.as_deref(),
            &entry.key_file,
        )?);
    }
    let tokens = match args.api_tokens_file.as_ref().or(file.api_tokens_file.as_ref()) {
        Some(path) => read_tokens(path)?,
        None => HashMap::new(),
    };
    let operators = if args.operators.is_empty() {
        &file.operators
    } else {
        &args.operators
    };
    let operators = operators
        .iter()
        .map(|o| parse_operator(o))
        .collect::<Result<Vec<_>, _>>()?;
    let defaults = PlatformOptions::default();
    let port_range = match args.port_range.as_ref().or(file.port_range.as_ref()) {
        Some(text) => parse_port_range(text)?,
        None => defaults.port_range.clone(),
    };
    let iaas_providers = match (args.iaas_providers.is_empty(), file.iaas_providers.is_empty()) {
        (false, _) => args.iaas_providers.clone(),
        (true, false) => file.iaas_providers.clone(),
        (true, true) => defaults.iaas_providers.clone(),
    };
    let rate_limit = RateLimit {
        per_second: args
            .rate_limit
            .or(file.rate_limit)
            .unwrap_or(defaults.rate_limit.per_second),
        burst: args
            .rate_burst
            .or(file.rate_burst)
            .unwrap_or(defaults.rate_limit.burst),
    };
    if !(rate_limit.per_second > 0.0 && rate_limit.per_second.is_finite()) || rate_limit.burst == 0 {
        return Err(invalid(
            "rate-limit",
            "the rate and the burst must be greater than zero",
        ));
    }
    let max_body_bytes = args
        .max_body_bytes
        .or(file.max_body_bytes)
        .unwrap_or(drover_api::MAX_BODY_BYTES);
    if max_body_bytes < 1024 {
        return Err(invalid("max-body-bytes", "must be at least 1024"));
    }
    Ok(PlatformSettings {
        verifier: Verifier::new(issuers, tokens),
        options: PlatformOptions {
            instance_name: args
                .instance_name
                .clone()
                .or(file.instance_name)
                .unwrap_or(defaults.instance_name),
            reference_domain: args
                .reference_domain
                .clone()
                .or(file.reference_domain)
                .unwrap_or(defaults.reference_domain),
            port_range,
            iaas_providers,
            operators,
            rate_limit,
            allow_plain_http_agents: args.allow_plain_http_agents
                || file.allow_plain_http_agents.unwrap_or(false),
            // Set with the nodes' addresses once they are known.
            egress: Default::default(),
            image_registries: Default::default(),
            registry: None,
        },
        max_body_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_settings_are_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let tokens = dir.path().join("tokens.csv");
        std::fs::write(&tokens, "# machines\nshort,ci\n").expect("write");
        let private = |path: &Path, mode: u32| {
            std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode)).expect("chmod")
        };
        private(&tokens, 0o600);
        let args = PlatformArgs {
            api_tokens_file: Some(tokens.clone()),
            ..PlatformArgs::default()
        };
        let error = platform_settings(&args, PlatformFile::default()).expect_err("short token");
        assert!(error.to_string().contains("line 2"), "{error}");
        std::fs::write(&tokens, "0123456789abcdef0123,ci\n").expect("write");
        private(&tokens, 0o640);
        let error = platform_settings(&args, PlatformFile::default()).expect_err("readable by the group");
        assert!(error.to_string().contains("chmod 600"), "{error}");
        private(&tokens, 0o600);
        let settings = platform_settings(&args, PlatformFile::default()).expect("good tokens");
        assert_eq!(
            settings
                .verifier
                .verify("0123456789abcdef0123")
                .expect("token")
                .subject,
            "ci"
        );

        let key = dir.path().join("key");
        std::fs::write(&key, "too short").expect("write");
        private(&key, 0o600);
        let args = PlatformArgs {
            jwt_issuer: Some("dev".to_string()),
            jwt_key_file: Some(key),
            ..PlatformArgs::default()
        };
        assert!(platform_settings(&args, PlatformFile::default()).is_err());
        let args = PlatformArgs {
            operators: vec!["no-equals".to_string()],
            ..PlatformArgs::default()
        };
        assert!(platform_settings(&args, PlatformFile::default()).is_err());
        let args = PlatformArgs {
            port_range: Some("40000-30000".to_string()),
            ..PlatformArgs::default()
        };
        assert!(platform_settings(&args, PlatformFile::default()).is_err());
    }
}
