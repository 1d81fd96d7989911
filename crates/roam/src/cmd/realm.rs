//! `roam realm`: realm files, and starting a realm's next epoch.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};
use roam_edge::epochs::rotate::{self, RotateOptions};
use roam_proto::epoch_record::MemberKey;

use super::{CmdResult, ConnectArgs};

#[derive(Debug, Subcommand)]
pub enum RealmCommand {
    /// Create a realm file with a fresh random secret (mode 0600; never overwrites).
    New {
        /// A label for people, e.g. "warehouse"; not secret.
        name: String,
        /// Where to write the realm file.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Allow an identity to sign envelopes in this realm (for signed mode): adds the
    /// Ed25519 public key of PKI_DIR/NAME.key to the realm's members.
    AddMember {
        /// Identity name in the PKI directory.
        name: String,
        /// Realm file to update.
        #[arg(long, value_name = "FILE")]
        realm: PathBuf,
        /// PKI directory holding NAME.key.
        #[arg(long, value_name = "DIR")]
        pki: PathBuf,
        /// Also let it start the realm's epochs (`roam realm rotate`).
        #[arg(long)]
        admin: bool,
    },
    /// Start the realm's next epoch: a fresh secret, sealed to each remaining member's
    /// identity key and handed to the members through the routers; online members switch to
    /// it without a restart, members that are away take it when they are back. With
    /// --remove, the member is left out: from the switch on it opens nothing, even with its
    /// realm file and a valid link. Only the realm's administrators may rotate. Waits until
    /// every remaining member says it switched (or --wait passes) and names each.
    Rotate {
        /// This administrator's realm file (its epoch file, FILE.epoch, is kept beside it).
        #[arg(long, value_name = "FILE")]
        realm: PathBuf,
        /// A member to leave out of the new epoch (and out of this realm file); repeatable.
        #[arg(long, value_name = "NAME")]
        remove: Vec<String>,
        #[command(flatten)]
        switch: SwitchArgs,
        #[command(flatten)]
        conn: ConnectArgs,
    },
}

/// How members switch to a new epoch, and how long the command waits for them (`roam realm
/// rotate`, `roam fleet remove`).
#[derive(Debug, Args)]
pub struct SwitchArgs {
    /// Seconds after receiving the new epoch before members seal in it: enough for every
    /// online member to hold it by then.
    #[arg(long, value_name = "SECS", default_value_t = 2.0)]
    switch_after: f64,
    /// Seconds after receiving the new epoch before members stop opening the one before
    /// (what was in flight still opens until then).
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    retire_after: f64,
    /// Seconds to wait for every remaining member to switch.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    wait: f64,
}

impl SwitchArgs {
    /// The rotation leaving out `remove`, and the wait.
    pub fn options(&self, remove: Vec<String>) -> Result<(RotateOptions, Duration), String> {
        let options = RotateOptions {
            remove,
            switch_after: seconds("switch-after", self.switch_after)?,
            retire_after: seconds("retire-after", self.retire_after)?,
        };
        Ok((options, seconds("wait", self.wait)?))
    }
}

/// A flag's seconds as a duration, or the error naming the flag.
pub fn seconds(flag: &str, s: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(s).map_err(|_| format!("--{flag}: {s} is not a number of seconds"))
}

pub async fn run(c: RealmCommand) -> CmdResult {
    match c {
        RealmCommand::New { name, out } => {
            roam_edge::realm::create(&out, &name)?;
            println!(
                "wrote realm {name:?} to {} (mode 0600): share it only with realm members",
                out.display()
            );
            Ok(())
        }
        RealmCommand::AddMember {
            name,
            realm,
            pki,
            admin,
        } => {
            let id = roam_pki::load_identity(&pki, &name).map_err(|e| e.to_string())?;
            let signer = roam_proto::SigningIdentity::from_pkcs8(&id.signing_pkcs8)
                .map_err(|e| e.to_string())?;
            roam_edge::realm::add_member(&realm, &name, &signer.public_key())?;
            println!(
                "{name} is a member of {} and may now sign envelopes in it",
                realm.display()
            );
            if admin {
                roam_edge::realm::add_admin(&realm, &name)?;
                println!("{name} may start the realm's epochs (roam realm rotate)");
            }
            Ok(())
        }
        RealmCommand::Rotate {
            realm,
            remove,
            switch,
            conn,
        } => {
            let (options, wait) = switch.options(remove)?;
            let cfg = super::connect::client_config(&conn)?;
            let out = rotate_file(&realm, cfg, &conn.id, &options, wait).await?;
            not_switched(&out, wait)
        }
    }
}

/// Starts the next epoch of the realm in `file` as administrator `id` and hands it out
/// through the router of `cfg`, printing each member as it switches.
pub async fn rotate_file(
    file: &std::path::Path,
    cfg: roam_net::client::ClientConfig,
    id: &str,
    options: &RotateOptions,
    wait: Duration,
) -> Result<rotate::HandOut, String> {
    let loaded = Arc::new(roam_edge::realm::load(file)?);
    let key = MemberKey::from_pkcs8(&cfg.identity.signing_pkcs8).map_err(|e| e.to_string())?;
    let record = rotate::next_epoch(&loaded, id, &key, options).map_err(|e| e.to_string())?;
    let epoch = record.terms.epoch;
    println!(
        "epoch {epoch} of realm {:?}: {} members{}; kept in {}",
        loaded.label,
        record.terms.members.len(),
        if options.remove.is_empty() {
            String::new()
        } else {
            format!(", without {}", options.remove.join(", "))
        },
        roam_edge::epochs::store::epoch_file(file).display()
    );
    let client = super::connect::client_edge(cfg, id, "handing out the new epoch through", None)?;
    let out = rotate::hand_out(&client.edge, &loaded, &record, wait, |member| {
        println!("{member} switched to epoch {epoch}");
    })
    .await
    .map_err(|e| e.to_string())?;
    if out.missing.is_empty() {
        println!(
            "every member of realm {:?} switched to epoch {epoch}",
            loaded.label
        );
    }
    Ok(out)
}

/// The error for members that did not switch within `wait`, if any.
pub fn not_switched(out: &rotate::HandOut, wait: Duration) -> CmdResult {
    if out.missing.is_empty() {
        return Ok(());
    }
    let missing: Vec<&str> = out.missing.iter().map(String::as_str).collect();
    Err(format!(
        "not switched within {:.0} s: {} (a member that is away takes the epoch from the others when it is back)",
        wait.as_secs_f64(),
        missing.join(", ")
    ))
}
