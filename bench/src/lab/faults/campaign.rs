//! One fault campaign, run: a mesh of routers, a publisher and subscribers on a reliable
//! topic, faults done on schedule, then every subscriber's stream analysed (see `stream`).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::mesh::{Mesh, RATE_HZ, SIZE, TOPIC};
use super::stream::{self, Arrival, Delivery, Fault};
use roam_bench::procs::{self, Proc};

/// What is done to a router.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// SIGKILL, started again on its address after `down`.
    Kill,
    /// SIGTERM (it closes its links), started again after `down`.
    Restart,
    /// SIGSTOP for `down`, then SIGCONT: a partition that cuts it from everyone.
    Partition,
}

impl Action {
    fn name(self) -> &'static str {
        match self {
            Action::Kill => "kill -9",
            Action::Restart => "graceful restart",
            Action::Partition => "partition",
        }
    }
}

/// One fault: `at` after the stream began, `action` on router `router` for `down`.
#[derive(Clone, Debug)]
pub struct Step {
    pub at: Duration,
    pub router: usize,
    pub action: Action,
    pub down: Duration,
}

pub struct Campaign {
    pub name: &'static str,
    pub what: String,
    pub routers: usize,
    /// (a, b): router a dials router b.
    pub links: Vec<(usize, usize)>,
    pub publisher_router: usize,
    /// (identity, router).
    pub subscribers: Vec<(&'static str, usize)>,
    pub steps: Vec<Step>,
    /// Stream time after the last fault before the publisher stops (longer than the resend
    /// window, so what can be recovered is).
    pub settle: Duration,
    /// Sample memory and descriptors of these routers (and the endpoints) every 5 s.
    pub sample: Vec<usize>,
}

/// The campaign's figures.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Outcome {
    pub name: String,
    pub what: String,
    pub routers: usize,
    pub links: Vec<(usize, usize)>,
    pub topic: String,
    pub rate_hz: f64,
    pub message_bytes: usize,
    pub stream_s: f64,
    /// Every fault done, in order, on the stream's clock.
    pub faults: Vec<Fault>,
    /// Per subscriber: its router and what it got.
    pub subscribers: Vec<SubscriberOutcome>,
    /// The publisher's own counts.
    pub publisher: Option<PublisherCounts>,
    /// Memory and descriptors over the run (soak).
    pub usage: Vec<UsageSample>,
    pub error: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct SubscriberOutcome {
    pub router: String,
    #[serde(flatten)]
    pub delivery: Delivery,
    /// `roam sub`'s summary: recovered after a loss, and lost (counted at that end).
    pub recovered_counted: Option<u64>,
    pub lost_counted: Option<u64>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct PublisherCounts {
    pub sent: u64,
    pub dropped_offline: u64,
    pub resent: u64,
    /// Messages asked for after the resend window, and by how many subscribers.
    pub lost: u64,
    pub lost_subscribers: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct UsageSample {
    pub at_s: f64,
    pub process: String,
    pub rss_kb: u64,
    pub fds: u64,
}

pub fn run(roam: &std::path::Path, c: &Campaign) -> Outcome {
    let mut out = Outcome {
        name: c.name.into(),
        what: c.what.clone(),
        routers: c.routers,
        links: c.links.clone(),
        topic: TOPIC.into(),
        rate_hz: RATE_HZ,
        message_bytes: SIZE,
        ..Outcome::default()
    };
    if let Err(e) = measure(roam, c, &mut out) {
        out.error = Some(e);
    }
    out
}

fn measure(roam: &std::path::Path, c: &Campaign, out: &mut Outcome) -> Result<(), String> {
    let mut mesh = Mesh::new(roam, c.name, c.routers, &c.links)?;
    mesh.start_all()?;
    let origin = Instant::now();
    let ms = |t: Instant| t.duration_since(origin).as_secs_f64() * 1e3;
    let subs = c
        .subscribers
        .iter()
        .map(|(id, r)| mesh.subscriber(id, *r))
        .collect::<Result<Vec<_>, _>>()?;
    let sub_pids: Vec<(String, u32)> = subs.iter().map(|s| (s.name.clone(), s.pid())).collect();
    let mut publisher = Some(mesh.publisher(c.publisher_router)?);
    let stop = AtomicBool::new(false);
    let flowing = AtomicUsize::new(0);
    let (faults, results, counts) = std::thread::scope(|s| {
        let readers: Vec<_> = subs
            .into_iter()
            .map(|sub| {
                let (stop, flowing) = (&stop, &flowing);
                s.spawn(move || read(sub, origin, stop, flowing))
            })
            .collect();
        let run = drive(c, &mut mesh, &mut publisher, &flowing, &sub_pids, &ms, out);
        let counts = publisher.as_mut().map(stop_publisher);
        stop.store(true, Ordering::Relaxed);
        let results: Vec<_> = readers
            .into_iter()
            .map(|r| r.join().unwrap_or_else(|_| Err("reader panicked".into())))
            .collect();
        (run, results, counts)
    });
    let faults = faults?;
    let end_ms = ms(Instant::now());
    let counts = counts.ok_or("no publisher")??;
    out.faults = faults;
    out.publisher = Some(counts.clone());
    for ((id, r), res) in c.subscribers.iter().zip(results) {
        let (mut sub, arrivals) = res?;
        sub.stop(Duration::from_secs(5));
        let summary = numbers(&sub, "recovered after a loss");
        let mut delivery = stream::analyse(id, &arrivals, counts.sent, &out.faults, end_ms);
        delivery.subscriber = id.to_string();
        out.subscribers.push(SubscriberOutcome {
            router: mesh.id(*r).into(),
            delivery,
            recovered_counted: summary.first().copied(),
            lost_counted: summary.get(1).copied(),
        });
    }
    out.stream_s = out
        .subscribers
        .iter()
        .map(|s| s.delivery.stream_ms)
        .fold(0.0, f64::max)
        / 1e3;
    Ok(())
}

/// Waits for the stream, then does every fault on schedule; returns the faults as done.
fn drive(
    c: &Campaign,
    mesh: &mut Mesh,
    publisher: &mut Option<Proc>,
    flowing: &AtomicUsize,
    sub_pids: &[(String, u32)],
    ms: &dyn Fn(Instant) -> f64,
    out: &mut Outcome,
) -> Result<Vec<Fault>, String> {
    // The stream has begun once every subscriber has messages.
    let deadline = Instant::now() + Duration::from_secs(30);
    while flowing.load(Ordering::Relaxed) < c.subscribers.len() * 50 {
        if Instant::now() > deadline {
            return Err(format!(
                "the stream did not begin within 30 s: {} messages",
                flowing.load(Ordering::Relaxed)
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let began = Instant::now();
    let pub_pid = publisher.as_ref().map(Proc::pid);
    let mut sampler = Sampler::default();
    let mut sample = |mesh: &Mesh| {
        let mut pids: Vec<(String, u32)> = c
            .sample
            .iter()
            .filter_map(|&i| Some((mesh.id(i).to_string(), mesh.pid(i)?)))
            .collect();
        if !c.sample.is_empty() {
            pids.extend(sub_pids.iter().cloned());
            pids.extend(pub_pid.map(|p| ("robot".to_string(), p)));
        }
        sampler.tick(ms(Instant::now()) / 1e3, &pids);
    };
    let mut faults = Vec::new();
    for step in &c.steps {
        wait_until(began + step.at, || sample(mesh));
        let at = Instant::now();
        match step.action {
            Action::Kill => mesh.kill(step.router)?,
            Action::Restart => mesh.terminate(step.router)?,
            Action::Partition => mesh.freeze(step.router, true)?,
        }
        // The fault lasts `down`: a schedule, not a wait for a condition.
        wait_until(at + step.down, || sample(mesh));
        match step.action {
            Action::Kill | Action::Restart => mesh.start(step.router)?,
            Action::Partition => mesh.freeze(step.router, false)?,
        }
        faults.push(Fault {
            kind: step.action.name().into(),
            target: mesh.id(step.router).into(),
            at_ms: ms(at),
            back_ms: ms(Instant::now()),
        });
    }
    wait_until(Instant::now() + c.settle, || sample(mesh));
    out.usage = sampler.samples;
    Ok(faults)
}

/// Calls `tick` about every 100 ms until `t`.
fn wait_until(t: Instant, mut tick: impl FnMut()) {
    while let Some(left) = t.checked_duration_since(Instant::now()) {
        tick();
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
}

/// Memory and descriptors every 5 s.
#[derive(Default)]
struct Sampler {
    next_s: f64,
    samples: Vec<UsageSample>,
}

impl Sampler {
    fn tick(&mut self, now_s: f64, pids: &[(String, u32)]) {
        if now_s < self.next_s || pids.is_empty() {
            return;
        }
        self.next_s = now_s + 5.0;
        for (name, pid) in pids {
            if let (Some(rss_kb), Some(fds)) = (procs::rss_kb(*pid), procs::open_fds(*pid)) {
                self.samples.push(UsageSample {
                    at_s: now_s,
                    process: name.clone(),
                    rss_kb,
                    fds,
                });
            }
        }
    }
}

/// Every message line of `sub`, timed as it comes, until `stop` and 2 s without one.
pub(super) fn read(
    sub: Proc,
    origin: Instant,
    stop: &AtomicBool,
    flowing: &AtomicUsize,
) -> Result<(Proc, Vec<Arrival>), String> {
    let mut arrivals = Vec::new();
    let mut quiet_since = Instant::now();
    loop {
        match sub.next_line(Duration::from_millis(50))? {
            Some(l) => {
                let now = Instant::now();
                if let Some((seq, latency_us)) = parse_message(&l) {
                    let at_ms = now.duration_since(origin).as_secs_f64() * 1e3;
                    arrivals.push(Arrival {
                        at_ms,
                        sent_ms: at_ms - latency_us as f64 / 1e3,
                        seq,
                    });
                    flowing.fetch_add(1, Ordering::Relaxed);
                    quiet_since = now;
                }
            }
            None if stop.load(Ordering::Relaxed)
                && quiet_since.elapsed() > Duration::from_secs(2) =>
            {
                return Ok((sub, arrivals))
            }
            None => {}
        }
    }
}

/// `seq=N latency_us=L size=...` as `roam sub` prints a message.
fn parse_message(l: &str) -> Option<(u64, i64)> {
    let mut seq = None;
    let mut latency = None;
    for part in l.split(' ') {
        if let Some(v) = part.strip_prefix("seq=") {
            seq = v.parse().ok();
        } else if let Some(v) = part.strip_prefix("latency_us=") {
            latency = v.parse().ok();
        }
    }
    Some((seq?, latency?))
}

/// SIGTERM to the publisher (it finishes what it queued) and its summary's counts.
fn stop_publisher(p: &mut Proc) -> Result<PublisherCounts, String> {
    p.stop(Duration::from_secs(15));
    let sent = numbers(p, "dropped while offline");
    let losses = numbers(p, "did not reach");
    match (sent.as_slice(), losses.as_slice()) {
        ([sent, offline, ..], [resent, lost, subs, ..]) => Ok(PublisherCounts {
            sent: *sent,
            dropped_offline: *offline,
            resent: *resent,
            lost: *lost,
            lost_subscribers: *subs,
        }),
        _ => Err(format!(
            "no summary from the publisher: {}",
            p.stderr_lines().join("\n")
        )),
    }
}

/// The numbers of the stderr line of `p` that contains `marker`, in order.
pub(super) fn numbers(p: &Proc, marker: &str) -> Vec<u64> {
    p.stderr_lines()
        .iter()
        .rev()
        .find(|l| l.contains(marker))
        .map(|l| {
            l.split(|c: char| !c.is_ascii_digit())
                .filter_map(|w| w.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_lines_give_their_sequence_and_latency() {
        let l = "seq=17 latency_us=412 size=100 sha256=ab";
        assert_eq!(parse_message(l), Some((17, 412)));
        assert_eq!(parse_message("received 3 messages"), None);
    }
}
