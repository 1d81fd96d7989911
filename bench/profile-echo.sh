#!/usr/bin/env bash
# Profiles one E1 row by hand: the echo of SIZE-byte CompressedImage messages between two
# roam proxies (one listening, one dialing: proxy to proxy), between two Zenoh bridges over
# TCP, or within one DDS domain (native), with the lab's load generator and CycloneDDS
# settings, on loopback. Prints the round trip (median, p99) and, with a mode, what perf saw
# in the two middle processes. Not part of CI; needs `perf` (Debian: linux-perf).
#
#   bench/profile-echo.sh [roam|router|zenoh|native] [SIZE] [COUNT] [MODE]
#                                           router: proxy - `roam router` - proxy, both proxies
#                                           dialing the router (E1's "1 router" row)
#   LINKS=tcp bench/profile-echo.sh router  the same over TCP links (E1's "TCP links" row)
#   LOAD=stream bench/profile-echo.sh ...   E2's load instead: COUNT std_msgs/String messages of
#                                           SIZE characters, reliable keep-all, as fast as the
#                                           source can write; prints the sink's rate
#   RATE=N LOAD=stream ...                  the same at N messages/s: below saturation the CPU
#                                           per message varies far less between runs
#
#   MODE  (none)    the round trip only
#         stat      per thread of each proxy/bridge: context switches, moves between CPUs
#                   (perf's cpu-migrations: a moved thread runs with cold caches), system
#                   calls, CPU time, divided by the round trips (perf stat --per-thread); and
#                   the CPU of the source and the sink (native too: what the ends cost
#                   without a bridge)
#         record    call graphs of both proxies (perf record, DWARF unwinding) into
#                   $OUT/perf.data; read with `perf report -i $OUT/perf.data`; the CPU by
#                   async task and the copies by caller go to $OUT/tasks.txt (perf_tasks.py)
#         sched     200 ms of every system call and scheduler switch/wake-up on the machine
#                   into $OUT/sched.txt: the chain of threads one message passes through
#
#   LINK  options of the proxies' links, as in their file's link: section (for example
#         LINK='max_udp_payload_bytes: 9000')
#   ROUTER_ARGS  more `roam router` options for the router row (for example
#         ROUTER_ARGS='--worker-threads 2')
#   BIN   directory with roam and roam-loadgen [target/profiling if built, else target/release]
#   OUT   scratch directory [/tmp/roam-profile-echo]
#   ZENOH the roam-zenoh-bridge binary [the cached build of bench/zenoh-bridge/build.sh]
#
# `cargo build --profile profiling -p roam -p roam-bench` gives symbols with line tables.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
system="${1:-roam}"; size="${2:-8192}"; count="${3:-3000}"; mode="${4:-}"
load="${LOAD:-echo}"
case "$load" in
echo) gen=(--type compressed_image --size "$size" --echo) ;;
stream) gen=(--type string --size "$size" --count "$count" --keep-all ${RATE:+--rate "$RATE"}) ;;
*) echo "LOAD: echo or stream" >&2; exit 2 ;;
esac
bin="${BIN:-$here/target/profiling}"
[[ -x "$bin/roam" ]] || bin="$here/target/release"
out="${OUT:-/tmp/roam-profile-echo}"
zenoh="${ZENOH:-${ROAM_BENCH_CACHE:-$HOME/.cache/roam-bench}/zenoh-target/release/roam-zenoh-bridge}"
topic=/roam_lab/profile
rm -rf "$out"; mkdir -p "$out"
export CYCLONEDDS_URI='<CycloneDDS><Domain><General><Interfaces><NetworkInterface name="lo"/></Interfaces><AllowMulticast>false</AllowMulticast></General><Discovery><Peers><Peer address="127.0.0.1"/></Peers><ParticipantIndex>auto</ParticipantIndex><MaxAutoParticipantIndex>50</MaxAutoParticipantIndex></Discovery></Domain></CycloneDDS>'
export RUST_LOG=warn

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

# Waits up to 20 s for a line in a log.
wait_line() { for _ in $(seq 200); do grep -q "$2" "$1" && return 0; sleep 0.1; done; echo "no '$2' in $1" >&2; exit 1; }

proxy_yaml() { # id domain export import listen|upstream
    cat <<EOF
id: $1
pki: $out/pki
dds: {domain: $2, interfaces: [lo], peers: [127.0.0.1]}
realms: {lab: $out/lab.realm}
encrypt_payloads: true
${LINK:+link: {$LINK\}}
exports:
  - topic: $3
    realm: lab
imports:
  - topic: $4
    realm: lab
$5
EOF
}

middle=(); labels=()
case "$system" in
roam)
    "$bin/roam" pki init --dir "$out/pki" >/dev/null
    for id in proxy-a proxy-b; do "$bin/roam" pki issue $id --dir "$out/pki" --role router >/dev/null; done
    "$bin/roam" realm new lab --out "$out/lab.realm" >/dev/null
    proxy_yaml proxy-b 62 "$topic/echo" "$topic" "listen: 127.0.0.1:32281" >"$out/proxy-b.yaml"
    proxy_yaml proxy-a 61 "$topic" "$topic/echo" "upstream: [127.0.0.1:32281]" >"$out/proxy-a.yaml"
    "$bin/roam" proxy -c "$out/proxy-b.yaml" >"$out/proxy-b.log" 2>&1 & pids+=($!); middle+=($!); labels+=(proxy-b)
    wait_line "$out/proxy-b.log" listening
    "$bin/roam" proxy -c "$out/proxy-a.yaml" >"$out/proxy-a.log" 2>&1 & pids+=($!); middle+=($!); labels+=(proxy-a)
    domains=(61 62) ;;
router)
    scheme=; [[ "${LINKS:-quic}" == tcp ]] && scheme=tcp://
    "$bin/roam" pki init --dir "$out/pki" >/dev/null
    for id in proxy-a proxy-b r1; do "$bin/roam" pki issue $id --dir "$out/pki" --role router >/dev/null; done
    "$bin/roam" realm new lab --out "$out/lab.realm" >/dev/null
    "$bin/roam" router --id r1 --pki "$out/pki" --status-interval 0 --listen 127.0.0.1:32283 \
        ${scheme:+--listen-tcp 127.0.0.1:32283} ${ROUTER_ARGS:-} >"$out/router.log" 2>&1 & pids+=($!); middle+=($!); labels+=(router)
    wait_line "$out/router.log" listening
    proxy_yaml proxy-b 62 "$topic/echo" "$topic" "upstream: [${scheme}127.0.0.1:32283]" >"$out/proxy-b.yaml"
    proxy_yaml proxy-a 61 "$topic" "$topic/echo" "upstream: [${scheme}127.0.0.1:32283]" >"$out/proxy-a.yaml"
    "$bin/roam" proxy -c "$out/proxy-b.yaml" >"$out/proxy-b.log" 2>&1 & pids+=($!); middle+=($!); labels+=(proxy-b)
    "$bin/roam" proxy -c "$out/proxy-a.yaml" >"$out/proxy-a.log" 2>&1 & pids+=($!); middle+=($!); labels+=(proxy-a)
    domains=(61 62) ;;
zenoh)
    [[ -x "$zenoh" ]] || { echo "no Zenoh bridge at $zenoh (bench/zenoh-bridge/build.sh)" >&2; exit 1; }
    "$zenoh" --domain 62 --listen tcp/127.0.0.1:32282 >"$out/zenoh-b.log" 2>&1 & pids+=($!); middle+=($!); labels+=(zenoh-b)
    wait_line "$out/zenoh-b.log" ready
    "$zenoh" --domain 61 --connect tcp/127.0.0.1:32282 >"$out/zenoh-a.log" 2>&1 & pids+=($!); middle+=($!); labels+=(zenoh-a)
    wait_line "$out/zenoh-a.log" ready
    domains=(61 62) ;;
native) domains=(63 63) ;;
*) echo "system: roam, router, zenoh or native" >&2; exit 2 ;;
esac

"$bin/roam-loadgen" sink --domain "${domains[1]}" --topic $topic "${gen[@]}" \
    >"$out/sink.json" 2>"$out/sink.log" & pids+=($!); sink=$!
wait_line "$out/sink.json" ready
if [[ -n "$mode" && "$mode" != stat && ${#middle[@]} -eq 0 ]]; then echo "native has no middle processes to profile" >&2; exit 2; fi
# perf attaches to the threads that exist when it starts (`-p` follows no thread made later),
# and a proxy or bridge makes some of its threads (a second CycloneDDS instance with its own
# receive thread) when the source's topic first appears: a source that only warms the path up
# (`--count 0`: warm-up messages, which the sink reflects and never counts) makes them first.
if [[ -n "$mode" ]]; then
    "$bin/roam-loadgen" source --domain "${domains[0]}" --topic $topic "${gen[@]}" --count 0 \
        >"$out/warmup.json" 2>"$out/warmup.err" || { echo "warm-up failed: $out/warmup.err" >&2; exit 1; }
fi
list=$(IFS=,; echo "${middle[*]:-}")
profiler=
source_cmd=("$bin/roam-loadgen")
case "$mode" in
"") ;;
stat) # The middle processes by thread; the source and sink whole: what the ends cost is what
      # the proxies and the ends share on these cores.
      if [[ -n "$list" ]]; then
          perf stat --per-thread -e context-switches,cpu-migrations,raw_syscalls:sys_enter,task-clock -p "$list" -o "$out/stat.txt" & profiler=$!
      else : >"$out/stat.txt"; fi
      perf stat -e task-clock -p "$sink" -o "$out/sink.stat" & ends=$!
      source_cmd=(perf stat -e task-clock -o "$out/source.stat" -- "$bin/roam-loadgen") ;;
record) perf record -F 4999 -g --call-graph dwarf,16384 -p "$list" -o "$out/perf.data" >"$out/perf.log" 2>&1 & profiler=$! ;;
sched) (sleep 1; perf record -a -e raw_syscalls:sys_enter,raw_syscalls:sys_exit,sched:sched_switch,sched:sched_wakeup \
        -o "$out/sched.data" -- sleep 0.2 >"$out/perf.log" 2>&1) & profiler=$! ;;
*) echo "mode: stat, record or sched" >&2; exit 2 ;;
esac
# Which process each thread belongs to (perf stat --per-thread names threads only).
for i in "${!middle[@]}"; do
    for t in /proc/"${middle[$i]}"/task/*; do echo "${t##*/} ${labels[$i]}"; done
done >"$out/tids.txt"
"${source_cmd[@]}" source --domain "${domains[0]}" --topic $topic "${gen[@]}" \
    --count "$count" >"$out/source.json" 2>"$out/source.err"
[[ "$load" == echo ]] || wait "$sink" || true
if [[ -n "$profiler" ]]; then
    [[ "$mode" == sched ]] || kill -INT "$profiler"
    wait "$profiler" || true
fi
if [[ "$mode" == stat ]]; then
    kill -INT "$ends" 2>/dev/null || true  # ends by itself when the sink exits
    wait "$ends" || true
fi
python3 - "$out/source.json" "$out/sink.json" "$system" "$size" "$load" <<'EOF'
import json, sys
if sys.argv[5] == "echo":
    r = json.load(open(sys.argv[1]))["rtt"]
    print(f"{sys.argv[3]} {sys.argv[4]} B: round trip median {r['median_us']:.0f} us, p99 {r['p99_us']:.0f} us ({r['count']} echoes)")
else:
    line = [l for l in open(sys.argv[2]) if l.startswith("{")][-1]
    r = json.loads(line)
    c = r["counts"]
    print(f"{sys.argv[3]} {sys.argv[4]} B: {r['rate']:.0f} messages/s received, {c['received']} of {c['expected']}, one-way median {r['one_way']['median_us']:.0f} us")
EOF
case "$mode" in
stat)
    python3 - "$out/stat.txt" "$count" "$load" "$out/source.stat" "$out/sink.stat" "$out/tids.txt" <<'EOF'
import re, sys
owner = dict(l.split() for l in open(sys.argv[6]) if l.strip())
def task_ms(path):
    for line in open(path):
        m = re.match(r"\s*([\d.,]+)\s+msec\s+task-clock", line)
        if m:
            return float(m.group(1).replace(",", ""))
    return 0.0
per = {}
for line in open(sys.argv[1]):
    m = re.match(r"\s*(\S+)-(\d+)\s+([\d.,]+)\s+(?:msec\s+)?(context-switches|cpu-migrations|raw_syscalls:sys_enter|task-clock)", line)
    if m:
        ev = per.setdefault(f"{owner.get(m.group(2), '?')}/{m.group(1)}", {})
        ev[m.group(4)] = ev.get(m.group(4), 0.0) + float(m.group(3).replace(",", ""))
n = int(sys.argv[2])
total = {}
print(f"per {'round trip' if sys.argv[3] == 'echo' else 'message'}, the middle processes, by process/thread name:")
for name, v in sorted(per.items(), key=lambda kv: -kv[1].get("task-clock", 0)):
    for k, x in v.items():
        total[k] = total.get(k, 0.0) + x
    if v.get("task-clock", 0) < 1:
        continue
    print(f"  {name:32} {v.get('context-switches', 0) / n:5.2f} switches {v.get('cpu-migrations', 0) / n:5.2f} moves {v.get('raw_syscalls:sys_enter', 0) / n:5.1f} syscalls {v.get('task-clock', 0) * 1000 / n:6.1f} us CPU")
if per:
    print(f"  {'all threads':32} {total.get('context-switches', 0) / n:5.2f} switches {total.get('cpu-migrations', 0) / n:5.2f} moves {total.get('raw_syscalls:sys_enter', 0) / n:5.1f} syscalls {total.get('task-clock', 0) * 1000 / n:6.1f} us CPU")
src, snk = task_ms(sys.argv[4]) * 1000 / n, task_ms(sys.argv[5]) * 1000 / n
mid = total.get("task-clock", 0) * 1000 / n
print(f"the ends: source {src:.1f} us, sink {snk:.1f} us CPU; with the middle {src + snk + mid:.1f} us per message")
EOF
    ;;
sched) perf script -i "$out/sched.data" -F comm,pid,tid,cpu,time,event,trace 2>/dev/null | grep -v '^ *perf ' >"$out/sched.txt" || true
       echo "timeline: $out/sched.txt" ;;
record) perf script -i "$out/perf.data" -F comm,pid,tid,ip,sym --no-inline >"$out/script.txt" 2>/dev/null
        python3 "$here/bench/perf_tasks.py" "$out/script.txt" --per "$count" >"$out/tasks.txt"
        sed -n '3,12p' "$out/tasks.txt"
        echo "profile: perf report -i $out/perf.data; by task: $out/tasks.txt" ;;
esac
