//! `drover create tenant NAME`: a new tenant, whose owner the caller becomes.

use std::process::ExitCode;

use clap::Args;
use reqwest::Method;

use super::client::call;
use super::common::Common;
use super::failure::finish;
use super::kind::Kind;
use super::output::print;
use super::paths::PLATFORM;

/// `drover create tenant NAME`.
#[derive(Debug, Args)]
pub struct CreateTenantArgs {
    /// The new tenant's name; the caller becomes its owner.
    name: String,
    #[command(flatten)]
    common: Common,
}

/// `drover create tenant`.
pub async fn create_tenant(args: CreateTenantArgs) -> ExitCode {
    let run = async {
        let path = format!("{PLATFORM}/tenant/{}", args.name);
        let answer = call(&args.common, Method::POST, &path, Some("{}".into())).await?;
        match args.common.output {
            Some(output) => print(Kind::Tenants, Some(&args.name), &answer, Some(output)),
            None => {
                eprintln!("tenant/{} created", args.name);
                Ok(())
            }
        }
    };
    finish(run.await)
}
