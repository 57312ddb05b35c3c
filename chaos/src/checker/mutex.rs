//! Mutual exclusion of pool resources, as fencing tokens make it checkable: every grant of a
//! resource carries a token larger than any grant before it, and once a grant with a larger
//! token has been seen, no operation with a smaller one may be accepted. A holder that was
//! silently replaced can therefore never act on the resource again.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A successful acquire as the client saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// The resource granted.
    pub resource: String,
    /// Who asked.
    pub owner: String,
    /// The fencing token that came with it.
    pub token: u64,
    /// When the acquire was sent (µs).
    pub invoked: u64,
    /// When its answer arrived (µs).
    pub returned: u64,
}

/// An update or release carrying a token that the server accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accepted {
    /// The resource.
    pub resource: String,
    /// The token it carried.
    pub token: u64,
    /// When it was sent (µs).
    pub invoked: u64,
    /// When the acceptance arrived (µs).
    pub returned: u64,
}

/// Every broken promise in the history, described; empty when exclusion held.
pub fn check(grants: &[Grant], accepted: &[Accepted]) -> Vec<String> {
    let mut violations = Vec::new();
    let mut by_resource: BTreeMap<&str, Vec<&Grant>> = BTreeMap::new();
    for grant in grants {
        by_resource.entry(&grant.resource).or_default().push(grant);
    }
    for (resource, grants) in &by_resource {
        for (i, a) in grants.iter().enumerate() {
            for b in &grants[i + 1..] {
                if a.token == b.token {
                    violations.push(format!(
                        "double grant: {resource} went to {} and {} with token {}",
                        a.owner, b.owner, a.token
                    ));
                }
                let (earlier, later) = if a.returned < b.invoked { (a, b) } else { (b, a) };
                if earlier.returned < later.invoked && later.token < earlier.token {
                    violations.push(format!(
                        "tokens went backwards: {resource} granted to {} with {} after {} had {}",
                        later.owner, later.token, earlier.owner, earlier.token
                    ));
                }
            }
        }
    }
    for used in accepted {
        let superseded = by_resource.get(used.resource.as_str()).and_then(|grants| {
            grants
                .iter()
                .find(|grant| grant.token > used.token && grant.returned < used.invoked)
        });
        if let Some(grant) = superseded {
            violations.push(format!(
                "stale token accepted: {} with token {} after {} was granted it with token {}",
                used.resource, used.token, grant.owner, grant.token
            ));
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(resource: &str, owner: &str, token: u64, invoked: u64, returned: u64) -> Grant {
        Grant {
            resource: resource.into(),
            owner: owner.into(),
            token,
            invoked,
            returned,
        }
    }

    fn accepted(resource: &str, token: u64, invoked: u64, returned: u64) -> Accepted {
        Accepted {
            resource: resource.into(),
            token,
            invoked,
            returned,
        }
    }

    #[test]
    fn holders_taking_turns_are_accepted() {
        let grants = [grant("r", "a", 10, 0, 5), grant("r", "b", 20, 30, 40)];
        let uses = [
            accepted("r", 10, 6, 9),
            accepted("r", 10, 10, 25),
            // Sent before b's grant returned: a's release may legitimately land first.
            accepted("r", 10, 35, 45),
            accepted("r", 20, 41, 50),
        ];
        assert!(check(&grants, &uses).is_empty());
    }

    #[test]
    fn a_double_grant_is_rejected() {
        let grants = [grant("r", "a", 10, 0, 5), grant("r", "b", 10, 1, 6)];
        let violations = check(&grants, &[]);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].starts_with("double grant"));
    }

    #[test]
    fn a_stale_token_accepted_after_a_newer_grant_is_rejected() {
        let grants = [grant("r", "a", 10, 0, 5), grant("r", "b", 20, 30, 40)];
        let violations = check(&grants, &[accepted("r", 10, 41, 45)]);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].starts_with("stale token accepted"));
    }

    #[test]
    fn tokens_that_go_backwards_are_rejected() {
        let grants = [grant("r", "a", 20, 0, 5), grant("r", "b", 10, 30, 40)];
        let violations = check(&grants, &[]);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].starts_with("tokens went backwards"));
    }

    #[test]
    fn other_resources_do_not_interfere() {
        let grants = [grant("r", "a", 10, 0, 5), grant("s", "b", 20, 30, 40)];
        assert!(check(&grants, &[accepted("r", 10, 41, 45)]).is_empty());
    }
}
