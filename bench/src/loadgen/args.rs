//! Command line of `roam-loadgen`.

use std::time::Duration;

use roam_bench::ros_msgs::Kind;

pub const USAGE: &str = "\
usage: roam-loadgen source|sink [options]

  source: publish numbered, time-stamped messages on --topic; with --echo measure the round
          trip of each through a sink that echoes; print a JSON report on stdout.
  sink:   subscribe to --topic; with --echo write each sample back on TOPIC/echo (runs until
          SIGTERM); otherwise measure one-way latency, rate, loss, duplicates and reordering of
          --count messages and print a JSON report.
  Both are ROS 2-style nodes (roam_loadgen_source / roam_loadgen_sink) announced in
  ros_discovery_info. DDS settings come from CYCLONEDDS_URI.

options:
  --domain N          DDS domain (ROS_DOMAIN_ID) [0]
  --topic NAME        ROS 2 topic [/roam_lab/data]; the echo comes back on NAME/echo
  --type KIND         string | compressed_image | laserscan | image | pointcloud2 [string]
  --size N            string: text length; laserscan: number of ranges; others: data bytes [1000]
  --count N           messages to measure (source: send; sink: expect) [1000]
  --rate HZ           source: messages per second; 0 = as fast as possible, or with --echo one
                      in flight at a time (closed loop) [0]
  --echo              round-trip mode (both sides must agree)
  --best-effort       BEST_EFFORT instead of RELIABLE
  --depth N           KEEP_LAST depth [10]
  --keep-all          KEEP_ALL history instead of KEEP_LAST
  --ros-distro NAME   humble announces 24-byte GIDs, later distros 16 [jazzy]
  --path-timeout-ms N source: give up when no warm-up echo returns within N ms [60000]
  --echo-timeout-ms N source: how long to wait for one echo before counting it lost [2000]
  --linger-ms N       source, stream mode: stay this long after the last write so reliable
                      data is delivered before the participant leaves [1000]
  --idle-ms N         sink: stop this long after the last new message [3000]
  -h, --help          this text";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Source,
    Sink,
}

#[derive(Clone, Debug)]
pub struct Args {
    pub role: Role,
    pub domain: u32,
    pub topic: String,
    pub kind: Kind,
    pub size: usize,
    pub count: u64,
    pub rate: f64,
    pub echo: bool,
    pub best_effort: bool,
    pub depth: u32,
    pub keep_all: bool,
    pub ros_distro: Option<String>,
    pub path_timeout: Duration,
    pub echo_timeout: Duration,
    pub linger: Duration,
    pub idle: Duration,
}

fn num<T: std::str::FromStr>(flag: &str, v: Option<String>) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    let v = v.ok_or_else(|| format!("{flag} needs a value"))?;
    v.parse().map_err(|e| format!("{flag} {v:?}: {e}"))
}

fn ms(flag: &str, v: Option<String>) -> Result<Duration, String> {
    Ok(Duration::from_millis(num(flag, v)?))
}

/// Parses the arguments after the program name; `Ok(None)` after printing help.
pub fn parse(mut it: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let role = match it.next().as_deref() {
        Some("source") => Role::Source,
        Some("sink") => Role::Sink,
        Some("-h" | "--help") => {
            println!("{USAGE}");
            return Ok(None);
        }
        Some(other) => return Err(format!("unknown role {other:?} (source or sink)")),
        None => return Err("a role is needed: source or sink".into()),
    };
    let mut a = Args {
        role,
        domain: 0,
        topic: "/roam_lab/data".into(),
        kind: Kind::String,
        size: 1000,
        count: 1000,
        rate: 0.0,
        echo: false,
        best_effort: false,
        depth: 10,
        keep_all: false,
        ros_distro: None,
        path_timeout: Duration::from_secs(60),
        echo_timeout: Duration::from_secs(2),
        linger: Duration::from_secs(1),
        idle: Duration::from_secs(3),
    };
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--domain" => a.domain = num(&flag, it.next())?,
            "--topic" => {
                a.topic = it.next().ok_or("--topic needs a name")?;
                if !a.topic.starts_with('/') {
                    return Err(format!(
                        "--topic {:?}: a ROS 2 topic starts with /",
                        a.topic
                    ));
                }
            }
            "--type" => {
                let v = it.next().ok_or("--type needs a kind")?;
                a.kind = Kind::parse(&v).ok_or_else(|| format!("--type {v:?}: unknown kind"))?;
            }
            "--size" => a.size = num(&flag, it.next())?,
            "--count" => a.count = num(&flag, it.next())?,
            "--rate" => a.rate = num(&flag, it.next())?,
            "--echo" => a.echo = true,
            "--best-effort" => a.best_effort = true,
            "--depth" => a.depth = num::<u32>(&flag, it.next())?.max(1),
            "--keep-all" => a.keep_all = true,
            "--ros-distro" => a.ros_distro = Some(it.next().ok_or("--ros-distro needs a name")?),
            "--path-timeout-ms" => a.path_timeout = ms(&flag, it.next())?,
            "--echo-timeout-ms" => a.echo_timeout = ms(&flag, it.next())?,
            "--linger-ms" => a.linger = ms(&flag, it.next())?,
            "--idle-ms" => a.idle = ms(&flag, it.next())?,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(None);
            }
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    if a.count > 50_000_000 {
        return Err(format!("--count {}: at most 50,000,000", a.count));
    }
    if !(a.rate >= 0.0 && a.rate.is_finite()) {
        return Err(format!("--rate {}: a rate is >= 0", a.rate));
    }
    Ok(Some(a))
}
