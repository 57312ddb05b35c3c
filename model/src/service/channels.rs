//! The channels a service offers and uses, as its deployment declares them; links join a
//! client's channel to a server's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::platform::error::PlatformError;
use crate::validation::is_label;

/// Most channels on each side of a deployment.
const MAX_CHANNELS: usize = 64;

/// Most bytes of the channels' metadata.
const MAX_CHANNEL_BYTES: usize = 16 * 1024;

/// The channels a service offers (`server`) and uses (`client`), each with free-form metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Channels {
    /// Channels it calls out through.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub client: BTreeMap<String, Value>,
    /// Channels it serves.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub server: BTreeMap<String, Value>,
}

impl Channels {
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.client.is_empty() && self.server.is_empty()
    }

    /// Checks names and sizes; the error names the field.
    pub fn validate(&self) -> Result<(), PlatformError> {
        for (side, channels) in [("client", &self.client), ("server", &self.server)] {
            if channels.len() > MAX_CHANNELS {
                return Err(PlatformError::invalid(
                    format!("channels.{side}"),
                    format!("at most {MAX_CHANNELS} channels"),
                ));
            }
            if let Some(bad) = channels.keys().find(|name| !is_label(name) || name.len() > 40) {
                return Err(PlatformError::invalid(
                    format!("channels.{side}.{bad}"),
                    "channel names are 1-40 lower-case letters, digits or '-', starting and ending with a letter or digit",
                ));
            }
        }
        let bytes = serde_json::to_vec(self).map_or(usize::MAX, |b| b.len());
        if bytes > MAX_CHANNEL_BYTES {
            return Err(PlatformError::invalid(
                "channels",
                format!("{bytes} bytes; at most {MAX_CHANNEL_BYTES}"),
            ));
        }
        Ok(())
    }
}
