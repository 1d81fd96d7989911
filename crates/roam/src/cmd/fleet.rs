//! `roam fleet`: what an operator does to the whole fleet at once. `remove` takes a member
//! out (its certificate revoked, every realm it was in re-keyed without it); `status` shows,
//! per member of each realm, the epoch it is in and whether it answers.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Subcommand;
use roam_edge::epochs::rotate;
use roam_edge::epochs::{file_membership, survey};
use roam_proto::epoch_record::MemberKey;

use super::pki::ReasonArg;
use super::realm::{seconds, SwitchArgs};
use super::{CmdResult, ConnectArgs};

#[derive(Debug, Subcommand)]
pub enum FleetCommand {
    /// Take a member out of the fleet: revoke every certificate the CA issued to NAME and
    /// hand the list to the router of --connect (which passes it to the mesh: links and
    /// handshakes of NAME are refused everywhere), then start a new epoch of each --realm
    /// that lists NAME, without it (what is sealed from the switch on, NAME cannot open, even
    /// with its realm files). Reports the router's list and each remaining member as it
    /// switches; fails if one did not within --wait.
    Remove {
        /// The identity to remove.
        name: String,
        /// Directory holding the CA (ca.pem, ca.key).
        #[arg(long, value_name = "DIR")]
        ca: PathBuf,
        /// A realm file of this administrator's (repeatable); realms that do not list NAME
        /// are left as they are.
        #[arg(long = "realm", value_name = "FILE", required = true)]
        realms: Vec<PathBuf>,
        /// Why, as the revocation list records it.
        #[arg(long, value_enum, default_value = "key-compromise")]
        reason: ReasonArg,
        #[command(flatten)]
        switch: SwitchArgs,
        #[command(flatten)]
        conn: ConnectArgs,
    },
    /// Show, for each --realm, its epoch and, per member, the epoch it says it is in (members
    /// that do not answer within --listen are shown as not heard: offline, or not running).
    Status {
        /// A realm file of this administrator's (repeatable).
        #[arg(long = "realm", value_name = "FILE", required = true)]
        realms: Vec<PathBuf>,
        /// Seconds to listen for the members' answers.
        #[arg(long, value_name = "SECS", default_value_t = 3.0)]
        listen: f64,
        #[command(flatten)]
        conn: ConnectArgs,
    },
}

/// The realm's members now, as this administrator's files say: the realm file's and its last
/// epoch's.
fn members_of(realm: &roam_edge::Realm) -> Result<(u16, roam_edge::epochs::Membership), String> {
    let mut membership = file_membership(realm);
    let record = rotate::current_record(realm).map_err(|e| e.to_string())?;
    let epoch = record.as_ref().map_or(0, |r| r.terms.epoch);
    if let Some(r) = record {
        membership.members = r.terms.members.into_iter().collect();
        membership.admins = r.terms.admins;
    }
    Ok((epoch, membership))
}

pub async fn run(c: FleetCommand) -> CmdResult {
    match c {
        FleetCommand::Remove {
            name,
            ca,
            realms,
            reason,
            switch,
            conn,
        } => {
            let (options, wait) = switch.options(vec![name.clone()])?;
            let done =
                roam_pki::revoke(&ca, &roam_pki::Target::Name(name.clone()), reason.reason())
                    .map_err(|e| e.to_string())?;
            println!(
                "revoked {name} ({} certificates on the list); wrote revocation list {} to {}",
                done.total,
                done.number,
                done.file.display()
            );
            super::pki::hand_in(&done.file, &conn).await?;
            let mut missing = BTreeSet::new();
            for file in &realms {
                let realm = roam_edge::realm::load(file)?;
                let (_, membership) = members_of(&realm)?;
                if !membership.members.contains_key(&name) {
                    println!(
                        "{name} is not a member of realm {:?} ({}): left as it is",
                        realm.label,
                        file.display()
                    );
                    continue;
                }
                let cfg = super::connect::client_config(&conn)?;
                let out = super::realm::rotate_file(file, cfg, &conn.id, &options, wait).await?;
                missing.extend(out.missing.iter().map(|m| format!("{m} ({})", realm.label)));
            }
            if missing.is_empty() {
                println!("{name} is out of the fleet");
                Ok(())
            } else {
                let missing: Vec<String> = missing.into_iter().collect();
                Err(format!(
                    "{name} is revoked and out of every new epoch, but these members did not say they switched within {:.0} s: {} (a member that is away takes the epoch from the others when it is back)",
                    wait.as_secs_f64(),
                    missing.join(", ")
                ))
            }
        }
        FleetCommand::Status {
            realms,
            listen,
            conn,
        } => {
            let listen = seconds("listen", listen)?;
            let cfg = super::connect::client_config(&conn)?;
            let key =
                MemberKey::from_pkcs8(&cfg.identity.signing_pkcs8).map_err(|e| e.to_string())?;
            let client =
                super::connect::client_edge(cfg, &conn.id, "asking the members through", None)?;
            for file in &realms {
                let realm = Arc::new(roam_edge::realm::load(file)?);
                let (epoch, membership) = members_of(&realm)?;
                let heard = survey::survey(
                    &client.edge,
                    &realm,
                    &key,
                    epoch,
                    &membership.members,
                    listen,
                )
                .await
                .map_err(|e| e.to_string())?;
                println!(
                    "realm {:?}: epoch {epoch}, {} members, administrators: {}",
                    realm.label,
                    membership.members.len(),
                    membership.admins.join(", ")
                );
                let width = membership
                    .members
                    .keys()
                    .map(String::len)
                    .max()
                    .unwrap_or(6)
                    .max(6);
                println!("  {:width$}  {:>5}  state", "member", "epoch");
                let mut names: Vec<&String> = membership.members.keys().collect();
                names.sort();
                for m in names {
                    let (e, state) = if *m == conn.id {
                        (epoch.to_string(), "this command".to_string())
                    } else {
                        match heard.get(m) {
                            Some(e) if *e == epoch => (e.to_string(), "connected".to_string()),
                            Some(e) => (e.to_string(), format!("connected, behind epoch {epoch}")),
                            None => (
                                "-".to_string(),
                                format!("not heard within {:.0} s", listen.as_secs_f64()),
                            ),
                        }
                    };
                    println!("  {m:width$}  {e:>5}  {state}");
                }
            }
            Ok(())
        }
    }
}
