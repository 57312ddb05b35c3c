//! What each tenant's services use in each environment ([`UsageIndex`]), summed once and then
//! kept up to date service by service, so that checking a revision against an environment's
//! marks costs a lookup instead of a scan of every service of the tenant (at 10,000 services
//! that scan ran twice in every create, on every replica). Derived data only, like
//! [`crate::service::reservations`]: never serialized, equal whatever it holds, emptied by the
//! rare commands that may change many services at once, rebuilt tenant by tenant by the next
//! reader.
//!
//! The sums are kept in `u128` and saturate only when read, which gives exactly what the
//! saturating fold over the other services gave: every term is non-negative, so the fold
//! saturates if and only if the true sum exceeds `u64::MAX`.

use std::collections::BTreeMap;

use super::entities::Tenant;
use crate::derived::Derived;
use crate::service::{EnvironmentRef, Service, Usage};

/// One environment's sums.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Sum {
    vcpu_millis: u128,
    memory_mib: u128,
}

impl Sum {
    fn add(&mut self, usage: Usage) {
        self.vcpu_millis += u128::from(usage.vcpu_millis);
        self.memory_mib += u128::from(usage.memory_mib);
    }

    fn remove(&mut self, usage: Usage) {
        self.vcpu_millis = self.vcpu_millis.saturating_sub(u128::from(usage.vcpu_millis));
        self.memory_mib = self.memory_mib.saturating_sub(u128::from(usage.memory_mib));
    }
}

/// Where a service counts and how much: its environment and its current revision's usage.
pub(crate) type Counted = (EnvironmentRef, Usage);

/// What `service` counts for.
pub(crate) fn counted(service: &Service) -> Counted {
    (service.environment.clone(), service.deployed_usage())
}

/// A tenant's sums by environment.
type Sums = BTreeMap<EnvironmentRef, Sum>;

fn sums_of(tenant: &Tenant) -> Sums {
    let mut sums = Sums::new();
    for service in tenant.services.values() {
        let (environment, usage) = counted(service);
        sums.entry(environment).or_default().add(usage);
    }
    sums
}

/// The index; see the module.
#[derive(Default, Clone, PartialEq, Eq, Debug)]
pub struct UsageIndex(Derived<BTreeMap<String, Sums>>);

impl UsageIndex {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Sums>> {
        self.0.lock()
    }

    /// What the services of `tenant` (named `name`) deployed in `environment` use, but
    /// `except` (when it is one of them, it is not counted).
    pub(crate) fn used_in(
        &self,
        name: &str,
        tenant: &Tenant,
        environment: &EnvironmentRef,
        except: &str,
    ) -> Usage {
        let mut kept = self.lock();
        let sums = kept.entry(name.to_string()).or_insert_with(|| sums_of(tenant));
        let mut sum = sums.get(environment).copied().unwrap_or_default();
        if let Some(excepted) = tenant
            .services
            .get(except)
            .filter(|s| s.environment == *environment)
        {
            sum.remove(excepted.deployed_usage());
        }
        Usage {
            vcpu_millis: u64::try_from(sum.vcpu_millis).unwrap_or(u64::MAX),
            memory_mib: u64::try_from(sum.memory_mib).unwrap_or(u64::MAX),
        }
    }

    /// A service of `tenant` counted `before` a change and `after` it (`None`: it does not
    /// exist).
    pub(crate) fn replace(&self, tenant: &str, before: Option<&Counted>, after: Option<&Counted>) {
        let mut kept = self.lock();
        let Some(sums) = kept.get_mut(tenant) else {
            return;
        };
        if let Some((environment, usage)) = before {
            let emptied = sums.get_mut(environment).map(|sum| {
                sum.remove(*usage);
                *sum == Sum::default()
            });
            if emptied == Some(true) {
                sums.remove(environment);
            }
        }
        if let Some((environment, usage)) = after {
            sums.entry(environment.clone()).or_default().add(*usage);
        }
    }

    /// Forgets everything (a change that may touch many services).
    pub(crate) fn clear(&self) {
        self.lock().clear();
    }

    /// Whether what is kept is what summing every service gives (for the model's tests).
    #[cfg(test)]
    pub(crate) fn consistent(&self, tenants: &BTreeMap<String, Tenant>) -> bool {
        let kept = self.lock();
        kept.iter().all(|(name, sums)| {
            let fresh = tenants.get(name).map(sums_of).unwrap_or_default();
            let nonzero = |s: &Sums| -> Sums {
                s.iter()
                    .filter(|(_, sum)| **sum != Sum::default())
                    .map(|(e, sum)| (e.clone(), *sum))
                    .collect()
            };
            nonzero(sums) == nonzero(&fresh)
        })
    }
}
