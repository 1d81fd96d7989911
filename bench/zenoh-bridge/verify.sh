#!/usr/bin/env bash
# End-to-end check of roam-zenoh-bridge (by hand, not in CI):
#   talker.py (DDS domain A) -> bridge A --zenoh TCP or QUIC--> bridge B -> listener.py (domain B)
# with ros_announce.py announcing the plain-DDS talker and listener on ros_discovery_info
# (the ros2dds plugin routes nothing else). Prints a summary and exits non-zero when nothing
# arrived, samples were duplicated, or a bridge did not exit cleanly on SIGTERM.
#
#   verify.sh tcp|quic [SECONDS]      (default 10 s of traffic at 100 msg/s)
#
# Uses DDS domains 51/52 (tcp) or 53/54 (quic) and port 40101 (tcp) or 40102 (quic), on
# loopback only. BIN=... overrides the binary (default: what build.sh prints).
set -euo pipefail

proto="${1:?usage: verify.sh tcp|quic [SECONDS]}"
secs="${2:-10}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="$here/../../crates/roam-dds/tests/py"
bin="${BIN:-$("$here/build.sh" | tail -n1)}"

case "$proto" in
    tcp) dom_a=51 dom_b=52 ep=tcp/127.0.0.1:40101 ;;
    quic) dom_a=53 dom_b=54 ep=quic/127.0.0.1:40102 ;;
    *) echo "usage: verify.sh tcp|quic [SECONDS]" >&2; exit 2 ;;
esac

unset LD_LIBRARY_PATH
export CYCLONEDDS_URI='<CycloneDDS><Domain><General><Interfaces><NetworkInterface name="lo"/></Interfaces><AllowMulticast>false</AllowMulticast></General><Discovery><Peers><Peer address="127.0.0.1"/></Peers><ParticipantIndex>auto</ParticipantIndex><MaxAutoParticipantIndex>50</MaxAutoParticipantIndex></Discovery></Domain></CycloneDDS>'

work="$(mktemp -d /tmp/roam-zenoh-verify.XXXXXX)"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT

wait_ready() { # FILE
    for _ in $(seq 100); do grep -q '^ready$' "$1" 2>/dev/null && return 0; sleep 0.1; done
    echo "no 'ready' in $1" >&2; exit 1
}

tls=()
[[ "$proto" == quic ]] && tls=(--tls-dir "$work/tls")

"$bin" --domain "$dom_a" --listen "$ep" "${tls[@]}" >"$work/bridge-a.out" 2>"$work/bridge-a.err" &
bridge_a=$!; pids+=("$bridge_a")
wait_ready "$work/bridge-a.out"
"$bin" --domain "$dom_b" --connect "$ep" "${tls[@]}" >"$work/bridge-b.out" 2>"$work/bridge-b.err" &
bridge_b=$!; pids+=("$bridge_b")
wait_ready "$work/bridge-b.out"

python3 "$here/ros_announce.py" "$dom_a" rt/chatter >"$work/announce-a.out" 2>&1 & pids+=($!)
python3 "$here/ros_announce.py" "$dom_b" rt/chatter >"$work/announce-b.out" 2>&1 & pids+=($!)
python3 "$py/listener.py" "$dom_b" rt/chatter >"$work/listener.out" 2>&1 & pids+=($!)
wait_ready "$work/listener.out"
python3 "$py/talker.py" "$dom_a" rt/chatter hello --period 0.01 >"$work/talker.out" 2>&1 &
talker=$!; pids+=("$talker")
sleep "$secs"
kill "$talker"; wait "$talker" 2>/dev/null || true
sleep 1

kill "$bridge_a" "$bridge_b"
rc_a=0; wait "$bridge_a" || rc_a=$?
rc_b=0; wait "$bridge_b" || rc_b=$?

seqs="$work/seqs"
grep '^data: hello ' "$work/listener.out" | awk '{print $3}' >"$seqs" || true
n=$(wc -l <"$seqs")
uniq_n=$(sort -n "$seqs" | uniq | wc -l)
first=$(head -n1 "$seqs"); last=$(tail -n1 "$seqs")
gaps=$(sort -n "$seqs" | uniq | awk 'NR>1 && $1!=p+1 {g+=$1-p-1} {p=$1} END {print g+0}')
echo "transport=$proto endpoint=$ep domains=$dom_a->$dom_b received=$n unique=$uniq_n first=${first:-none} last=${last:-none} missing_between=$gaps bridge_exit=$rc_a,$rc_b logs=$work"
[[ "$n" -gt 0 && "$n" -eq "$uniq_n" && "$rc_a" -eq 0 && "$rc_b" -eq 0 ]]
