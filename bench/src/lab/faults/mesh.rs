//! The processes of a fault campaign, started the way a user starts them: `roam router`s on
//! loopback ports chosen once (a router restarted comes back on its address, as a robot's
//! service manager restarts it), and `roam pub` / `roam sub` on a reliable topic that keeps
//! every message (`--keep-all`, end-to-end recovery on).

use std::path::{Path, PathBuf};
use std::time::Duration;

use roam_bench::procs::Proc;

/// The lab's topic, its rate and message size: a reliable 200 Hz stream of small messages
/// (odometry-like), one message each 5 ms.
pub const TOPIC: &str = "/fault/odom";
pub const RATE_HZ: f64 = 200.0;
pub const SIZE: usize = 100;

/// One router of the mesh: its identity, its port, the routers it dials (by index) and its
/// process while it runs.
struct Router {
    id: String,
    port: u16,
    dials: Vec<usize>,
    proc: Option<Proc>,
}

pub struct Mesh {
    roam: PathBuf,
    dir: PathBuf,
    pki: String,
    realm: String,
    routers: Vec<Router>,
    /// Given to every router besides its identity, address and peers.
    router_args: Vec<String>,
}

impl Mesh {
    /// `n` routers r0..r{n-1}; each `(a, b)` of `links` is a link that ra dials to rb. Makes
    /// a CA, the identities and a realm in a scratch directory; starts nothing.
    pub fn new(roam: &Path, tag: &str, n: usize, links: &[(usize, usize)]) -> Result<Mesh, String> {
        let dir = std::env::temp_dir().join(format!("roam-faults-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let pki = dir.join("pki").to_string_lossy().into_owned();
        let realm = dir.join("faults.realm").to_string_lossy().into_owned();
        let mut mesh = Mesh {
            roam: roam.to_path_buf(),
            dir,
            pki,
            realm,
            routers: Vec::new(),
            router_args: Vec::new(),
        };
        mesh.roam_ok(&["pki", "init", "--dir", &mesh.pki])?;
        mesh.roam_ok(&["realm", "new", "faults", "--out", &mesh.realm])?;
        for i in 0..n {
            let id = format!("r{i}");
            mesh.roam_ok(&["pki", "issue", &id, "--dir", &mesh.pki, "--role", "router"])?;
            mesh.routers.push(Router {
                id,
                port: free_udp_port()?,
                dials: links.iter().filter(|l| l.0 == i).map(|l| l.1).collect(),
                proc: None,
            });
        }
        Ok(mesh)
    }

    fn roam_ok(&self, args: &[&str]) -> Result<(), String> {
        roam_bench::procs::roam_ok(&self.roam, args)
    }

    pub fn id(&self, i: usize) -> &str {
        &self.routers[i].id
    }

    pub fn addr(&self, i: usize) -> String {
        format!("127.0.0.1:{}", self.routers[i].port)
    }

    /// Starts every router, in index order (each dials routers started before it or after:
    /// a dialer retries until its peer is up).
    pub fn start_all(&mut self) -> Result<(), String> {
        (0..self.routers.len()).try_for_each(|i| self.start(i))
    }

    /// Starts router `i` with the product's defaults (idle timeout, keep-alives, queues) and
    /// waits until it listens.
    pub fn start(&mut self, i: usize) -> Result<(), String> {
        let r = &self.routers[i];
        let mut args: Vec<String> = ["router", "--id", &r.id, "--pki", &self.pki, "--listen"]
            .map(String::from)
            .into();
        args.push(self.addr(i));
        if !self.router_args.iter().any(|a| a == "--status-interval") {
            args.extend(["--status-interval".into(), "0".into()]);
        }
        args.extend(self.router_args.iter().map(|a| a.replace("{id}", &r.id)));
        for &d in &r.dials {
            args.push("--connect".into());
            args.push(self.addr(d));
        }
        let p = Proc::start(&r.id, &self.roam, &args)?;
        p.wait_line(Duration::from_secs(10), |l| l.starts_with("listening"))?;
        self.routers[i].proc = Some(p);
        Ok(())
    }

    /// The running process of router `i`.
    pub fn router(&mut self, i: usize) -> Result<&mut Proc, String> {
        let id = self.routers[i].id.clone();
        self.routers[i]
            .proc
            .as_mut()
            .ok_or_else(|| format!("{id} is not running"))
    }

    /// SIGKILL: the router dies with everything in its queues, closing nothing.
    pub fn kill(&mut self, i: usize) -> Result<(), String> {
        let mut p = self.routers[i]
            .proc
            .take()
            .ok_or("no such router running")?;
        p.signal("KILL")?;
        p.wait_exit(Duration::from_secs(5));
        Ok(())
    }

    /// SIGTERM: the router closes its links and exits; waits for it.
    pub fn terminate(&mut self, i: usize) -> Result<(), String> {
        let mut p = self.routers[i]
            .proc
            .take()
            .ok_or("no such router running")?;
        p.stop(Duration::from_secs(5));
        Ok(())
    }

    /// SIGSTOP / SIGCONT: the router stops answering anyone without closing anything, as
    /// behind a network partition, and later goes on where it was.
    pub fn freeze(&mut self, i: usize, frozen: bool) -> Result<(), String> {
        self.router(i)?.signal(if frozen { "STOP" } else { "CONT" })
    }

    /// Arguments every router started from now on gets (a quota, a status interval);
    /// `{id}` in one stands for the router's identity.
    pub fn set_router_args(&mut self, args: &[&str]) {
        self.router_args = args.iter().map(|a| a.to_string()).collect();
    }

    /// A file in the mesh's scratch directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn endpoint_on(
        &self,
        cmd: &str,
        topic: &str,
        id: &str,
        router: usize,
        extra: &[&str],
    ) -> Vec<String> {
        let mut a: Vec<String> = [
            cmd,
            topic,
            "--type",
            "test_msgs/msg/Blob",
            "--realm",
            &self.realm,
            "--pki",
            &self.pki,
            "--id",
            id,
            "--connect",
        ]
        .map(String::from)
        .into();
        a.push(self.addr(router));
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    }

    /// `roam sub` as `id` on router `router`.
    pub fn subscriber(&self, id: &str, router: usize) -> Result<Proc, String> {
        self.client("sub", TOPIC, id, router, &[])
    }

    /// `roam pub --keep-all` at [`RATE_HZ`] on router `router`: it waits for a subscriber,
    /// then sends until stopped.
    pub fn publisher(&self, router: usize) -> Result<Proc, String> {
        let (size, rate) = (SIZE.to_string(), RATE_HZ.to_string());
        let extra = ["--keep-all", "--size", &size, "--rate", &rate];
        self.client("pub", TOPIC, "robot", router, &extra)
    }

    /// `roam pub` or `roam sub` (`cmd`) on `topic` as a new client `id` on router `router`.
    pub fn client(
        &self,
        cmd: &str,
        topic: &str,
        id: &str,
        router: usize,
        extra: &[&str],
    ) -> Result<Proc, String> {
        self.roam_ok(&["pki", "issue", id, "--dir", &self.pki, "--role", "client"])?;
        Proc::start(
            id,
            &self.roam,
            &self.endpoint_on(cmd, topic, id, router, extra),
        )
    }

    /// The process id of router `i` while it runs.
    pub fn pid(&self, i: usize) -> Option<u32> {
        self.routers[i].proc.as_ref().map(Proc::pid)
    }
}

impl Drop for Mesh {
    fn drop(&mut self) {
        for r in &mut self.routers {
            if let Some(p) = &mut r.proc {
                // A frozen router would not see SIGTERM.
                let _ = p.signal("CONT");
                p.stop(Duration::from_secs(3));
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A UDP port nobody holds now, for a router to keep across its restarts.
fn free_udp_port() -> Result<u16, String> {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("a free UDP port: {e}"))
}
