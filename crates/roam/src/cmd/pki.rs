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

/// Why a certificate is revoked (RFC 5280 reason codes).
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ReasonArg {
    Unspecified,
    /// The key is, or may be, in other hands (a stolen robot, a lost laptop).
    KeyCompromise,
    /// The holder left the organisation or changed role.
    AffiliationChanged,
    /// A new certificate replaces it.
    Superseded,
    /// The machine was retired.
    CessationOfOperation,
    PrivilegeWithdrawn,
}

impl ReasonArg {
    pub fn reason(self) -> pki::Reason {
        match self {
            ReasonArg::Unspecified => pki::Reason::Unspecified,
            ReasonArg::KeyCompromise => pki::Reason::KeyCompromise,
            ReasonArg::AffiliationChanged => pki::Reason::AffiliationChanged,
            ReasonArg::Superseded => pki::Reason::Superseded,
            ReasonArg::CessationOfOperation => pki::Reason::CessationOfOperation,
            ReasonArg::PrivilegeWithdrawn => pki::Reason::PrivilegeWithdrawn,
        }
    }
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
        /// Validity in days from its start. Routers close a link when its certificate
        /// expires, not only at the next handshake.
        #[arg(long, default_value_t = 365)]
        days: u32,
        /// Validity in seconds instead of --days (short-lived certificates).
        #[arg(long, value_name = "SECONDS", conflicts_with = "days")]
        seconds: Option<u32>,
        /// Start the validity this many days in the past (with a short --days this makes an
        /// already-expired certificate, to test that peers refuse it).
        #[arg(long, default_value_t = 0)]
        backdate_days: u32,
    },
    /// Revoke an identity: every certificate the CA in DIR issued to NAME (or one serial
    /// number) goes on the CA's revocation list, DIR/revoked.crl (an X.509 CRL, numbered
    /// one higher than the last). Routers that read it close the identity's links and
    /// refuse it from then on, and pass the list to each other: hand it to any one router
    /// (--connect, or `roam pki hand-in` from another machine), or put it in a router's
    /// PKI directory, which the router watches.
    Revoke {
        /// The identity to revoke.
        #[arg(required_unless_present = "serial")]
        name: Option<String>,
        /// Revoke this certificate serial number instead (hex, as `openssl x509 -serial`
        /// prints it).
        #[arg(long, value_name = "HEX", conflicts_with = "name")]
        serial: Option<String>,
        /// Directory holding the CA (ca.pem, ca.key).
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
        /// Why, as the list records it.
        #[arg(long, value_enum, default_value = "unspecified")]
        reason: ReasonArg,
        /// Hand the new list to this router at once (quic://HOST:PORT, tcp://HOST:PORT,
        /// mqtt://...), which passes it to the whole mesh; waits until the router holds it.
        #[arg(long, value_name = "ADDR")]
        connect: Option<String>,
        /// PKI directory of the identity that connects [default: --dir].
        #[arg(long, value_name = "DIR", requires = "connect")]
        pki: Option<PathBuf>,
        /// The identity that connects (any identity of the CA: the list's signature is what
        /// routers check).
        #[arg(long, value_name = "NAME", requires = "connect")]
        id: Option<String>,
    },
    /// Hand a revocation list (a CRL file signed by the CA, e.g. a copy of the CA's
    /// revoked.crl) to a router, which passes it to the whole mesh; waits until the router
    /// holds it and prints the number it holds.
    HandIn {
        /// The revocation list file (PEM or DER).
        list: PathBuf,
        #[command(flatten)]
        conn: super::ConnectArgs,
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

pub async fn run(c: PkiCommand) -> CmdResult {
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
            seconds,
            backdate_days,
        } => {
            let role = match role {
                RoleArg::Router => roam_proto::frame::Role::Router,
                RoleArg::Client => roam_proto::frame::Role::Client,
            };
            let start = time::OffsetDateTime::now_utc()
                - time::Duration::hours(1)
                - time::Duration::days(backdate_days.into());
            let not_after = match seconds {
                // From now: the hour of skew allowed at the start is not part of it.
                Some(s) => time::OffsetDateTime::now_utc() + time::Duration::seconds(s.into()),
                None => start + time::Duration::days(days.into()),
            };
            let validity = Validity {
                not_before: start,
                not_after,
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
        PkiCommand::Revoke {
            name,
            serial,
            dir,
            reason,
            connect,
            pki: pki_dir,
            id,
        } => {
            let target = match (name, serial) {
                (_, Some(serial)) => pki::Target::Serial(serial),
                (Some(name), None) => pki::Target::Name(name),
                (None, None) => return Err("name an identity, or give --serial".into()),
            };
            if connect.is_some() && id.is_none() {
                return Err("--connect needs --id: the identity that connects".into());
            }
            let done = pki::revoke(&dir, &target, reason.reason()).map_err(|e| e.to_string())?;
            if done.added.is_empty() {
                println!(
                    "already revoked; wrote revocation list {} ({} revoked) to {}",
                    done.number,
                    done.total,
                    done.file.display()
                );
            } else {
                println!(
                    "revoked serial {}; wrote revocation list {} ({} revoked) to {}",
                    done.added.join(", "),
                    done.number,
                    done.total,
                    done.file.display()
                );
            }
            if let (Some(connect), Some(id)) = (connect, id) {
                let conn = super::ConnectArgs {
                    connect,
                    pki: pki_dir.unwrap_or(dir),
                    id,
                    max_message_bytes: None,
                };
                hand_in(&done.file, &conn).await?;
            }
        }
        PkiCommand::HandIn { list, conn } => hand_in(&list, &conn).await?,
    }
    Ok(())
}

/// Hands the list in `file` to the router `conn` names and says what it holds then.
pub async fn hand_in(file: &std::path::Path, conn: &super::ConnectArgs) -> CmdResult {
    let cfg = super::connect::client_config(conn)?;
    let list = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let held = roam_net::hand_in::hand_in_revocations(&cfg.identity, &cfg.router, &cfg.link, &list)
        .await
        .map_err(|e| e.to_string())?;
    println!("router {} holds revocation list {held}", conn.connect);
    Ok(())
}
