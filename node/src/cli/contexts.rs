//! Client contexts, the kubeconfig idea without the YAML: `$XDG_CONFIG_HOME/drover/config.toml`
//! (`~/.config/drover/config.toml` when unset) holds named contexts — servers, a token file, a
//! CA file — and the current one. `drover config set-context|use-context|view` edit and show it;
//! `--context` (`DROVER_CONTEXT`) picks one for a command. Flags and `DROVER_*` variables win
//! over the context, the context over the built-in defaults. Tokens are never stored in it, only
//! the path of a file that holds one.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context as _, Result};
use clap::{Args, Subcommand};
use serde::{Deserialize, Serialize};

/// One context.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientContext {
    /// API URLs, comma separated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// File holding the bearer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// CA certificate(s) for `https://` servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cacert: Option<PathBuf>,
    /// Client certificate (PEM) presented to `https://` servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert: Option<PathBuf>,
    /// Its private key (PEM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<PathBuf>,
}

/// The file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientConfig {
    /// The context used when none is named.
    #[serde(default, rename = "current-context", skip_serializing_if = "Option::is_none")]
    pub current_context: Option<String>,
    /// Contexts by name.
    #[serde(default)]
    pub contexts: BTreeMap<String, ClientContext>,
}

/// Where the file is.
pub fn path() -> Result<PathBuf> {
    let base = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").context("neither XDG_CONFIG_HOME nor HOME is set")?)
            .join(".config"),
    };
    Ok(base.join("drover").join("config.toml"))
}

/// The file's contents (empty when there is none).
pub fn load() -> Result<ClientConfig> {
    let path = path()?;
    match std::fs::read_to_string(&path) {
        Ok(text) => toml::from_str(&text).with_context(|| format!("{}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ClientConfig::default()),
        Err(e) => Err(e).with_context(|| format!("{}", path.display())),
    }
}

fn save(config: &ClientConfig) -> Result<()> {
    let path = path()?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("{}", dir.display()))?;
    }
    let text = toml::to_string(config)?;
    let partial = path.with_extension("toml.part");
    std::fs::write(&partial, text).with_context(|| format!("{}", partial.display()))?;
    std::fs::rename(&partial, &path).with_context(|| format!("{}", path.display()))?;
    Ok(())
}

/// The context a command uses: the one named (`--context`, `DROVER_CONTEXT`), else the
/// current one, else none. Naming one that does not exist is an error.
pub fn selected(named: Option<&str>) -> Result<Option<ClientContext>> {
    // No HOME and no XDG_CONFIG_HOME (a service's environment): no contexts, unless one is named.
    if named.is_none() && path().is_err() {
        return Ok(None);
    }
    let config = load()?;
    match named.or(config.current_context.as_deref()) {
        None => Ok(None),
        Some(name) => match config.contexts.get(name) {
            Some(context) => Ok(Some(context.clone())),
            None => bail!(
                "no context {name:?} in {} (drover config set-context)",
                path()?.display()
            ),
        },
    }
}

/// `drover config` subcommands.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Create or change a context.
    SetContext(SetContextArgs),
    /// Make a context the current one.
    UseContext {
        /// Its name.
        name: String,
    },
    /// Print the file.
    View,
}

/// `drover config set-context`.
#[derive(Debug, Args)]
pub struct SetContextArgs {
    /// The context's name.
    name: String,
    /// API URLs, comma separated.
    #[arg(long)]
    server: Option<String>,
    /// File holding the bearer token (the token itself is never stored).
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// CA certificate(s) for `https://` servers.
    #[arg(long)]
    cacert: Option<PathBuf>,
    /// Client certificate (PEM) presented to `https://` servers.
    #[arg(long)]
    cert: Option<PathBuf>,
    /// Its private key (PEM; the path is stored, never the key).
    #[arg(long)]
    key: Option<PathBuf>,
}

fn absolute(path: PathBuf) -> Result<PathBuf> {
    if path.is_absolute() {
        Ok(path)
    } else {
        Ok(std::env::current_dir()?.join(path))
    }
}

async fn execute(command: ConfigCommand) -> Result<()> {
    let mut config = load()?;
    match command {
        ConfigCommand::SetContext(args) => {
            let context = config.contexts.entry(args.name.clone()).or_default();
            if let Some(server) = args.server {
                context.server = Some(server);
            }
            if let Some(file) = args.token_file {
                context.token_file = Some(absolute(file)?);
            }
            if let Some(file) = args.cacert {
                context.cacert = Some(absolute(file)?);
            }
            if let Some(file) = args.cert {
                context.cert = Some(absolute(file)?);
            }
            if let Some(file) = args.key {
                context.key = Some(absolute(file)?);
            }
            if config.current_context.is_none() {
                config.current_context = Some(args.name.clone());
            }
            save(&config)?;
            eprintln!("context {:?} set in {}", args.name, path()?.display());
        }
        ConfigCommand::UseContext { name } => {
            if !config.contexts.contains_key(&name) {
                bail!("no context {name:?} (drover config set-context {name} --server …)");
            }
            config.current_context = Some(name.clone());
            save(&config)?;
            eprintln!("current context: {name}");
        }
        ConfigCommand::View => print!("{}", toml::to_string(&config)?),
    }
    Ok(())
}

/// Runs `drover config …`.
pub async fn run(command: ConfigCommand) -> ExitCode {
    match execute(command).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("drover config: {error:#}");
            ExitCode::from(2)
        }
    }
}
