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
  --topics N          many topics from one participant: TOPIC/0 .. TOPIC/N-1, --rate and
                      --count per topic, messages spread evenly over each period, warm-up
                      echoes on TOPIC/echo until every topic's path is up (or the path
                      timeout, when at least one is); the source prints `sending` and
                      `sent` around the measured part, the sink per-topic and aggregate
                      one-way figures. Stream mode only (no --echo). A write the readers
                      push back on waits until it goes or SIGTERM, which stops the source
                      early: it reports what it sent
  --settle-ms N       with --topics, source: after the warm-up, send at the rate for N ms
                      before measuring, messages the sink ignores, so the measured part finds
                      the path in its steady state (a QUIC window past slow start) [0]
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
    /// `--topics N`: the many-topic mode (topics.rs); `None` keeps the one-topic mode.
    pub topics: Option<usize>,
    /// `--settle-ms`: unmeasured sending before the measured part (many-topic mode).
    pub settle: Duration,
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
        topics: None,
        settle: Duration::ZERO,
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
            "--topics" => a.topics = Some(num(&flag, it.next())?),
            "--settle-ms" => a.settle = ms(&flag, it.next())?,
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
    if a.settle > Duration::ZERO && a.topics.is_none() {
        return Err("--settle-ms goes with --topics".into());
    }
    if let Some(n) = a.topics {
        if !(1..=super::topics_plan::MAX_TOPICS).contains(&n) {
            return Err(format!(
                "--topics {n}: 1 to {}",
                super::topics_plan::MAX_TOPICS
            ));
        }
        if a.echo {
            return Err("--topics measures one way: not with --echo".into());
        }
        if a.count.saturating_mul(n as u64) > 50_000_000 {
            return Err(format!(
                "--count {} x --topics {n}: at most 50,000,000 messages",
                a.count
            ));
        }
    }
    Ok(Some(a))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(s: &str) -> Result<Option<Args>, String> {
        parse(s.split_whitespace().map(str::to_string))
    }

    #[test]
    fn one_topic_unless_asked() {
        let a = parse_str("sink --count 5").unwrap().unwrap();
        assert_eq!(a.topics, None);
        let a = parse_str("source --topics 1000 --rate 10 --count 300")
            .unwrap()
            .unwrap();
        assert_eq!(a.topics, Some(1000));
        assert_eq!(a.settle, Duration::ZERO);
        let a = parse_str("source --topics 5 --settle-ms 2000")
            .unwrap()
            .unwrap();
        assert_eq!(a.settle, Duration::from_secs(2));
    }

    #[test]
    fn topics_refused_where_they_make_no_sense() {
        assert!(parse_str("source --topics 0").is_err());
        assert!(parse_str("source --topics 10001").is_err());
        assert!(parse_str("source --topics x").is_err());
        assert!(parse_str("source --topics 3 --echo").is_err());
        assert!(parse_str("source --topics 1000 --count 100000").is_err());
        assert!(parse_str("source --settle-ms 100").is_err());
    }
}
