//! `roam realm`: realm files.

use std::path::PathBuf;

use clap::Subcommand;

use super::CmdResult;

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
    },
}

pub fn run(c: RealmCommand) -> CmdResult {
    match c {
        RealmCommand::New { name, out } => {
            roam_edge::realm::create(&out, &name)?;
            println!(
                "wrote realm {name:?} to {} (mode 0600): share it only with realm members",
                out.display()
            );
            Ok(())
        }
        RealmCommand::AddMember { name, realm, pki } => {
            let id = roam_pki::load_identity(&pki, &name).map_err(|e| e.to_string())?;
            let signer = roam_proto::SigningIdentity::from_pkcs8(&id.signing_pkcs8)
                .map_err(|e| e.to_string())?;
            roam_edge::realm::add_member(&realm, &name, &signer.public_key())?;
            println!("{name} may now sign envelopes in {}", realm.display());
            Ok(())
        }
    }
}
