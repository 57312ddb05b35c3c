//! `drover token`: mints an HS256 bearer token for development, signed with the secret the
//! nodes were given in `--jwt-key-file`, so that a newcomer can call the platform API in one
//! step. Production tokens come from a real identity provider.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use drover_api::auth::mint_hs256;
use drover_model::pool::parse_duration_ms;

/// `drover token` flags.
#[derive(Debug, Clone, Args)]
pub struct TokenArgs {
    /// The subject (`sub`): who the token names.
    #[arg(long)]
    pub subject: String,
    /// The issuer (`iss`); must match the nodes' --jwt-issuer.
    #[arg(long, env = "DROVER_JWT_ISSUER")]
    pub issuer: String,
    /// The audience (`aud`); must match the nodes' --jwt-audience.
    #[arg(long, env = "DROVER_JWT_AUDIENCE", default_value = "drover")]
    pub audience: String,
    /// File with the HMAC secret the nodes were given (--jwt-key-file).
    #[arg(long, env = "DROVER_JWT_KEY_FILE")]
    pub key_file: PathBuf,
    /// How long the token is valid (Go duration: 30m, 12h).
    #[arg(long, default_value = "12h")]
    pub ttl: String,
}

/// Prints a token; the error says what to fix.
pub fn run(args: &TokenArgs) -> Result<String, String> {
    let ttl = parse_duration_ms(&args.ttl).map_err(|e| format!("--ttl: {e}"))?;
    if ttl == 0 {
        return Err("--ttl must be greater than zero".to_string());
    }
    let secret =
        std::fs::read(&args.key_file).map_err(|e| format!("cannot read {}: {e}", args.key_file.display()))?;
    mint_hs256(
        &args.issuer,
        &args.audience,
        &args.subject,
        &secret,
        Duration::from_millis(ttl),
    )
    .map_err(|e| e.to_string())
}
