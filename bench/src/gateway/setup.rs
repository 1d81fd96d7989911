//! The system under test, started as a user starts it: a deployment PKI and a realm
//! (`roam pki init/issue`, `roam realm new`), one `roam router`, and a `roam gateway` linked to
//! it with the message definitions in a `msg_paths` folder. Each scenario gets a fresh gateway,
//! so its memory and CPU figures are its own.

use std::path::PathBuf;
use std::time::Duration;

use roam_bench::procs::{roam_ok, Proc};

use super::messages::DEFINITIONS;

const START: Duration = Duration::from_secs(20);

pub struct Setup {
    pub roam: PathBuf,
    dir: PathBuf,
    pki: PathBuf,
    realm: PathBuf,
    msgs: PathBuf,
    _router: Proc,
    router_addr: String,
    gateways: u32,
}

impl Setup {
    /// Finds `roam` beside this program, makes the PKI, realm and definitions in a scratch
    /// folder, and starts the router.
    pub fn new() -> Result<Setup, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let roam = exe.parent().ok_or("no program directory")?.join("roam");
        if !roam.is_file() {
            return Err(format!(
                "{} not found: build it first (cargo build --release -p roam -p roam-bench)",
                roam.display()
            ));
        }
        let dir = std::env::temp_dir().join(format!("roam-gateway-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let (pki, realm, msgs) = (dir.join("pki"), dir.join("bench.realm"), dir.join("msgs"));
        for (file, text) in DEFINITIONS {
            let path = msgs.join(file);
            std::fs::create_dir_all(path.parent().ok_or("no parent")?)
                .and_then(|_| std::fs::write(&path, text))
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
        let p = pki.to_string_lossy().to_string();
        roam_ok(&roam, &["pki", "init", "--dir", &p])?;
        roam_ok(
            &roam,
            &["pki", "issue", "r1", "--dir", &p, "--role", "router"],
        )?;
        roam_ok(
            &roam,
            &["realm", "new", "bench", "--out", &realm.to_string_lossy()],
        )?;
        let args: Vec<String> = ["router", "--id", "r1", "--pki", &p]
            .into_iter()
            .chain(["--listen", "127.0.0.1:0", "--status-interval", "0"])
            .map(String::from)
            .collect();
        let router = Proc::start("router", &roam, &args)?;
        let line = router.wait_line(START, |l| l.starts_with("listening quic "))?;
        let router_addr = line["listening quic ".len()..].trim().to_string();
        Ok(Setup {
            roam,
            dir,
            pki,
            realm,
            msgs,
            _router: router,
            router_addr,
            gateways: 0,
        })
    }

    /// Starts a fresh `roam gateway` (default limits) linked to the router; returns it and
    /// its rosbridge port.
    pub fn gateway(&mut self) -> Result<(Proc, Ports), String> {
        self.gateways += 1;
        let id = format!("gw{}", self.gateways);
        let pki = self.pki.to_string_lossy().to_string();
        roam_ok(
            &self.roam,
            &["pki", "issue", &id, "--dir", &pki, "--role", "router"],
        )?;
        let yaml = format!(
            "id: {id}\npki: {pki}\nupstream: [{}]\nrealm: {}\nmsg_paths: [{}]\nrosbridge:\n  listen: 127.0.0.1:0\nfoxglove:\n  listen: 127.0.0.1:0\n",
            self.router_addr,
            self.realm.display(),
            self.msgs.display()
        );
        let path = self.dir.join(format!("{id}.yaml"));
        std::fs::write(&path, yaml).map_err(|e| format!("{}: {e}", path.display()))?;
        let gw = Proc::start(
            &id,
            &self.roam,
            &["gateway".into(), "-c".into(), path.to_string_lossy().into()],
        )?;
        let port_of = |line: String| -> Result<u16, String> {
            line.rsplit(':')
                .next()
                .and_then(|p| p.trim().parse().ok())
                .ok_or_else(|| format!("no port in {line:?}"))
        };
        let rosbridge =
            port_of(gw.wait_line(START, |l| l.starts_with("rosbridge listening ws://"))?)?;
        let foxglove =
            port_of(gw.wait_line(START, |l| l.starts_with("foxglove listening ws://"))?)?;
        Ok((
            gw,
            Ports {
                rosbridge,
                foxglove,
            },
        ))
    }
}

/// Where a gateway's doors listen.
#[derive(Clone, Copy, Debug)]
pub struct Ports {
    pub rosbridge: u16,
    pub foxglove: u16,
}

impl Ports {
    /// The port a client of `door` opens.
    pub fn of(&self, door: super::door::Door) -> u16 {
        match door {
            super::door::Door::Foxglove => self.foxglove,
            _ => self.rosbridge,
        }
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
