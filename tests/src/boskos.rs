//! A small Boskos-protocol client for tests, speaking query-string parameters as the Boskos Go
//! client does.

use anyhow::Result;
use reqwest::{Client, StatusCode};
use serde_json::Value;

/// A Boskos configuration with one static type whose resources `names` all start free.
pub fn static_pool_yaml(rtype: &str, names: &[impl AsRef<str>]) -> String {
    let names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
    format!(
        "resources:\n  - type: {rtype}\n    state: free\n    names: [{}]\n",
        names.join(", ")
    )
}

/// A status code, the raw body and the body parsed as JSON (`Null` when it is not JSON).
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status.
    pub status: StatusCode,
    /// The body as text.
    pub text: String,
    /// The body as JSON.
    pub json: Value,
}

/// Boskos client bound to one node.
#[derive(Clone)]
pub struct BoskosClient {
    http: Client,
    base: String,
}

impl BoskosClient {
    /// A client for the node whose API listens at `addr`.
    pub fn new(addr: &str) -> Self {
        Self::authorized(addr, None)
    }

    /// A client that sends `authorization` (a whole `Authorization` header value) with every
    /// request.
    pub fn authorized(addr: &str, authorization: Option<&str>) -> Self {
        Self {
            http: crate::client::http_client(authorization),
            base: format!("http://{addr}"),
        }
    }

    async fn reply(response: reqwest::Response) -> Result<Reply> {
        let status = response.status();
        let text = response.text().await?;
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok(Reply { status, text, json })
    }

    /// `POST path?query` with an optional body.
    pub async fn post(&self, path: &str, query: &[(&str, &str)], body: Option<String>) -> Result<Reply> {
        let mut request = self.http.post(format!("{}{path}", self.base)).query(query);
        if let Some(body) = body {
            request = request.body(body);
        }
        Self::reply(request.send().await?).await
    }

    /// `GET path?query`.
    pub async fn get(&self, path: &str, query: &[(&str, &str)]) -> Result<Reply> {
        Self::reply(
            self.http
                .get(format!("{}{path}", self.base))
                .query(query)
                .send()
                .await?,
        )
        .await
    }

    /// `/acquire`.
    pub async fn acquire(
        &self,
        rtype: &str,
        state: &str,
        dest: &str,
        owner: &str,
        request_id: Option<&str>,
    ) -> Result<Reply> {
        let mut query = vec![
            ("type", rtype),
            ("state", state),
            ("dest", dest),
            ("owner", owner),
        ];
        if let Some(id) = request_id {
            query.push(("request_id", id));
        }
        self.post("/acquire", &query, None).await
    }

    /// `/release`.
    pub async fn release(&self, name: &str, dest: &str, owner: &str) -> Result<Reply> {
        self.post(
            "/release",
            &[("name", name), ("dest", dest), ("owner", owner)],
            None,
        )
        .await
    }

    /// `/update` with user data.
    pub async fn update(
        &self,
        name: &str,
        owner: &str,
        state: &str,
        user_data: Option<&str>,
    ) -> Result<Reply> {
        self.post(
            "/update",
            &[("name", name), ("owner", owner), ("state", state)],
            user_data.map(str::to_string),
        )
        .await
    }

    /// `/metric?type=`.
    pub async fn metric(&self, rtype: &str) -> Result<Reply> {
        self.get("/metric", &[("type", rtype)]).await
    }

    /// Waits until `count` resources of `rtype` are free (a pool file was committed).
    pub async fn wait_for_free(&self, rtype: &str, count: u64, timeout: std::time::Duration) -> Result<()> {
        crate::wait::eventually(timeout, &format!("{count} free {rtype} resources"), || async {
            let reply = self.metric(rtype).await.ok()?;
            (reply.json["current"]["free"].as_u64() == Some(count)).then_some(())
        })
        .await
    }

    /// `PUT /pools/config` with a Boskos YAML file.
    pub async fn set_config(&self, yaml: &str) -> Result<Reply> {
        let response = self
            .http
            .put(format!("{}/pools/config", self.base))
            .body(yaml.to_string())
            .send()
            .await?;
        Self::reply(response).await
    }

    /// `GET /pools/resources?type=`; an error for any answer but `200` with a JSON list, so a
    /// check that a resource is gone cannot pass on a failed request.
    pub async fn resources(&self, rtype: &str) -> Result<Vec<Value>> {
        let reply = self.get("/pools/resources", &[("type", rtype)]).await?;
        anyhow::ensure!(
            reply.status == StatusCode::OK,
            "GET /pools/resources answered {}: {}",
            reply.status,
            reply.text
        );
        reply
            .json
            .as_array()
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("GET /pools/resources did not answer a list: {}", reply.text))
    }

    /// The underlying HTTP client and base URL.
    pub fn raw(&self) -> (&Client, &str) {
        (&self.http, &self.base)
    }
}
