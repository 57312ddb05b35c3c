//! `drover delete KIND NAME`: deletes one object of the kinds the API deletes, and says so (or
//! prints the API's answer with `-o`).

use std::process::ExitCode;

use clap::Args;
use reqwest::Method;

use super::client::call;
use super::common::Common;
use super::failure::{finish, Failure};
use super::kind::Kind;
use super::output::print;
use super::paths::path;

/// `drover delete KIND NAME`.
#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// What to delete.
    #[arg(value_enum)]
    kind: Kind,
    /// Which.
    name: String,
    #[command(flatten)]
    common: Common,
}

/// `drover delete`.
pub async fn delete(args: DeleteArgs) -> ExitCode {
    let run = async {
        if matches!(
            args.kind,
            Kind::Members | Kind::Revisions | Kind::Resources | Kind::Pools
        ) {
            return Err(Failure::usage(
                "members leave with DELETE /cluster/members/{id}; revisions are not deleted; pools and their resources come from the pool configuration",
            ));
        }
        let path = path(args.kind, Some(&args.name), &args.common)?;
        let answer = call(&args.common, Method::DELETE, &path, None).await?;
        if args.common.output.is_some() {
            print(args.kind, Some(&args.name), &answer, args.common.output)?;
        } else {
            eprintln!("{}/{} deleted", args.kind.singular(), args.name);
        }
        Ok(())
    };
    finish(run.await)
}
