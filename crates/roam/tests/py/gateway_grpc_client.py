"""A gRPC client of `roam gateway`'s gRPC door on grpcio (PyPI), as a user's Python program
would be written: stubs generated from proto/roam/gateway/v1/gateway.proto (into a temporary
directory, with grpcio-tools) and nothing of roam's besides the .proto.

usage: gateway_grpc_client.py ADDR [--token T] [--ca PEM [--server-name N] [--cert PEM --key KEY]]
                              COMMAND ...
  With --ca, the channel is TLS (grpcio's own BoringSSL) verifying the gateway against PEM,
  presenting a client certificate with --cert/--key.
  sub TOPIC [--type T] [--cdr] [--count N] [--queue-length N] [--slow S] [--times]
        prints "subscribed" once the gateway has the subscription, then "msg JSON" per message
        (with --cdr: "cdr HEADER_HEX TEXT", TEXT the std_msgs/String read from the CDR after
        its 4-byte header), and "dropped N TOTAL" when the gateway dropped messages for it;
        with --times, "source SEC NANOSEC" (or "source -" when unset) after each message;
        --slow S sleeps S seconds after each message; exits after N messages
  pub TOPIC TYPE JSON [--cdr-string] [--count N] [--period S] [--pad N]
        publishes JSON ("$N" in it replaced by a counter; --pad N appends N "x" to its "data")
        on one Publish stream, or with --cdr-string a std_msgs/String written as CDR here with
        JSON as its text; prints "published N" at the end
  pub-bad-cdr TOPIC TYPE
        publishes 3 bytes that are no CDR message
  call SERVICE TYPE JSON [--cdr] [--retry-for S]
        calls until answered (UNAVAILABLE and DEADLINE_EXCEEDED are retried); prints
        "result JSON" (with --cdr, an AddTwoInts request and reply written and read as CDR here:
        "result {"sum": N}")
  goal ACTION TYPE JSON [--cancel] [--cdr]
        prints "accepted ID", "status N", "feedback JSON", then "result STATUS_NAME JSON" (or
        "rejected REASON"); with --cancel, calls CancelGoal after the first feedback and prints
        "cancel CODE_NAME"; with --cdr, a Fibonacci goal, feedback and result are written and
        read as CDR here (and printed as JSON)
  list [--want NAME ...]
        ListTopics until every wanted name is listed (30 s); prints "list JSON"
  def TYPE
        prints "def JSON" with GetDefinition's answer
Any call that fails prints "error CODE_NAME MESSAGE" and exits with status 1.
"""
import argparse
import json
import os
import shutil
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

import grpc
from grpc_tools import protoc

PROTO_ROOT = Path(__file__).resolve().parents[4] / "proto"


def stubs():
    """Generates the Python modules of the .proto into a temporary directory."""
    out = tempfile.mkdtemp(prefix="roam-grpc-stubs-")
    include = str(Path(protoc.__file__).parent / "_proto")
    rc = protoc.main(["protoc", f"-I{PROTO_ROOT}", f"-I{include}", f"--python_out={out}",
                      f"--grpc_python_out={out}", "roam/gateway/v1/gateway.proto"])
    if rc != 0:
        sys.exit(f"protoc failed: {rc}")
    sys.path.insert(0, out)
    from roam.gateway.v1 import gateway_pb2, gateway_pb2_grpc  # noqa: E402
    sys.path.remove(out)
    shutil.rmtree(out, ignore_errors=True)  # loaded: the files are no longer needed
    return gateway_pb2, gateway_pb2_grpc


pb, pb_grpc = stubs()


LOCK = threading.Lock()


def out(kind, text=""):
    # One whole line at a time: a Publish stream's requests are drawn on grpcio's own thread.
    with LOCK:
        sys.stdout.write(f"{kind} {text}".rstrip() + "\n")
        sys.stdout.flush()


def fail(e):
    out("error", f"{e.code().name} {e.details()}")
    sys.exit(1)


def string_cdr(text):
    """std_msgs/String as CDR: little-endian encapsulation, uint32 length with the NUL, bytes."""
    b = text.encode() + b"\0"
    return b"\x00\x01\x00\x00" + struct.pack("<I", len(b)) + b


def cmd_sub(a, stub, md):
    req = pb.SubscribeRequest(topic=a.topic, type=a.type or "",
                              encoding=pb.ENCODING_CDR if a.cdr else pb.ENCODING_JSON,
                              queue_length=a.queue_length)
    call = stub.Subscribe(req, metadata=md)
    try:
        call.initial_metadata()
        if not call.done():
            out("subscribed")
        n = 0
        for item in call:
            if item.dropped:
                out("dropped", f"{item.dropped} {item.dropped_total}")
            if a.cdr:
                p = item.payload
                (length,) = struct.unpack_from("<I", p, 4)
                text = p[8:8 + length - 1].decode()
                assert p[8 + length - 1] == 0, "no NUL"
                out("cdr", f"{p[:4].hex()} {text[:200]}")
            else:
                m = json.loads(item.payload)
                if isinstance(m.get("data"), str) and len(m["data"]) > 200:
                    m["data"] = m["data"][:40] + f"...({len(m['data'])})"
                out("msg", json.dumps(m, sort_keys=True))
            if a.times:
                t = item.source_time
                out("source", f"{t.sec} {t.nanosec}" if item.HasField("source_time") else "-")
            n += 1
            if a.count and n >= a.count:
                call.cancel()
                return
            if a.slow:
                time.sleep(a.slow)
    except grpc.RpcError as e:
        if e.code() != grpc.StatusCode.CANCELLED:
            fail(e)


def cmd_pub(a, stub, md):
    enc = pb.ENCODING_CDR if a.cdr_string else pb.ENCODING_JSON

    def requests():
        for n in range(a.count):
            text = a.json.replace("$N", str(n))
            if a.cdr_string:
                payload = string_cdr(text)
            else:
                m = json.loads(text)
                if a.pad:
                    m["data"] = m.get("data", "") + "x" * a.pad
                payload = json.dumps(m).encode()
            first = n == 0
            yield pb.PublishRequest(topic=a.topic if first else "", type=a.type if first else "",
                                    encoding=enc, payload=payload)
            if first:
                out("ready")
            time.sleep(a.period)

    try:
        s = stub.Publish(requests(), metadata=md)
        out("published", str(s.published))
    except grpc.RpcError as e:
        fail(e)


def cmd_pub_bad_cdr(a, stub, md):
    try:
        s = stub.Publish(iter([pb.PublishRequest(topic=a.topic, type=a.type, encoding=pb.ENCODING_CDR,
                                                 payload=b"\x00\x01\x00")]), metadata=md)
        out("published", str(s.published))
    except grpc.RpcError as e:
        fail(e)


def cmd_call(a, stub, md):
    args = json.loads(a.json)
    if a.cdr:
        # example_interfaces/srv/AddTwoInts_Request: int64 a, int64 b (8-aligned after the header).
        req = b"\x00\x01\x00\x00" + struct.pack("<qq", args["a"], args["b"])
        enc = pb.ENCODING_CDR
    else:
        req, enc = a.json.encode(), pb.ENCODING_JSON
    end = time.time() + a.retry_for
    while True:
        try:
            r = stub.CallService(pb.CallServiceRequest(service=a.service, type=a.type, encoding=enc,
                                                       request=req, timeout_s=3), metadata=md)
            if a.cdr:
                assert r.reply[:4] == b"\x00\x01\x00\x00", r.reply[:4].hex()
                (s,) = struct.unpack_from("<q", r.reply, 4)
                out("result", json.dumps({"sum": s}))
            else:
                out("result", json.dumps(json.loads(r.reply), sort_keys=True))
            return
        except grpc.RpcError as e:
            retry = e.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
            if not retry or time.time() > end:
                fail(e)
            out("retry", f"{e.code().name} {e.details()}")
            time.sleep(0.3)


def sequence_cdr(p):
    """example_interfaces/action/Fibonacci_Feedback or _Result as CDR: int32[] sequence."""
    assert p[:4] == b"\x00\x01\x00\x00", p[:4].hex()
    (n,) = struct.unpack_from("<I", p, 4)
    return {"sequence": list(struct.unpack_from(f"<{n}i", p, 8))}


def cmd_goal(a, stub, md):
    if a.cdr:
        # example_interfaces/action/Fibonacci_Goal: int32 order.
        goal, enc = b"\x00\x01\x00\x00" + struct.pack("<i", json.loads(a.json)["order"]), pb.ENCODING_CDR
        decode = sequence_cdr
    else:
        goal, enc = a.json.encode(), pb.ENCODING_JSON
        decode = json.loads
    call = stub.SendGoal(pb.SendGoalRequest(action=a.action, type=a.type, encoding=enc, goal=goal),
                         metadata=md)
    goal_id = None
    cancelled = False
    try:
        for ev in call:
            kind = ev.WhichOneof("event")
            if kind == "accepted":
                goal_id = ev.accepted.goal_id
                out("accepted", goal_id)
            elif kind == "rejected":
                out("rejected", ev.rejected.reason)
            elif kind == "status":
                out("status", pb.GoalStatus.Name(ev.status))
            elif kind == "feedback":
                out("feedback", json.dumps(decode(ev.feedback), sort_keys=True))
                if a.cancel and not cancelled:
                    cancelled = True
                    r = stub.CancelGoal(pb.CancelGoalRequest(action=a.action, type=a.type, goal_id=goal_id),
                                        metadata=md)
                    out("cancel", f"{pb.CancelCode.Name(r.code)} {list(r.goals_canceling)}")
            elif kind == "result":
                name = pb.GoalStatus.Name(ev.result.status)
                out("result", f"{name} {json.dumps(decode(ev.result.result), sort_keys=True)}")
    except grpc.RpcError as e:
        fail(e)


def cmd_list(a, stub, md):
    end = time.time() + 30
    while True:
        try:
            r = stub.ListTopics(pb.ListTopicsRequest(), metadata=md)
        except grpc.RpcError as e:
            fail(e)
        listed = {kind: {l.name: list(l.types) for l in getattr(r, kind)}
                  for kind in ("topics", "services", "actions")}
        names = set().union(*[set(v) for v in listed.values()])
        if all(w in names for w in a.want) or time.time() > end:
            out("list", json.dumps(listed, sort_keys=True))
            return
        time.sleep(0.3)


def cmd_def(a, stub, md):
    try:
        r = stub.GetDefinition(pb.GetDefinitionRequest(type=a.type), metadata=md)
    except grpc.RpcError as e:
        fail(e)
    out("def", json.dumps({"type": r.type, "definition": r.definition,
                           "encodings": [pb.Encoding.Name(e) for e in r.encodings]}, sort_keys=True))


p = argparse.ArgumentParser()
p.add_argument("addr")
p.add_argument("--token")
p.add_argument("--ca")
p.add_argument("--server-name")
p.add_argument("--cert")
p.add_argument("--key")
sub = p.add_subparsers(dest="cmd", required=True)
s = sub.add_parser("sub")
s.add_argument("topic")
s.add_argument("--type")
s.add_argument("--cdr", action="store_true")
s.add_argument("--count", type=int, default=0)
s.add_argument("--queue-length", type=int, default=0)
s.add_argument("--slow", type=float, default=0)
s.add_argument("--times", action="store_true")
s = sub.add_parser("pub")
s.add_argument("topic")
s.add_argument("type")
s.add_argument("json")
s.add_argument("--cdr-string", action="store_true")
s.add_argument("--count", type=int, default=600)
s.add_argument("--period", type=float, default=0.05)
s.add_argument("--pad", type=int, default=0)
s = sub.add_parser("pub-bad-cdr")
s.add_argument("topic")
s.add_argument("type")
s = sub.add_parser("call")
s.add_argument("service")
s.add_argument("type")
s.add_argument("json")
s.add_argument("--cdr", action="store_true")
s.add_argument("--retry-for", type=float, default=30)
s = sub.add_parser("goal")
s.add_argument("action")
s.add_argument("type")
s.add_argument("json")
s.add_argument("--cancel", action="store_true")
s.add_argument("--cdr", action="store_true")
s = sub.add_parser("list")
s.add_argument("--want", nargs="*", default=[])
s = sub.add_parser("def")
s.add_argument("type")
a = p.parse_args()
md = [("authorization", f"Bearer {a.token}")] if a.token else []
limit = 64 << 20
options = [("grpc.max_receive_message_length", limit), ("grpc.max_send_message_length", limit)]
if a.ca:
    read = lambda path: open(path, "rb").read() if path else None  # noqa: E731
    creds = grpc.ssl_channel_credentials(read(a.ca), read(a.key), read(a.cert))
    if a.server_name:
        options.append(("grpc.ssl_target_name_override", a.server_name))
    channel = grpc.secure_channel(a.addr, creds, options=options)
else:
    channel = grpc.insecure_channel(a.addr, options=options)
stub = pb_grpc.GatewayStub(channel)
{"sub": cmd_sub, "pub": cmd_pub, "pub-bad-cdr": cmd_pub_bad_cdr, "call": cmd_call, "goal": cmd_goal,
 "list": cmd_list, "def": cmd_def}[a.cmd](a, stub, md)
os._exit(0)
