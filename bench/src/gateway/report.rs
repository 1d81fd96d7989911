//! bench/GATEWAY.md from the results.

use std::fmt::Write;

use serde::Serialize;

use roam_bench::machine::Machine;

use super::door::Door;
use super::scenarios::{ClientRow, StalledRun, StreamRun, CLIENT_QUEUE_MIB};

#[derive(Serialize)]
pub struct Results {
    pub machine: Machine,
    pub date: String,
    pub commit: String,
    pub quick: bool,
    pub images: Vec<StreamRun>,
    pub kb: Vec<StreamRun>,
    pub stalled: Option<StalledRun>,
    /// Scenarios that failed, and why.
    pub errors: Vec<String>,
}

fn ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.1}"))
}

/// A count with thousands separators: 150,000.
fn count(v: f64) -> String {
    let digits = format!("{:.0}", v.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn met(b: bool) -> &'static str {
    if b {
        "met"
    } else {
        "NOT met"
    }
}

fn image_rows(out: &mut String, run: &StreamRun) {
    for c in &run.clients {
        let f = &c.figures;
        let (first, last, backlog) =
            f.backlog
                .as_ref()
                .map_or(("-".into(), "-".into(), "-"), |b| {
                    (
                        format!("{:.1}", b.first_fifth_ms),
                        format!("{:.1}", b.last_fifth_ms),
                        yes_no(b.backlog),
                    )
                });
        let _ = writeln!(
            out,
            "| {:.0} Hz | {} | {}/{} | {} | {} | {} | {first} -> {last} | {backlog} |",
            run.rate_hz,
            c.door.label(),
            f.received,
            f.sent,
            ms(f.p50_ms),
            ms(f.p99_ms),
            ms(f.max_ms),
        );
    }
}

fn usage_line(run: &StreamRun) -> String {
    format!(
        "{}: gateway {:.0}% of a core (busiest threads: {}), peak RSS {:.0} MiB; this program (publisher and clients) {:.0}%{}",
        run.name,
        run.gateway.cpu_percent,
        run.gateway_threads
            .iter()
            .filter(|t| t.cpu_percent >= 1.0)
            .map(|t| format!("{} {:.0}%", t.thread, t.cpu_percent))
            .collect::<Vec<_>>()
            .join(", "),
        run.gateway.peak_rss_mb,
        run.clients_cpu_percent,
        run.gateway_dropped
            .filter(|n| *n > 0)
            .map_or(String::new(), |n| format!(
                "; the gateway dropped {n} messages for slow clients"
            ))
    )
}

fn client(run: &StreamRun, door: Door) -> Option<&ClientRow> {
    run.clients.iter().find(|c| c.door == door)
}

/// The goals of issue 13, judged on this run.
fn goals(r: &Results) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(run) = r.images.iter().find(|i| i.rate_hz >= 30.0) {
        for door in [Door::RosbridgeCborRaw, Door::RosbridgeCbor] {
            if let Some(b) = client(run, door).and_then(|c| c.figures.backlog.as_ref()) {
                out.push(format!(
                    "no backlog at 30 Hz with {}: {} (median {:.1} -> {:.1} ms)",
                    door.label(),
                    met(!b.backlog),
                    b.first_fifth_ms,
                    b.last_fifth_ms
                ));
            }
        }
    }
    for run in &r.images {
        let period = 1000.0 / run.rate_hz;
        for c in &run.clients {
            if let Some(p99) = c.figures.p99_ms {
                out.push(format!(
                    "p99 under one frame period ({period:.1} ms) at {:.0} Hz with {}: {} ({p99:.1} ms)",
                    run.rate_hz,
                    c.door.label(),
                    met(p99 < period)
                ));
            }
        }
    }
    if let Some(s) = &r.stalled {
        out.push(format!(
            "memory flat with a client that stops reading: {} ({:+.1} MiB over the second half; {:.0} -> peak {:.0} MiB, {:+.0} MiB beyond the {CLIENT_QUEUE_MIB:.0} MiB queue limit)",
            met(s.bounded),
            s.rss_second_half_growth_mib,
            s.rss_start_mib,
            s.rss_peak_mib,
            s.beyond_queue_limit_mib,
        ));
        if let Some(p99) = s.other.figures.p99_ms {
            let period = 1000.0 / s.rate_hz;
            out.push(format!(
                "the other client undisturbed (p99 under {period:.1} ms, nothing lost): {} (p99 {p99:.1} ms, {} lost)",
                met(p99 < period && s.other.figures.lost == 0),
                s.other.figures.lost
            ));
        }
    }
    out
}

fn per_client(run: &StreamRun) -> (f64, f64, f64) {
    let mut rates: Vec<f64> = run
        .clients
        .iter()
        .map(|c| c.figures.received as f64 / run.seconds)
        .collect();
    rates.sort_by(f64::total_cmp);
    let n = rates.len();
    (rates[0], rates[(n - 1) / 2], rates[n - 1])
}

pub fn markdown(r: &Results) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# Gateway: the rosbridge v2 and Foxglove doors under load\n\n\
         Generated by `target/release/roam-gateway-bench{}` (`make bench`); do not edit. A real\n\
         `roam router` and `roam gateway` (default limits) on 127.0.0.1, and WebSocket clients\n\
         written in Rust (tokio-tungstenite) speaking rosbridge v2, each on its own thread.\n\
         Latency is one way: the time a client has the message decoded minus the send time the\n\
         publisher wrote into it (one machine, one clock). How it is measured is below.\n",
        if r.quick { " --quick" } else { "" }
    );

    if !r.images.is_empty() {
        let _ = writeln!(
            o,
            "## Images: 640x480 rgb8 (921,600 data bytes), one publisher, three clients at once\n\n\
             | rate | client | received/sent | p50 ms | p99 ms | max ms | median first fifth -> last fifth, ms | backlog |\n\
             |---|---|---:|---:|---:|---:|---:|---|"
        );
        for run in &r.images {
            image_rows(&mut o, run);
        }
        o.push('\n');
        for run in &r.images {
            let _ = writeln!(o, "- {}", usage_line(run));
        }
        o.push('\n');
    }

    if !r.kb.is_empty() {
        let _ = writeln!(
            o,
            "## 1 KB messages: std_msgs/String of 1000 bytes, to rosbridge JSON clients (`compression: none`) and Foxglove clients\n\n\
             | door | publisher | clients | published/s | delivered/s, all clients | per client min / median / max | lost, all clients | p50 ms | p99 ms (worst client) | backlog | gateway CPU | CPU per message delivered | peak RSS |\n\
             |---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|"
        );
        for run in &r.kb {
            let (lo, mid, hi) = per_client(run);
            let lost: u64 = run.clients.iter().map(|c| c.figures.lost).sum();
            let sent: u64 = run.clients.iter().map(|c| c.figures.sent).sum();
            let mut p50: Vec<f64> = run
                .clients
                .iter()
                .filter_map(|c| c.figures.p50_ms)
                .collect();
            p50.sort_by(f64::total_cmp);
            let p99 = run
                .clients
                .iter()
                .filter_map(|c| c.figures.p99_ms)
                .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
            let backlogged = run
                .clients
                .iter()
                .filter(|c| c.figures.backlog.as_ref().is_some_and(|b| b.backlog))
                .count();
            let _ = writeln!(
                o,
                "| {} | {} | {} | {:.0} | {:.0} | {lo:.0} / {mid:.0} / {hi:.0} | {lost} of {sent} ({:.1}%) | {} | {} | {backlogged} of {} | {:.0}% | {:.1} µs | {:.0} MiB |",
                run.clients.first().map_or("-", |c| c.door.label()),
                if run.rate_hz > 0.0 {
                    format!("{:.0}/s", run.rate_hz)
                } else {
                    "unpaced".into()
                },
                run.clients.len(),
                run.published_rate_hz,
                run.delivered_per_s,
                100.0 * lost as f64 / sent.max(1) as f64,
                ms(p50.get(p50.len().saturating_sub(1) / 2).copied()),
                ms(p99),
                run.clients.len(),
                run.gateway.cpu_percent,
                run.gateway.cpu_percent / 100.0 * 1e6 / run.delivered_per_s.max(1.0),
                run.gateway.peak_rss_mb,
            );
        }
        o.push('\n');
        for run in &r.kb {
            let _ = writeln!(o, "- {}", usage_line(run));
        }
        o.push('\n');
    }

    if let Some(s) = &r.stalled {
        let f = &s.other.figures;
        let _ = writeln!(
            o,
            "## A client that stops reading\n\n\
             A client subscribes to the {:.0} Hz images (JSON) and never reads its socket for {:.0} s,\n\
             while a cbor-raw client of the same topic keeps receiving. Gateway RSS once a second.\n\n\
             | RSS before | peak | end | growth, second half | bounded | peak - before - queue limit | 2 s after it left | other client p50 / p99 / max ms | other client received/sent |\n\
             |---:|---:|---:|---:|---|---:|---:|---:|---:|\n\
             | {:.0} MiB | {:.0} MiB | {:.0} MiB | {:+.1} MiB | {} | {:+.0} MiB | {:.0} MiB | {} / {} / {} | {}/{} |\n\n\
             RSS each second (MiB): {}. Gateway {:.0}% of a core over the window{}.\n",
            s.rate_hz,
            s.seconds,
            s.rss_start_mib,
            s.rss_peak_mib,
            s.rss_end_mib,
            s.rss_second_half_growth_mib,
            yes_no(s.bounded),
            s.beyond_queue_limit_mib,
            s.rss_after_close_mib,
            ms(f.p50_ms),
            ms(f.p99_ms),
            ms(f.max_ms),
            f.received,
            f.sent,
            s.rss_mib
                .iter()
                .map(|v| format!("{v:.0}"))
                .collect::<Vec<_>>()
                .join(", "),
            s.gateway.cpu_percent,
            s.gateway_dropped
                .map_or(String::new(), |n| format!(
                    "; it dropped {n} messages for the stalled client"
                ))
        );
    }

    let g = goals(r);
    if !g.is_empty() {
        let _ = writeln!(o, "## Goals (issue 13), in this run\n");
        for l in g {
            let _ = writeln!(o, "- {l}");
        }
        o.push('\n');
    }
    o += &findings(r);
    if !r.errors.is_empty() {
        let _ = writeln!(o, "## Scenarios that failed\n");
        for e in &r.errors {
            let _ = writeln!(o, "- {e}");
        }
        o.push('\n');
    }
    o += HOW;
    let m = &r.machine;
    let _ = writeln!(
        o,
        "\nMachine: {} ({} cores), Linux {}, {}; commit {}, {}.",
        m.cpu, m.nproc, m.kernel, m.rustc, r.commit, r.date
    );
    o
}

/// What the figures say: this run's numbers, and what was found looking into them (the
/// write-per-frame evidence is from strace on this machine, see the text).
fn findings(r: &Results) -> String {
    let mut o = String::from("## What the figures say\n\n");
    if let Some(i) = r.images.iter().find(|i| i.rate_hz >= 30.0) {
        let worst = i
            .clients
            .iter()
            .filter_map(|c| c.figures.p99_ms)
            .fold(0.0, f64::max);
        let _ = writeln!(
            o,
            "- **Images** reach all three doors at 30 Hz with a p99 of at most {worst:.1} ms \
             (a frame period is 33.3 ms) and {:.0}% of a core for the gateway: converting a \
             921,600-byte image to base64 JSON or CBOR is a fraction of a millisecond \
             (bench/MSG-CODEC.md), so no door builds a backlog at these rates.",
            i.gateway.cpu_percent
        );
    }
    if let Some(k) = r.kb.iter().find(|k| k.clients.len() > 1) {
        let lost: u64 = k.clients.iter().map(|c| c.figures.lost).sum();
        let sent: u64 = k.clients.iter().map(|c| c.figures.sent).sum();
        let _ = writeln!(
            o,
            "- **30 clients of 1 KB messages** ask for {} messages a second; the gateway \
             delivered {} a second with {:.1}% lost (dropped oldest first at each \
             subscription's queue of 100), using {:.0}% of a core while this program's 30 \
             clients and publisher used {:.0}%: the 2-core machine is full, so this run \
             measures the machine as much as the gateway. Between runs on this shared machine \
             the loss ranged from under 1% to about a quarter, with the latency of a full \
             queue (tens of ms) when it is high.",
            count(k.rate_hz * k.clients.len() as f64),
            count(k.delivered_per_s),
            100.0 * lost as f64 / sent.max(1) as f64,
            k.gateway.cpu_percent,
            k.clients_cpu_percent
        );
    }
    if let Some(u) = r.kb.iter().find(|k| k.rate_hz <= 0.0) {
        let _ = writeln!(
            o,
            "- **An unpaced publisher** got {} messages a second into the gateway, which \
             delivered {} a second to one JSON client and dropped the rest at the \
             subscription's queue: rosbridge publishing has no flow control, so a publisher \
             faster than the gateway's way out loses messages (oldest first, counted, the \
             client told) instead of being slowed. The way out costs one system call per \
             message: under this load strace shows every `sendto` of the gateway carrying \
             exactly one 1,055-byte frame, though up to 100 messages wait in the client's \
             outbox (the writer in crates/roam-gateway/src/rosbridge/server.rs sends and \
             flushes each frame on its own). Writing what waits and flushing once would \
             batch small messages; not changed here, reported.",
            count(u.published_rate_hz),
            count(u.delivered_per_s)
        );
    }
    if let Some(s) = &r.stalled {
        let _ = writeln!(
            o,
            "- **A client that stops reading** costs the gateway its queue limit and a \
             little more: RSS rose {:.0} MiB within about three seconds (64 MiB of queued \
             images, the JSON frame being written, allocator slack) and then stayed flat; \
             a 60-second run (`--stalled-seconds 60`) on this machine stayed between 90 and \
             106 MiB. The other client did not notice (p99 {}). After the stalled client \
             left, RSS fell to {:.0} MiB (the allocator keeps part of what was freed: from \
             25 to 88 MiB in the runs made on this machine). The bound is per client: with the defaults (64 MiB, 256 clients) many stalled \
             clients could hold up to 16 GiB, so a gateway open to untrusted clients wants \
             a smaller `client_queue_bytes`.",
            s.rss_peak_mib - s.rss_start_mib,
            ms(s.other.figures.p99_ms) + " ms",
            s.rss_after_close_mib,
        );
    }
    o.push('\n');
    o
}

const HOW: &str = "## How it is measured

- **System.** `roam pki init/issue` and `roam realm new` make a deployment; one `roam router`
  and, per scenario, a fresh `roam gateway` linked to it with the definitions of
  `sensor_msgs/Image`, `std_msgs/Header`, `builtin_interfaces/Time` and `std_msgs/String` in a
  `msg_paths` folder; default `limits:` (per subscription `queue_length` 100, 64 MiB per
  client). Publisher and subscribers are clients of that one gateway (its edge router delivers
  in-process).
- **Publisher.** One WebSocket client `advertise`s the topic and sends rosbridge `publish` ops
  as CBOR binary frames (the image data a CBOR byte string, 921,600 bytes; the gateway turns
  the CBOR into CDR) on a fixed schedule; a message late behind it goes out at once. Images
  carry their send time (the wall clock) in `header.stamp` and a sequence number in
  `header.frame_id`; the 1 KB texts start with `SEQ SEC NANOSEC`.
- **Clients, one row per door.** `rosbridge-json` (`compression: none`): the text frame parsed
  whole with serde_json and the image's base64 data decoded, as a client using it would.
  `rosbridge-cbor`: the frame decoded with minicbor, the pixels copied out. `rosbridge-cbor-raw`:
  the CDR bytes taken from the CBOR frame and the stamp and sequence number read from the CDR
  header. Every client subscribes without `queue_length`, `throttle_rate` or `fragment_size`
  (what roslibpy and roslibjs send by default), turns Nagle's algorithm off (TCP_NODELAY, as
  browsers do; with it on, 1 KB messages waited about 7 ms for ACKs) and runs on its own
  thread and runtime.
- **1 KB runs.** 5000 messages a second to 1 client and to 30 clients (JSON), then the
  publisher unpaced (each message sent as soon as the previous one is on the socket) to 1
  client: the most the gateway takes in and hands out.
- **Window.** Measuring starts once every client has its first message and lasts the
  scenario's time (quick: 5 s per image rate and per 1 KB run, 10 s for the stalled client;
  full: twice that); only messages published in it count. After it the publisher stops and
  clients get up to 3 s to receive what is still on its way; what has not arrived then is lost.
- **Latency.** Receive time (after decoding) minus the stamp: p50, p99 (nearest rank) and max
  over the window's messages. It includes any time the message waited in the publisher's own
  socket, as an application sees it.
- **Backlog.** Latencies in send order; the median of the first fifth against the median of
  the last fifth. Backlog = yes when the last exceeds the first by more than 5 ms and by more
  than 25% (latency grows: a queue builds up), or, for the images, when the last fifth's median
  is over two frame periods (a standing queue: messages wait behind whole other messages).
- **Memory and CPU.** The gateway's `/proc/PID/stat` (utime + stime over the window, percent of
  one core; its busiest threads from `/proc/PID/task/*/stat`) and `/proc/PID/status` VmRSS
  (sampled every 250 ms, peak). CPU per message delivered = the gateway's CPU time over the
  messages all clients received. For the stalled client, VmRSS once a second; bounded = it
  grows by less than 5 MiB over the second half of the window (it stopped growing); next to
  it, how far the peak is above where it started beyond the 64 MiB per-client queue limit
  (`client_queue_bytes`). The bench itself (publisher and clients) shares the 2 cores with the
  gateway; its CPU is given next to the gateway's.
";

#[cfg(test)]
mod tests {
    #[test]
    fn counts_have_thousands_separators() {
        assert_eq!(super::count(150_000.0), "150,000");
        assert_eq!(super::count(999.4), "999");
        assert_eq!(super::count(1_234_567.0), "1,234,567");
        assert_eq!(super::count(0.0), "0");
    }
}
