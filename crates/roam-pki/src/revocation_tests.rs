use super::*;
use crate::tests::TempDir;
use crate::{init_ca, issue, load_identity, Validity};
use roam_proto::frame::Role;

fn ca_with(names: &[&str]) -> TempDir {
    let dir = TempDir::new("pki-revoke");
    init_ca(dir.path()).unwrap();
    for name in names {
        issue(dir.path(), name, Role::Client, Validity::default()).unwrap();
    }
    dir
}

fn ca_der(dir: &Path) -> CertificateDer<'static> {
    crate::read_single_cert(&dir.join(crate::CA_CERT_FILE)).unwrap()
}

fn serial_of(dir: &Path, name: &str) -> Vec<u8> {
    let cert = crate::read_single_cert(&dir.join(format!("{name}.pem"))).unwrap();
    crate::cert_serial(&cert).unwrap()
}

fn held(dir: &Path) -> RevocationList {
    RevocationList::verify(&fs::read(dir.join(REVOKED_FILE)).unwrap(), &ca_der(dir)).unwrap()
}

#[test]
fn revoking_a_name_lists_its_certificate_and_numbers_each_list_one_higher() {
    let dir = ca_with(&["robot-1", "robot-2"]);
    let d = dir.path();
    let first = revoke(d, &Target::Name("robot-1".into()), Reason::KeyCompromise).unwrap();
    assert_eq!((first.number, first.added.len(), first.total), (1, 1, 1));
    let list = held(d);
    assert!(list.revokes(&serial_of(d, "robot-1")));
    assert!(!list.revokes(&serial_of(d, "robot-2")));

    let second = revoke(d, &Target::Name("robot-2".into()), Reason::Superseded).unwrap();
    assert_eq!((second.number, second.total), (2, 2));
    let list = held(d);
    assert!(
        list.revokes(&serial_of(d, "robot-1")),
        "earlier entries are kept"
    );
    assert!(list.revokes(&serial_of(d, "robot-2")));

    let again = revoke(d, &Target::Name("robot-2".into()), Reason::Superseded).unwrap();
    assert!(again.added.is_empty(), "nothing new: {again:?}");
    assert_eq!(again.number, 3);
}

#[test]
fn a_name_is_revoked_after_its_files_left_the_ca_directory() {
    let dir = ca_with(&["stolen"]);
    let d = dir.path();
    let serial = serial_of(d, "stolen");
    fs::remove_file(d.join("stolen.pem")).unwrap();
    fs::remove_file(d.join("stolen.key")).unwrap();
    revoke(d, &Target::Name("stolen".into()), Reason::KeyCompromise).unwrap();
    assert!(held(d).revokes(&serial));
}

#[test]
fn a_serial_is_revoked_as_openssl_prints_it() {
    let dir = ca_with(&["robot"]);
    let d = dir.path();
    let serial = serial_of(d, "robot");
    let printed = serial
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":");
    revoke(
        d,
        &Target::Serial(format!("00{printed}")),
        Reason::Unspecified,
    )
    .unwrap();
    assert!(held(d).revokes(&serial));
}

#[test]
fn an_unknown_name_is_an_error_that_says_what_to_do() {
    let dir = ca_with(&[]);
    let err = revoke(
        dir.path(),
        &Target::Name("ghost".into()),
        Reason::Unspecified,
    )
    .unwrap_err();
    assert!(matches!(err, PkiError::NothingToRevoke { .. }), "{err}");
    assert!(err.to_string().contains("serial"), "{err}");
}

#[test]
fn a_list_of_another_ca_or_altered_bytes_is_refused() {
    let ours = ca_with(&["robot"]);
    let theirs = ca_with(&["robot"]);
    revoke(
        theirs.path(),
        &Target::Name("robot".into()),
        Reason::Unspecified,
    )
    .unwrap();
    let foreign = fs::read(theirs.path().join(REVOKED_FILE)).unwrap();
    let err = RevocationList::verify(&foreign, &ca_der(ours.path())).unwrap_err();
    assert!(matches!(err, CrlError::OtherIssuer { .. }), "{err}");

    revoke(
        ours.path(),
        &Target::Name("robot".into()),
        Reason::Unspecified,
    )
    .unwrap();
    let mut der = held(ours.path()).der().to_vec();
    let last = der.len() - 1;
    der[last] ^= 1; // inside the signature
    assert_eq!(
        RevocationList::verify(&der, &ca_der(ours.path())),
        Err(CrlError::BadSignature)
    );
    assert!(RevocationList::verify(b"garbage", &ca_der(ours.path())).is_err());
    assert!(RevocationList::verify(&[], &ca_der(ours.path())).is_err());
    let huge = vec![0x30; MAX_LIST_BYTES + 1];
    assert!(matches!(
        RevocationList::verify(&huge, &ca_der(ours.path())),
        Err(CrlError::TooLarge { .. })
    ));
}

#[test]
fn a_holder_takes_only_newer_lists_and_keeps_them_in_its_file() {
    let ca = ca_with(&["a", "b"]);
    let c = ca.path();
    revoke(c, &Target::Name("a".into()), Reason::Unspecified).unwrap();
    let one = fs::read(c.join(REVOKED_FILE)).unwrap();
    revoke(c, &Target::Name("b".into()), Reason::Unspecified).unwrap();
    let two = fs::read(c.join(REVOKED_FILE)).unwrap();

    let home = TempDir::new("pki-holder");
    let file = home.path().join(REVOKED_FILE);
    let holder = Revocations::at(file.clone(), ca_der(c)).unwrap();
    assert!(holder.current().is_none());
    assert_eq!(holder.offer(&one).unwrap().0, Order::Newer);
    assert_eq!(holder.offer(&one).unwrap().0, Order::Same);
    let g = holder.generation();
    assert_eq!(holder.offer(&two).unwrap().0, Order::Newer);
    assert!(holder.generation() > g);
    assert_eq!(
        holder.offer(&one).unwrap().0,
        Order::Older,
        "never downgraded"
    );
    assert_eq!(holder.current().unwrap().number(), 2);
    assert!(holder.revokes(&serial_of(c, "b")));

    // Kept on disk: a process that starts later starts from list 2.
    let restarted = Revocations::at(file, ca_der(c)).unwrap();
    assert_eq!(restarted.current().unwrap().number(), 2);
}

#[test]
fn a_holder_reads_a_list_an_operator_puts_in_its_file() {
    let ca = ca_with(&["a"]);
    let c = ca.path();
    let home = TempDir::new("pki-watch");
    let file = home.path().join(REVOKED_FILE);
    let holder = Revocations::at(file.clone(), ca_der(c)).unwrap();
    assert!(holder.reload().unwrap().is_none(), "no file yet");
    revoke(c, &Target::Name("a".into()), Reason::Unspecified).unwrap();
    fs::copy(c.join(REVOKED_FILE), &file).unwrap();
    let (order, list) = holder.reload().unwrap().unwrap();
    assert_eq!((order, list.number()), (Order::Newer, 1));
    assert!(holder.reload().unwrap().is_none(), "read once");
    fs::write(&file, b"not a list").unwrap();
    assert!(holder.reload().is_err(), "a broken file is a clear error");
    assert_eq!(
        holder.current().unwrap().number(),
        1,
        "and the list held stays"
    );
}

#[test]
fn an_identity_loads_with_the_list_of_its_directory() {
    let dir = ca_with(&["robot", "other"]);
    let d = dir.path();
    revoke(d, &Target::Name("other".into()), Reason::Unspecified).unwrap();
    let id = load_identity(d, "robot").unwrap();
    assert!(id.revoked.revokes(&serial_of(d, "other")));
    fs::write(
        d.join(REVOKED_FILE),
        b"-----BEGIN X509 CRL-----\nAAAA\n-----END X509 CRL-----\n",
    )
    .unwrap();
    let err = load_identity(d, "robot").unwrap_err();
    assert!(err.to_string().contains(REVOKED_FILE), "{err}");
}
