//! E12 (issue 18, item 5): no head-of-line blocking. Fifty small topics at 100 Hz each share
//! one link with a 13 MB image stream: do the small topics' latencies stay where they are
//! without it? Each system and path runs twice, fresh each time: the small topics alone, and
//! with the image stream started first (the small topics start measuring only once the
//! images flow, see flows.rs). Both are reliable and keep-all, so a small message held up
//! behind an image shows as latency, not loss.

use std::time::Duration;

use roam_bench::ros_msgs::Kind;
use serde::Serialize;

use super::experiments::Suite;
use super::flows::{self, FlowResult, FlowSpec, FlowsRun};
use super::systems::{Lab, System, Wan, ZenohLink};

pub const SMALL_TOPICS: usize = 50;
pub const SMALL_HZ: f64 = 100.0;
/// std_msgs/String of 128 characters: 140 bytes of CDR, a joystick or status message.
pub const SMALL_BYTES: usize = 128;
/// E5's image: seed 000's 13 MB sensor_msgs/Image, at E5's quick rate.
pub const IMAGE_BYTES: usize = 13_000_000;
pub const IMAGE_HZ: f64 = 2.0;
/// The images are stopped once the small topics are done (flows.rs); this only caps them.
const IMAGE_CAP_S: f64 = 120.0;
/// The small topics send this long before they measure, in both phases: the measured part
/// then finds the link past QUIC's slow start, as it would on a robot running for a while.
const SETTLE_MS: u64 = 2000;
const PATH_TIMEOUT: Duration = Duration::from_secs(30);

/// One system on one path: the small topics alone and next to the images.
#[derive(Clone, Debug, Serialize)]
pub struct HolRun {
    pub system: System,
    pub label: String,
    /// `None`: loopback, no relay.
    pub wan: Option<Wan>,
    pub small: FlowSpec,
    pub image: FlowSpec,
    pub alone: Option<FlowsRun>,
    pub with_image: Option<FlowsRun>,
    /// The small topics' one-way p99 next to the images over their p99 alone (goal: 2x or
    /// less).
    /// Only when every small message of both phases was delivered: a p99 over the messages
    /// that made it says nothing of those that did not.
    pub p99_ratio: Option<f64>,
    /// Small messages sent but not delivered (within flows.rs's drain time), alone and next
    /// to the images.
    pub small_undelivered_alone: Option<u64>,
    pub small_undelivered_with: Option<u64>,
    /// The share of the small topics' measured part during which the image source was
    /// sending (1 = all of it).
    pub overlap: Option<f64>,
    pub error: Option<String>,
}

impl HolRun {
    /// The small topics' flow of a phase.
    pub fn small_of(run: Option<&FlowsRun>) -> Option<&FlowResult> {
        run?.flows.iter().find(|f| f.name == "small")
    }
    pub fn image_of(run: Option<&FlowsRun>) -> Option<&FlowResult> {
        run?.flows.iter().find(|f| f.name == "image")
    }
}

/// The image topics, for the row where a second proxy carries them.
const IMAGE_TOPICS: &str = "^/roam_lab/image/[0-9]+$";

/// E6's 35 ms path, without and with 1% random loss.
const PATHS: [Wan; 2] = [Wan::PATH_35MS, Wan::PATH_35MS_1PCT_LOSS];

/// Every system on loopback and on each path: roam proxy to proxy and through a router, and
/// the Zenoh bridge over plain TCP when it is built; on loopback also native DDS (both
/// streams in one domain, nothing between them): what the images cost the small topics on
/// this machine's cores without any bridge. The small topics' window: 8 s quick (40,000
/// samples a phase), 30 s full.
pub fn run_all(lab: &Lab, suite: Suite) -> Vec<HolRun> {
    let seconds = match suite {
        Suite::Smoke => return Vec::new(),
        Suite::Quick => 8.0,
        Suite::Full => 30.0,
    };
    let mut systems = vec![System::ROAM_P2P, System::ROAM];
    if lab.zenoh.is_some() {
        systems.push(System::Zenoh {
            link: ZenohLink::Tcp,
        });
    }
    // Keep-all images that a link cannot carry hold every topic of the exporting proxy's
    // DDS participant inside CycloneDDS (docs/operations.md); a second proxy process for
    // them is the deployment that avoids it.
    let split = |pair| System::RoamSecondProxy {
        topics: IMAGE_TOPICS,
        what: "images",
        pair,
    };
    let paths: Vec<Option<Wan>> = [None].into_iter().chain(PATHS.map(Some)).collect();
    let mut cases: Vec<(System, Option<Wan>, Images)> = Vec::new();
    for wan in paths {
        let native = wan.is_none().then_some(System::Native);
        cases.extend(
            native
                .iter()
                .chain(&systems)
                .chain(&[split(false), split(true)])
                .map(|&s| (s, wan, Images::KeepAll)),
        );
    }
    // The lossy path again with keep-last images (the ROS 2 default QoS): where a link that
    // cannot carry every image may drop old ones instead of holding everything up.
    let lossy = Some(Wan::PATH_35MS_1PCT_LOSS);
    cases.extend(systems.iter().map(|&s| (s, lossy, Images::KeepLast)));
    let mut out = Vec::new();
    for (sys, wan, images) in cases {
        eprintln!(
            "  e12 {:<28} {SMALL_TOPICS} x {SMALL_HZ} Hz alone, then next to {} MB at {IMAGE_HZ} Hz{} [{}]",
            sys.label(),
            IMAGE_BYTES / 1_000_000,
            if images == Images::KeepLast { ", keep-last" } else { "" },
            wan.map_or("loopback", |w| w.label)
        );
        let r = run(lab, sys, wan, seconds, images);
        if let Some(e) = &r.error {
            eprintln!("    failed: {}", e.lines().next().unwrap_or(""));
        }
        out.push(r);
    }
    out
}

fn p99(f: Option<&FlowResult>) -> Option<f64> {
    f?.sink["one_way"]["p99_us"].as_f64().filter(|v| *v > 0.0)
}

/// Messages the source sent that the sink did not receive.
pub fn undelivered(f: Option<&FlowResult>) -> Option<u64> {
    let f = f?;
    let sent = f.source["sent"].as_u64()?;
    let got = f.sink["counts"]["received"].as_u64()?;
    Some(sent.saturating_sub(got))
}

/// The image stream's history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Images {
    /// Keep-all, as the small topics: nothing may be dropped anywhere.
    KeepAll,
    /// The ROS 2 default QoS (reliable, keep-last 10), what a camera driver usually offers:
    /// a bridge may drop old images when the link cannot carry them all, as DDS would.
    KeepLast,
}

/// The two phases of `system` on `wan` with a window of `seconds` for the small topics.
pub fn run(lab: &Lab, system: System, wan: Option<Wan>, seconds: f64, images: Images) -> HolRun {
    let small = FlowSpec {
        name: "small",
        topic: "/roam_lab/small",
        kind: Kind::String,
        size: SMALL_BYTES,
        topics: SMALL_TOPICS,
        rate: SMALL_HZ,
        count: (SMALL_HZ * seconds) as u64,
        settle_ms: SETTLE_MS,
        keep_all: true,
    };
    let image = FlowSpec {
        name: "image",
        topic: "/roam_lab/image",
        kind: Kind::Image,
        size: IMAGE_BYTES,
        topics: 1,
        rate: IMAGE_HZ,
        count: (IMAGE_HZ * (seconds + IMAGE_CAP_S)).ceil() as u64,
        settle_ms: 0,
        keep_all: images == Images::KeepAll,
    };
    let mut r = HolRun {
        system,
        label: match images {
            Images::KeepAll => system.label(),
            Images::KeepLast => format!("{}, images keep-last 10", system.label()),
        },
        wan,
        small,
        image,
        alone: None,
        with_image: None,
        p99_ratio: None,
        small_undelivered_alone: None,
        small_undelivered_with: None,
        overlap: None,
        error: None,
    };
    let mut errors = Vec::new();
    match flows::run(lab, system, wan, &[small], PATH_TIMEOUT) {
        Ok(f) => r.alone = Some(f),
        Err(e) => errors.push(format!("alone: {e}")),
    }
    match flows::run(lab, system, wan, &[image, small], PATH_TIMEOUT) {
        Ok(f) => r.with_image = Some(f),
        Err(e) => errors.push(format!("with the images: {e}")),
    }
    if let (Some(with), Some(alone)) = (
        p99(HolRun::small_of(r.with_image.as_ref())),
        p99(HolRun::small_of(r.alone.as_ref())),
    ) {
        r.p99_ratio = Some(with / alone);
    }
    r.small_undelivered_alone = undelivered(HolRun::small_of(r.alone.as_ref()));
    r.small_undelivered_with = undelivered(HolRun::small_of(r.with_image.as_ref()));
    if r.small_undelivered_alone != Some(0) || r.small_undelivered_with != Some(0) {
        r.p99_ratio = None;
    }
    r.overlap = overlap(
        HolRun::small_of(r.with_image.as_ref()),
        HolRun::image_of(r.with_image.as_ref()),
    );
    if !errors.is_empty() {
        r.error = Some(errors.join("; "));
    }
    r
}

/// The share of `small`'s sending time during which `image` was sending.
fn overlap(small: Option<&FlowResult>, image: Option<&FlowResult>) -> Option<f64> {
    let (s0, s1) = (small?.sending_s?, small?.sent_s?);
    let (i0, i1) = (image?.sending_s?, image?.sent_s?);
    share((s0, s1), (i0, i1))
}

/// The share of span `a` that span `b` covers.
fn share(a: (f64, f64), b: (f64, f64)) -> Option<f64> {
    let len = a.1 - a.0;
    (len > 0.0).then(|| ((a.1.min(b.1) - a.0.max(b.0)).max(0.0) / len).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undelivered_counts_against_what_the_source_sent() {
        let flow = |sent: u64, got: u64| FlowResult {
            name: "small",
            source: serde_json::json!({"sent": sent}),
            sink: serde_json::json!({"counts": {"received": got, "expected": 99}}),
            sending_s: None,
            sent_s: None,
        };
        assert_eq!(undelivered(Some(&flow(40, 40))), Some(0));
        assert_eq!(undelivered(Some(&flow(40, 35))), Some(5));
        assert_eq!(undelivered(None), None);
        let mut broken = flow(1, 1);
        broken.sink = serde_json::Value::Null;
        assert_eq!(undelivered(Some(&broken)), None);
    }

    #[test]
    fn overlap_share() {
        assert_eq!(share((10.0, 20.0), (5.0, 30.0)), Some(1.0));
        assert_eq!(share((10.0, 20.0), (15.0, 30.0)), Some(0.5));
        assert_eq!(share((10.0, 20.0), (25.0, 30.0)), Some(0.0));
        assert_eq!(share((10.0, 10.0), (0.0, 30.0)), None);
    }
}
