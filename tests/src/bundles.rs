//! Kumori bundles for the marketplace's and the services' tests: zips made from `(name,
//! contents)` entries, and the marketplace's publish form sent as a client would.

use std::io::Write;
use std::time::Duration;

use anyhow::Result;
use reqwest::StatusCode;
use serde_json::Value;

use crate::platform::token;

/// A zip of `(name, contents)` files, deflated; a name ending in `@` is a symbolic link to its
/// contents.
pub fn zip_of(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (name, contents) in entries {
        if let Some(link) = name.strip_suffix('@') {
            writer
                .add_symlink(link, String::from_utf8_lossy(contents), options)
                .expect("symlink");
        } else {
            writer.start_file(*name, options).expect("file");
            writer.write_all(contents).expect("write");
        }
    }
    writer.finish().expect("zip").into_inner()
}

/// `zip` with every occurrence of the name `from` replaced by `to`, of the same length, in the
/// local and central headers alike: how a zip holding one name twice is made (the zip writer
/// refuses to write one).
pub fn renamed(zip: Vec<u8>, from: &str, to: &str) -> Vec<u8> {
    assert_eq!(from.len(), to.len(), "a rename keeps the length");
    let mut zip = zip;
    let mut at = 0;
    while let Some(found) = zip[at..].windows(from.len()).position(|w| w == from.as_bytes()) {
        zip[at + found..at + found + to.len()].copy_from_slice(to.as_bytes());
        at += found + to.len();
    }
    zip
}

/// The answer's status and body (JSON when it is).
pub async fn answer_of(answer: reqwest::Response) -> Result<(StatusCode, Value)> {
    let status = answer.status();
    let text = answer.text().await?;
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::String(text))))
}

/// `PUT …/marketplace/module` of `tenant` as `subject`: the bundle, the main artifact's `kind`
/// and directory, and the tags (a JSON array).
pub async fn publish_module(
    addr: &str,
    subject: &str,
    tenant: &str,
    bundle: Vec<u8>,
    (kind, dir, tags): (&str, &str, &str),
) -> Result<(StatusCode, Value)> {
    let form = reqwest::multipart::Form::new()
        .part(
            "bundle",
            reqwest::multipart::Part::bytes(bundle).file_name("bundle.zip"),
        )
        .text("bundle-target-kind", kind.to_string())
        .text("bundle-target-dir", dir.to_string())
        .text("bundle-tags", tags.to_string());
    let answer = reqwest::Client::new()
        .put(format!(
            "http://{addr}/api/1.0-beta/tenant/{tenant}/marketplace/module"
        ))
        .bearer_auth(token(subject))
        .multipart(form)
        .timeout(Duration::from_secs(60))
        .send()
        .await?;
    answer_of(answer).await
}
