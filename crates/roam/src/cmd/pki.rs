//! `roam pki`: the deployment's own certificate authority.

use std::path::PathBuf;

use clap::{Subcommand, ValueEnum};
use roam_pki::{self as pki, Validity};

use super::CmdResult;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum RoleArg {
    /// May accept links and carry traffic between other routers.
    Router,
    /// May only connect to a router to publish or subscribe.
    Client,
}

#[derive(Debug, Subcommand)]
pub enum PkiCommand {
    /// Create a CA (ca.pem, ca.key with mode 0600) in DIR. Keep ca.key offline if you can.
    Init {
        /// Directory for the CA's files (created if missing; an existing CA is never replaced).
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
    },
    /// Issue an identity NAME.pem / NAME.key signed by the CA in DIR.
    Issue {
        /// Identity name: lowercase letters, digits and '-', e.g. robot-7.
        name: String,
        /// Directory holding the CA (ca.pem, ca.key); NAME.pem and NAME.key are written there.
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
        /// What the identity may do on links.
        #[arg(long, value_enum, default_value = "client")]
        role: RoleArg,
        /// Validity in days from its start.
        #[arg(long, default_value_t = 365)]
        days: u32,
        /// Start the validity this many days in the past (with a short --days this makes an
        /// already-expired certificate, to test that peers refuse it).
        #[arg(long, default_value_t = 0)]
        backdate_days: u32,
    },
    /// Issue NAME.tls.pem / NAME.tls.key: a TLS server certificate (ECDSA P-256) for the
    /// doors of gateway NAME, signed by the CA in DIR. gRPC clients on gRPC's C core
    /// (grpcio, C++, Ruby...) do not take Ed25519 server certificates; with these files
    /// `tls: pki: true` serves this one instead of the identity's own.
    TlsServer {
        /// The gateway's identity name (its certificate is named NAME.id.roam).
        name: String,
        /// Directory holding the CA (ca.pem, ca.key); the files are written there.
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
        /// A further DNS name or IP address clients reach the gateway by (repeatable).
        #[arg(long = "host", value_name = "HOST")]
        hosts: Vec<String>,
        /// Validity in days from now.
        #[arg(long, default_value_t = 365)]
        days: u32,
    },
}

pub fn run(c: PkiCommand) -> CmdResult {
    match c {
        PkiCommand::Init { dir } => {
            pki::init_ca(&dir).map_err(|e| e.to_string())?;
            println!("created CA in {}", dir.display());
        }
        PkiCommand::Issue {
            name,
            dir,
            role,
            days,
            backdate_days,
        } => {
            let role = match role {
                RoleArg::Router => roam_proto::frame::Role::Router,
                RoleArg::Client => roam_proto::frame::Role::Client,
            };
            let start = time::OffsetDateTime::now_utc()
                - time::Duration::hours(1)
                - time::Duration::days(backdate_days.into());
            let validity = Validity {
                not_before: start,
                not_after: start + time::Duration::days(days.into()),
            };
            pki::issue(&dir, &name, role, validity).map_err(|e| e.to_string())?;
            println!("issued {name} ({role:?}) in {}", dir.display());
        }
        PkiCommand::TlsServer {
            name,
            dir,
            hosts,
            days,
        } => {
            let start = time::OffsetDateTime::now_utc() - time::Duration::hours(1);
            let validity = Validity {
                not_before: start,
                not_after: start + time::Duration::days(days.into()),
            };
            pki::issue_tls_server(&dir, &name, &hosts, validity).map_err(|e| e.to_string())?;
            let (cert, _) = pki::tls_server_files(&dir, &name);
            println!("issued the TLS server certificate {}", cert.display());
        }
    }
    Ok(())
}
