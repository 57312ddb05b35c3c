//! Who a request is, for the audit log: the guards of the Kubernetes, Boskos and pool dialects
//! run each request inside a scope naming its verified principal, and the writes of those
//! dialects carry it in their proposal; the platform API's commands name their caller
//! themselves. The log is read through the operations room (`ops::audit`).

use std::future::Future;

tokio::task_local! {
    static PRINCIPAL: String;
}

/// Runs `future` as `principal`: the proposals it writes name them.
pub async fn scoped<F: Future>(principal: String, future: F) -> F::Output {
    PRINCIPAL.scope(principal, future).await
}

/// The principal of the request being served, if its dialect's guard named one.
pub fn principal() -> Option<String> {
    PRINCIPAL.try_with(Clone::clone).ok()
}
