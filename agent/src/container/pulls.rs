//! Which credentials pulled each image, so that an image on the machine serves only pods that
//! could pull it themselves (the kubelet's "ensure secret pulled images", KEP-2535): one pulled
//! anonymously serves every pod; one pulled with credentials serves the pods presenting those
//! same credentials, and any other pod's `IfNotPresent` pull goes to the registry, which checks
//! its own. Kept in memory: after an agent restart every image is pulled again once.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use drover_model::cluster::pod::PullAuth;
use sha2::{Digest, Sha256};

/// What pulled an image: `anonymous`, or a digest of the credentials (never the credentials).
pub type Key = String;

const ANONYMOUS: &str = "anonymous";

/// The key of a pull made with `auth`.
pub fn key(auth: Option<&PullAuth>) -> Key {
    match auth {
        None => ANONYMOUS.to_string(),
        Some(auth) => {
            let mut hash = Sha256::new();
            for part in [&auth.registry, &auth.username, &auth.password] {
                hash.update(part.as_bytes());
                hash.update([0]);
            }
            hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
        }
    }
}

/// The keys that pulled each image reference.
#[derive(Debug, Default)]
pub struct Pulls(Mutex<HashMap<String, BTreeSet<Key>>>);

impl Pulls {
    /// Records that `key` pulled `reference`.
    pub fn record(&self, reference: &str, key: Key) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(reference.to_string())
            .or_default()
            .insert(key);
    }

    /// Whether a pod pulling with `key` may use `reference` as it is on the machine.
    pub fn may_reuse(&self, reference: &str, key: &Key) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(reference)
            .is_some_and(|keys| keys.contains(ANONYMOUS) || keys.contains(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(password: &str) -> PullAuth {
        PullAuth {
            registry: "127.0.0.1:5000".into(),
            username: "u".into(),
            password: password.into(),
        }
    }

    #[test]
    fn an_image_serves_only_pods_that_could_pull_it() {
        let pulls = Pulls::default();
        let (right, wrong) = (key(Some(&auth("right"))), key(Some(&auth("wrong"))));
        assert!(!pulls.may_reuse("r/private:v1", &right), "never pulled");
        pulls.record("r/private:v1", right.clone());
        assert!(pulls.may_reuse("r/private:v1", &right));
        assert!(!pulls.may_reuse("r/private:v1", &wrong));
        assert!(!pulls.may_reuse("r/private:v1", &key(None)));
        pulls.record("r/public:v1", key(None));
        assert!(
            pulls.may_reuse("r/public:v1", &wrong),
            "a public image serves every pod"
        );
        assert!(!right.contains("right"), "the key is a digest");
    }
}
