//! What an instance asks of an agent's capacity, and what an agent offers: thousandths of a CPU
//! and MiB of memory, with the saturating arithmetic that placement and admission use.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Resource requests of an instance, or capacity of an agent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Resources {
    /// Thousandths of a CPU.
    #[serde(default)]
    pub cpu_millis: u64,
    /// Memory in MiB.
    #[serde(default)]
    pub memory_mib: u64,
}

impl Resources {
    /// Component-wise sum, saturating.
    pub fn plus(self, other: Resources) -> Resources {
        Resources {
            cpu_millis: self.cpu_millis.saturating_add(other.cpu_millis),
            memory_mib: self.memory_mib.saturating_add(other.memory_mib),
        }
    }

    /// Component-wise difference, saturating at zero.
    pub fn minus(self, other: Resources) -> Resources {
        Resources {
            cpu_millis: self.cpu_millis.saturating_sub(other.cpu_millis),
            memory_mib: self.memory_mib.saturating_sub(other.memory_mib),
        }
    }

    /// `self` taken `count` times, saturating.
    pub fn times(self, count: u32) -> Resources {
        Resources {
            cpu_millis: self.cpu_millis.saturating_mul(u64::from(count)),
            memory_mib: self.memory_mib.saturating_mul(u64::from(count)),
        }
    }

    /// Whether `request` fits in `self`.
    pub fn fits(self, request: Resources) -> bool {
        request.cpu_millis <= self.cpu_millis && request.memory_mib <= self.memory_mib
    }
}
