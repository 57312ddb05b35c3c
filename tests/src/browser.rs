//! A real headless browser for the console's tests: Debian's Chromium driven through its
//! ChromeDriver (both installed by `make setup`) with fantoccini, a maintained WebDriver client.
//! Each [`Browser`] is its own ChromeDriver on a free loopback port with its own profile
//! directory, killed when dropped. Screenshots go to `<target dir>/ui-screenshots/`. What the
//! page logged (a script's errors, every refused or failed load) is read from Chromium's log
//! through ChromeDriver ([`Browser::console_errors`]).

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

/// A ChromeDriver process and a browser session on it.
pub struct Browser {
    driver: Child,
    driver_url: String,
    /// The session.
    pub client: Client,
    _profile: tempfile::TempDir,
}

/// Where screenshots are written (the directory is made).
pub fn screenshots_dir() -> Result<PathBuf> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../target")));
    let dir = target.join("ui-screenshots");
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

impl Browser {
    /// Starts ChromeDriver and a headless Chromium session.
    pub async fn start() -> Result<Self> {
        let port = crate::agent::free_port()?;
        let driver = Command::new("chromedriver")
            .process_group(0)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("chromedriver (make setup installs Debian's chromium-driver)")?;
        let profile = tempfile::tempdir()?;
        let options = json!({
            "binary": "/usr/bin/chromium",
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1400,1000",
                format!("--user-data-dir={}", profile.path().display()),
            ],
        });
        let mut capabilities = serde_json::Map::new();
        capabilities.insert("goog:chromeOptions".into(), options);
        // Chromium's console (errors, failed loads) kept for `console_errors`.
        capabilities.insert("goog:loggingPrefs".into(), json!({"browser": "ALL"}));
        // The WebDriver client's rustls needs a process-wide provider; ours is ring.
        let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        let client = loop {
            let attempt = ClientBuilder::rustls()
                .context("the WebDriver client")?
                .capabilities(capabilities.clone())
                .connect(&url)
                .await;
            match attempt {
                Ok(client) => break client,
                Err(error) if Instant::now() < deadline => {
                    let _ = error;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(error) => bail!("no browser session on {url}: {error}"),
            }
        };
        Ok(Self {
            driver,
            driver_url: url,
            client,
            _profile: profile,
        })
    }

    /// Opens `url` and signs in with `token` (the console's sign-in form).
    pub async fn sign_in(&self, url: &str, token: &str) -> Result<()> {
        self.client.goto(url).await?;
        let field = self.wait_for("#token").await?;
        field.send_keys(token).await?;
        self.client.find(Locator::Css("#sign-in")).await?.click().await?;
        self.wait_until(
            "the navigation after signing in",
            "return !document.getElementById('nav').hidden",
        )
        .await?;
        Ok(())
    }

    /// Goes to a view of the console (`#/services`) without reloading the page.
    pub async fn show(&self, hash: &str) -> Result<()> {
        self.client
            .execute(
                "location.hash = arguments[0]; return true;",
                vec![Value::String(hash.into())],
            )
            .await?;
        Ok(())
    }

    /// The element `css`, once it is there (30 s).
    pub async fn wait_for(&self, css: &str) -> Result<fantoccini::elements::Element> {
        self.client
            .wait()
            .at_most(Duration::from_secs(30))
            .for_element(Locator::Css(css))
            .await
            .with_context(|| format!("no {css} within 30 s"))
    }

    /// Clicks the element `css` once it is there. A live view may redraw it between finding and
    /// clicking (the instances' table, every few seconds): it is found again and clicked, as a
    /// user clicks again (within 30 s).
    pub async fn click(&self, css: &str) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match self.wait_for(css).await?.click().await {
                Ok(_) => return Ok(()),
                Err(error) if error.is_stale_element_reference() && Instant::now() < deadline => {}
                Err(error) => return Err(error).with_context(|| format!("clicking {css}")),
            }
        }
    }

    /// Waits (up to 60 s) until `script` (a function body) returns a truthy value; that value.
    pub async fn wait_until(&self, what: &str, script: &str) -> Result<Value> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let value = self.client.execute(script, vec![]).await?;
            let truthy =
                !matches!(&value, Value::Null | Value::Bool(false)) && value != Value::String(String::new());
            if truthy {
                return Ok(value);
            }
            if Instant::now() >= deadline {
                bail!("{what}: not within 60 s (last {value})");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The page's text.
    pub async fn page_text(&self) -> Result<String> {
        let value = self
            .client
            .execute("return document.body.innerText;", vec![])
            .await?;
        Ok(value.as_str().unwrap_or_default().to_string())
    }

    /// Writes a screenshot named `name`.png.
    pub async fn screenshot(&self, name: &str) -> Result<PathBuf> {
        let png = self.client.screenshot().await?;
        let path = screenshots_dir()?.join(format!("{name}.png"));
        std::fs::write(&path, png)?;
        Ok(path)
    }

    /// The page's console entries of level `SEVERE` since the last call: uncaught errors,
    /// `console.error`, and every load the browser reports as failed (a `403` or `404` answer, a
    /// refused connection, a policy violation). Read through ChromeDriver's log command, which
    /// fantoccini does not wrap.
    pub async fn console_errors(&self) -> Result<Vec<String>> {
        let session = self.client.session_id().await?.context("no WebDriver session")?;
        let answer: Value = crate::client::http_client(None)
            .post(format!("{}/session/{session}/se/log", self.driver_url))
            .json(&json!({"type": "browser"}))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let entries = answer["value"]
            .as_array()
            .with_context(|| format!("the browser log is not a list: {answer}"))?;
        Ok(entries
            .iter()
            .filter(|e| e["level"] == "SEVERE")
            .map(|e| e["message"].as_str().unwrap_or_default().to_string())
            .collect())
    }

    /// Confirms the console's confirmation dialog.
    pub async fn confirm(&self) -> Result<()> {
        self.wait_until(
            "the confirmation dialog",
            "return document.getElementById('confirm').open",
        )
        .await?;
        self.client
            .find(Locator::Css("#confirm-ok"))
            .await?
            .click()
            .await?;
        Ok(())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The driver and the browser it started share a process group: both go.
        let group = format!("-{}", self.driver.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.driver.wait();
    }
}
