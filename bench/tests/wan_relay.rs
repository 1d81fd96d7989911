//! End-to-end checks of `roam-wan-relay`: the built binary relays UDP and TCP on loopback with
//! the configured delay (checked as a lower bound only), loss, and an intact TCP byte stream;
//! it is stopped by PID with SIGTERM and writes its stats. Ports 32300-32399 on 127.0.0.1: below the kernel's ephemeral range (32768+), where a socket bound to port 0 elsewhere could take them, and between the DDS ports of domains 99 and 100.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_roam-wan-relay");

/// A running relay process; stopped by PID (SIGTERM, then SIGKILL) when dropped.
struct Relay {
    child: Child,
}

impl Relay {
    fn start(args: &[&str]) -> Relay {
        let mut child = Command::new(BIN)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn roam-wan-relay");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let mut relay = Relay { child };
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(line) if line.trim() == "ready" => relay,
            other => {
                relay.kill();
                panic!("relay did not print ready: {other:?}");
            }
        }
    }

    fn pid(&self) -> String {
        self.child.id().to_string()
    }

    /// SIGTERM by PID; waits for a clean exit (which writes --stats-json).
    fn stop(mut self) {
        let ok = Command::new("kill")
            .args(["-TERM", &self.pid()])
            .status()
            .expect("run kill")
            .success();
        assert!(ok, "kill -TERM {}", self.pid());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "relay exited with {status}");
                return;
            }
            if Instant::now() > deadline {
                self.kill();
                panic!("relay did not exit on SIGTERM");
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill(); // SIGKILL to this child's PID
        let _ = self.child.wait();
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = Command::new("kill").args(["-TERM", &self.pid()]).status();
            thread::sleep(Duration::from_millis(200));
            self.kill();
        }
    }
}

fn stats_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("roam-wan-relay-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    let _ = std::fs::remove_file(&p);
    p
}

fn read_stats(p: &PathBuf) -> serde_json::Value {
    let text = std::fs::read_to_string(p).expect("stats file written on SIGTERM");
    serde_json::from_str(&text).expect("stats are JSON")
}

#[test]
fn udp_round_trip_takes_at_least_twice_the_delay() {
    let echo = UdpSocket::bind("127.0.0.1:32301").unwrap();
    echo.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let echo_thread = thread::spawn(move || {
        let mut buf = [0u8; 2048];
        while let Ok((n, from)) = echo.recv_from(&mut buf) {
            if &buf[..n] == b"quit" {
                break;
            }
            echo.send_to(&buf[..n], from).unwrap();
        }
    });
    let relay = Relay::start(&[
        "--udp",
        "127.0.0.1:32300=127.0.0.1:32301",
        "--delay-ms",
        "20",
        "--seed",
        "1",
    ]);
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client.connect("127.0.0.1:32300").unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut buf = [0u8; 2048];
    for i in 0u32..30 {
        let sent = Instant::now();
        client.send(&i.to_be_bytes()).unwrap();
        let n = client.recv(&mut buf).expect("echo through the relay");
        let rtt = sent.elapsed();
        assert_eq!(&buf[..n], &i.to_be_bytes());
        // 20 ms each way through the relay: never less than 40 ms (no upper bound asserted).
        assert!(
            rtt >= Duration::from_millis(40),
            "packet {i}: round trip {rtt:?}"
        );
    }
    relay.stop();
    let quit = UdpSocket::bind("127.0.0.1:0").unwrap();
    quit.send_to(b"quit", "127.0.0.1:32301").unwrap();
    echo_thread.join().unwrap();
}

#[test]
fn udp_loss_fraction_is_close_to_the_setting() {
    const N: u32 = 2000;
    let sink = UdpSocket::bind("127.0.0.1:32311").unwrap();
    sink.set_read_timeout(Some(Duration::from_millis(1500)))
        .unwrap();
    let stats = stats_path("udp-loss.json");
    let relay = Relay::start(&[
        "--udp",
        "127.0.0.1:32310=127.0.0.1:32311",
        "--delay-ms",
        "2",
        "--loss",
        "0.2",
        "--seed",
        "1234",
        "--stats-json",
        stats.to_str().unwrap(),
    ]);
    let counter = thread::spawn(move || {
        let mut seen = vec![false; N as usize];
        let mut buf = [0u8; 2048];
        // Ends after 1.5 s without a packet.
        while let Ok(n) = sink.recv(&mut buf) {
            assert_eq!(n, 64);
            let i = u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize;
            assert!(!seen[i], "packet {i} delivered twice");
            seen[i] = true;
        }
        seen.iter().filter(|s| **s).count()
    });
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    for i in 0..N {
        let mut pkt = [0u8; 64];
        pkt[..4].copy_from_slice(&i.to_be_bytes());
        client.send_to(&pkt, "127.0.0.1:32310").unwrap();
        if i % 50 == 49 {
            thread::sleep(Duration::from_millis(2)); // stay far from socket buffer limits
        }
    }
    let received = counter.join().unwrap();
    let loss = 1.0 - received as f64 / N as f64;
    assert!(
        (0.1..=0.3).contains(&loss),
        "loss fraction {loss} ({received} of {N} arrived)"
    );
    relay.stop();

    let s = read_stats(&stats);
    let l = &s["listeners"][0];
    assert_eq!(l["proto"], "udp");
    assert_eq!(l["opened"], 1);
    let c2t = &l["client_to_target"];
    let fwd = c2t["forwarded_packets"].as_u64().unwrap();
    let lost = c2t["lost_packets"].as_u64().unwrap();
    assert_eq!(
        fwd + lost,
        N as u64,
        "every packet forwarded or counted lost: {c2t}"
    );
    assert_eq!(fwd, received as u64);
    assert_eq!(c2t["forwarded_bytes"].as_u64().unwrap(), fwd * 64);
    assert_eq!(s["config"]["seed"], 1234);
}

#[test]
fn udp_flows_expire_when_idle_and_are_capped() {
    let sink = UdpSocket::bind("127.0.0.1:32341").unwrap();
    sink.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let stats = stats_path("udp-flows.json");
    let relay = Relay::start(&[
        "--udp",
        "127.0.0.1:32340=127.0.0.1:32341",
        "--max-flows",
        "1",
        "--idle-timeout-s",
        "0.5",
        "--stats-json",
        stats.to_str().unwrap(),
    ]);
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut buf = [0u8; 16];
    a.send_to(b"a1", "127.0.0.1:32340").unwrap();
    let n = sink.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"a1");
    // The table holds one flow: b's datagram is dropped while a's flow lives.
    b.send_to(b"b1", "127.0.0.1:32340").unwrap();
    thread::sleep(Duration::from_millis(1500));
    // a's flow has expired: b gets the slot.
    b.send_to(b"b2", "127.0.0.1:32340").unwrap();
    let n = sink.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"b2");
    relay.stop();
    let s = read_stats(&stats);
    let l = &s["listeners"][0];
    assert_eq!(l["opened"], 2, "{l}");
    assert_eq!(l["refused"], 1, "{l}");
    assert!(l["closed"].as_u64().unwrap() >= 1, "{l}");
    assert_eq!(l["client_to_target"]["overflow_packets"], 1, "{l}");
    assert_eq!(l["client_to_target"]["forwarded_packets"], 2, "{l}");
}

/// Sends `len` patterned bytes through the relay to an echo server, half-closes, and checks
/// the echo comes back complete and in order. Returns (time for the first byte to reach the
/// server, time for the first echoed byte to come back).
fn tcp_echo_through(relay_port: u16, server_port: u16, len: usize) -> (Duration, Duration) {
    let server = TcpListener::bind(("127.0.0.1", server_port)).unwrap();
    let (first_tx, first_rx) = mpsc::channel::<Instant>();
    let server_thread = thread::spawn(move || {
        let (mut s, _) = server.accept().unwrap();
        let mut buf = vec![0u8; 64 * 1024];
        let mut first = true;
        loop {
            let n = s.read(&mut buf).unwrap();
            if first {
                first_tx.send(Instant::now()).unwrap();
                first = false;
            }
            if n == 0 {
                break; // the client's FIN came through the relay
            }
            s.write_all(&buf[..n]).unwrap();
        }
        s.shutdown(Shutdown::Write).unwrap();
    });
    let pattern = |i: usize| (i.wrapping_mul(31) ^ (i >> 8)) as u8;
    let mut client = TcpStream::connect(("127.0.0.1", relay_port)).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut writer = client.try_clone().unwrap();
    let started = Instant::now();
    let writer_thread = thread::spawn(move || {
        let data: Vec<u8> = (0..len).map(pattern).collect();
        for chunk in data.chunks(10_000) {
            writer.write_all(chunk).unwrap();
        }
        writer.shutdown(Shutdown::Write).unwrap();
    });
    let mut got = Vec::with_capacity(len);
    let mut buf = vec![0u8; 64 * 1024];
    let mut first_back = None;
    loop {
        let n = client.read(&mut buf).expect("read the echo");
        if n == 0 {
            break;
        }
        first_back.get_or_insert_with(|| started.elapsed());
        got.extend_from_slice(&buf[..n]);
    }
    writer_thread.join().unwrap();
    server_thread.join().unwrap();
    let first_at_server = first_rx.recv().unwrap() - started;
    assert_eq!(got.len(), len, "every byte came back");
    if let Some(i) = (0..len).find(|&i| got[i] != pattern(i)) {
        panic!("byte {i} out of order or corrupted");
    }
    (first_at_server, first_back.unwrap())
}

#[test]
fn tcp_stream_is_delayed_complete_and_in_order() {
    let relay = Relay::start(&[
        "--tcp",
        "127.0.0.1:32320=127.0.0.1:32321",
        "--delay-ms",
        "20",
        "--seed",
        "7",
    ]);
    let (one_way, round_trip) = tcp_echo_through(32320, 32321, 2_000_000);
    // Lower bounds only. The connect itself is not delayed (the relay accepts at once), the
    // first data byte is: 20 ms to the server, 20 ms more back.
    assert!(
        one_way >= Duration::from_millis(20),
        "first byte reached the server after {one_way:?}"
    );
    assert!(
        round_trip >= Duration::from_millis(40),
        "first echo after {round_trip:?}"
    );
    relay.stop();
}

#[test]
fn tcp_stream_survives_loss_stalls_and_jitter() {
    let stats = stats_path("tcp-loss.json");
    let relay = Relay::start(&[
        "--tcp",
        "127.0.0.1:32330=127.0.0.1:32331",
        "--delay-ms",
        "5",
        "--jitter-ms",
        "4",
        "--loss",
        "0.2",
        "--rto-ms",
        "30",
        "--seed",
        "99",
        "--stats-json",
        stats.to_str().unwrap(),
    ]);
    tcp_echo_through(32330, 32331, 1_000_000);
    relay.stop();
    let s = read_stats(&stats);
    let l = &s["listeners"][0];
    assert_eq!(l["proto"], "tcp");
    assert_eq!(l["opened"], 1);
    assert_eq!(l["closed"], 1);
    for dir in ["client_to_target", "target_to_client"] {
        assert_eq!(l[dir]["forwarded_bytes"], 1_000_000, "{dir}");
        assert_eq!(
            l[dir]["lost_packets"], 0,
            "{dir}: streams stall, never drop"
        );
    }
    let stalls = l["client_to_target"]["stalled_chunks"].as_u64().unwrap()
        + l["target_to_client"]["stalled_chunks"].as_u64().unwrap();
    assert!(stalls > 0, "with loss 0.2 some chunks stall: {l}");
    assert_eq!(s["config"]["rto_ms"], 30.0);
}

#[test]
fn udp_flows_of_two_listeners_share_one_bottleneck() {
    // Two paths through one relay, 1 Mbit/s and a 20-packet queue between them: bursts from
    // both overflow the one queue, each path loses datagrams at the bottleneck, and the relay
    // counts them apart from random loss. Counts only, no timing.
    const N: u32 = 400;
    let stats = stats_path("udp-bottleneck.json");
    let sinks: Vec<UdpSocket> = ["127.0.0.1:32361", "127.0.0.1:32363"]
        .iter()
        .map(|a| {
            let s = UdpSocket::bind(a).unwrap();
            s.set_read_timeout(Some(Duration::from_millis(1500)))
                .unwrap();
            s
        })
        .collect();
    let relay = Relay::start(&[
        "--udp",
        "127.0.0.1:32360=127.0.0.1:32361",
        "--udp",
        "127.0.0.1:32362=127.0.0.1:32363",
        "--delay-ms",
        "1",
        "--rate-mbit",
        "1",
        "--bottleneck-packets",
        "20",
        "--stats-json",
        stats.to_str().unwrap(),
        "--stats-interval-s",
        "0.1",
    ]);
    let counters: Vec<_> = sinks
        .into_iter()
        .map(|sink| {
            thread::spawn(move || {
                let mut buf = [0u8; 2048];
                let mut n = 0u64;
                // Ends after 1.5 s without a datagram (the queue drains in 160 ms).
                while sink.recv(&mut buf).is_ok() {
                    n += 1;
                }
                n
            })
        })
        .collect();
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    for _ in 0..N {
        a.send_to(&[1u8; 1000], "127.0.0.1:32360").unwrap();
        b.send_to(&[2u8; 1000], "127.0.0.1:32362").unwrap();
    }
    let received: Vec<u64> = counters.into_iter().map(|c| c.join().unwrap()).collect();
    // A snapshot written while running says so.
    let running = read_stats(&stats);
    assert_eq!(running["last"], false, "{running}");
    relay.stop();

    let s = read_stats(&stats);
    assert_eq!(s["last"], true);
    assert_eq!(s["config"]["rate_mbit"], 1.0);
    assert_eq!(s["config"]["bottleneck_packets"], 20);
    let mut forwarded = 0;
    let mut dropped = 0;
    for (i, l) in s["listeners"].as_array().unwrap().iter().enumerate() {
        let c2t = &l["client_to_target"];
        let fwd = c2t["forwarded_packets"].as_u64().unwrap();
        let drop = c2t["bottleneck_dropped_packets"].as_u64().unwrap();
        assert_eq!(fwd + drop, N as u64, "listener {i}: {c2t}");
        assert_eq!(c2t["lost_packets"], 0, "no random loss configured");
        assert!(
            drop > 0,
            "listener {i} lost datagrams in the shared queue: {c2t}"
        );
        assert_eq!(fwd, received[i], "listener {i}");
        forwarded += fwd;
        dropped += drop;
    }
    let bn = &s["bottleneck"]["client_to_target"];
    assert_eq!(bn["sent_packets"], forwarded, "{bn}");
    assert_eq!(bn["dropped_packets"], dropped, "{bn}");
    assert_eq!(bn["offered_packets"], 2 * N as u64);
    assert_eq!(bn["max_backlog_packets"], 20, "{bn}");
    let waited: u64 = bn["wait_buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b[1].as_u64().unwrap())
        .sum();
    assert_eq!(waited, forwarded, "one wait per datagram sent");
    assert_eq!(s["bottleneck"]["target_to_client"]["offered_packets"], 0);
}

/// A datagram larger than the path's MTU is dropped and counted; one that fits passes.
#[test]
fn udp_datagrams_above_the_mtu_are_dropped() {
    let sink = UdpSocket::bind("127.0.0.1:32381").unwrap();
    sink.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let stats = stats_path("mtu.json");
    let relay = Relay::start(&[
        "--udp",
        "127.0.0.1:32380=127.0.0.1:32381",
        "--mtu",
        "1500",
        "--stats-json",
        stats.to_str().unwrap(),
    ]);
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client.connect("127.0.0.1:32380").unwrap();
    // 1473 bytes make a 1501-byte IP packet: too big; 1472 fit exactly.
    client.send(&[1u8; 1473]).unwrap();
    client.send(&[2u8; 6000]).unwrap();
    client.send(&[3u8; 1472]).unwrap();
    let mut buf = vec![0u8; 65536];
    let n = sink.recv(&mut buf).expect("the datagram that fits");
    assert_eq!((n, buf[0]), (1472, 3));
    relay.stop();
    let s = read_stats(&stats);
    let dir = &s["listeners"][0]["client_to_target"];
    assert_eq!(dir["too_big_packets"], 2, "{s}");
    assert_eq!(dir["forwarded_packets"], 1, "{s}");
}

#[test]
fn bad_arguments_fail_before_ready() {
    let out = Command::new(BIN)
        .args(["--udp", "127.0.0.1:32390=127.0.0.1:32391", "--loss", "1.5"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--loss"));
    assert!(out.stdout.is_empty());
    let out = Command::new(BIN).output().unwrap();
    assert!(!out.status.success(), "nothing to relay is an error");
    for (args, says) in [
        (
            &[
                "--tcp",
                "127.0.0.1:32392=127.0.0.1:32393",
                "--rate-mbit",
                "10",
            ][..],
            "UDP only",
        ),
        (
            &[
                "--udp",
                "127.0.0.1:32392=127.0.0.1:32393",
                "--bottleneck-packets",
                "5",
            ][..],
            "--rate-mbit",
        ),
        (
            &[
                "--udp",
                "127.0.0.1:32392=127.0.0.1:32393",
                "--rate-mbit",
                "0",
            ][..],
            "--rate-mbit",
        ),
        (
            &[
                "--udp",
                "127.0.0.1:32392=127.0.0.1:32393",
                "--rate-mbit",
                "5",
                "--bottleneck-bytes",
                "100",
            ][..],
            "--bottleneck-bytes",
        ),
        (
            &["--udp", "127.0.0.1:32392=127.0.0.1:32393", "--mtu", "1000"][..],
            "--mtu",
        ),
    ] {
        let out = Command::new(BIN).args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}: not ready");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
