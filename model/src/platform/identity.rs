//! Who is who: the identity a verified credential names, and the tenant whose members are the
//! platform's operators.

use serde::{Deserialize, Serialize};

/// Who a verified credential names: the token's issuer and subject.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Identity {
    /// The issuer (`iss`) of the JWT, or `drover-static` for a static API token.
    pub issuer: String,
    /// The subject (`sub`) of the JWT, or the static token's name.
    pub subject: String,
}

/// The tenant whose confirmed members are the platform's operators.
pub const OPERATOR_TENANT: &str = "operator";
