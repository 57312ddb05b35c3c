//! kubectl's output flag: the formats, the default (a table on a terminal, JSON when piped),
//! and an answer printed in one without asking the API for more.

use std::io::IsTerminal;

use anyhow::Context;
use clap::ValueEnum;
use serde_json::Value;

use super::failure::Failure;
use super::kind::Kind;
use super::rows::objects;
use super::table::table;
use crate::cli::yaml;

/// How to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// Columns.
    Table,
    /// More columns.
    Wide,
    /// The API's answer.
    Json,
    /// The API's answer as YAML.
    Yaml,
    /// `kind/name` per object.
    Name,
}

/// The output asked for: `table` on a terminal, `json` otherwise.
pub(super) fn output_of(output: Option<Output>) -> Output {
    output.unwrap_or(if std::io::stdout().is_terminal() {
        Output::Table
    } else {
        Output::Json
    })
}

/// Prints an answer without asking for more: JSON and YAML as answered, names, or a table of
/// what the answer holds. `name`: the one object the answer is.
pub(super) fn print(
    kind: Kind,
    name: Option<&str>,
    answer: &Value,
    output: Option<Output>,
) -> Result<(), Failure> {
    match output_of(output) {
        Output::Json => println!(
            "{}",
            serde_json::to_string_pretty(answer).context("printing JSON")?
        ),
        Output::Yaml => print!("{}", yaml::to_string(answer)),
        Output::Name => {
            for row in objects(kind, answer, name, false) {
                println!("{}/{}", kind.singular(), row.name);
            }
        }
        output @ (Output::Table | Output::Wide) => println!(
            "{}",
            table(
                kind,
                &objects(kind, answer, name, false),
                output == Output::Wide,
                false
            )
        ),
    }
    Ok(())
}
