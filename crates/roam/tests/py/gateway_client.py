"""rosbridge clients on roslibpy (PyPI), as a user's Python program talks to `roam gateway`.

usage: gateway_client.py PORT [--token T] [--header-token T] COMMAND ...
  sub TOPIC TYPE [--count N] [--throttle MS] [--queue-length N]
        prints "msg JSON" per message; exits after N
  pub TOPIC TYPE JSON [--period S]
        publishes JSON ("$N" in it is replaced by a counter) until stopped
  call SERVICE TYPE ARGS_JSON [--retry-for S]
        calls until answered; prints "result JSON" (or "error TEXT" per failed try)
  calls SERVICE TYPE [--retry-for S]
        calls an AddTwoInts-shaped service in a loop with a = I, b = 1000 for I = 0, 1, ...
        until stopped (the first call retried until answered); prints "answered I SUM" per
        answer and "error I TEXT" per failed call
  serve SERVICE TYPE
        serves an AddTwoInts-shaped service (sum = a + b); prints "served N" per request
  action NAME TYPE GOAL_JSON [--cancel]
        sends a goal (ActionClient); prints "feedback JSON" per feedback and
        "result STATUS JSON" at the end; with --cancel, cancels after the first feedback
  topics
        prints "topics JSON" with /rosapi/topics' answer
  many N TOPIC TYPE
        N clients at once subscribe; prints "got I" when client I has a message, "all N"
Every line starts with its kind; "status JSON" for each status op the gateway sends; "ready"
once connected (and authenticated, with --token, through the `auth` op; --header-token goes
in an `Authorization: Bearer` header on the WebSocket upgrade).
"""
import argparse
import json
import threading
import time

import roslibpy
from roslibpy.comm import comm

LOCK = threading.Lock()


def out(kind, text=""):
    with LOCK:
        print(f"{kind} {text}".rstrip(), flush=True)


# roslibpy has no handler for `status` ops (it raises and logs): print them instead.
_on_message = comm.RosBridgeProtocol.on_message


def on_message(self, payload):
    try:
        m = json.loads(payload.decode("utf8"))
    except ValueError:
        m = None
    if isinstance(m, dict) and m.get("op") == "status":
        out("status", json.dumps(m, sort_keys=True))
        return
    _on_message(self, payload)


comm.RosBridgeProtocol.on_message = on_message


def connect(a):
    headers = {"Authorization": f"Bearer {a.header_token}"} if a.header_token else None
    ros = roslibpy.Ros(host="127.0.0.1", port=a.port, headers=headers)
    ros.run(timeout=20)
    if a.token:
        ros.send_on_ready(roslibpy.Message({"op": "auth", "mac": a.token, "client": "", "dest": "",
                                            "rand": "", "t": 0, "level": "user", "end": 0}))
    return ros


def cmd_sub(a, ros):
    got = [0]
    done = threading.Event()

    def on(msg):
        out("msg", json.dumps(msg, sort_keys=True))
        got[0] += 1
        if a.count and got[0] >= a.count:
            done.set()

    t = roslibpy.Topic(ros, a.topic, a.type, throttle_rate=a.throttle, queue_length=a.queue_length)
    t.subscribe(on)
    out("ready")
    done.wait()


def cmd_pub(a, ros):
    t = roslibpy.Topic(ros, a.topic, a.type)
    t.advertise()
    out("ready")
    n = 0
    while True:
        t.publish(roslibpy.Message(json.loads(a.json.replace("$N", str(n)))))
        n += 1
        time.sleep(a.period)


def cmd_call(a, ros):
    s = roslibpy.Service(ros, a.service, a.type)
    out("ready")
    end = time.time() + a.retry_for
    while time.time() < end:
        try:
            r = s.call(roslibpy.ServiceRequest(json.loads(a.args)), timeout=3)
            out("result", json.dumps(dict(r), sort_keys=True))
            return
        except Exception as e:  # a timeout, or the gateway's refusal
            out("error", str(e).replace("\n", " "))
            if a.once:
                return
            time.sleep(0.2)
    out("failed")


def cmd_calls(a, ros):
    s = roslibpy.Service(ros, a.service, a.type)
    out("ready")
    end = time.time() + a.retry_for
    while True:
        try:
            r = s.call(roslibpy.ServiceRequest({"a": 0, "b": 1000}), timeout=3)
            out("answered", f"0 {r['sum']}")
            break
        except Exception as e:
            if time.time() > end:
                out("error", f"0 {str(e)}".replace("\n", " "))
                return
            time.sleep(0.2)
    i = 1
    while True:
        try:
            r = s.call(roslibpy.ServiceRequest({"a": i, "b": 1000}), timeout=5)
            out("answered", f"{i} {r['sum']}")
        except Exception as e:
            out("error", f"{i} {str(e)}".replace("\n", " "))
        i += 1


def cmd_serve(a, ros):
    served = [0]

    def on(request, response):
        served[0] += 1
        out("served", str(served[0]))
        if a.refuse_over is not None and request["a"] > a.refuse_over:
            return False  # roslibpy answers result: false
        response["sum"] = request["a"] + request["b"]
        return True

    s = roslibpy.Service(ros, a.service, a.type)
    s.advertise(on)
    out("ready")
    while True:
        time.sleep(1)


def cmd_action(a, ros):
    done = threading.Event()
    client = roslibpy.ActionClient(ros, a.name, a.type)
    goal_id = [None]
    cancelled = [False]

    def on_feedback(f):
        out("feedback", json.dumps(dict(f), sort_keys=True))
        if a.cancel and not cancelled[0] and goal_id[0]:
            cancelled[0] = True
            client.cancel_goal(goal_id[0])

    def on_result(r):
        out("result", f"{r['status'].value} {json.dumps(r['values'], sort_keys=True)}")
        done.set()

    def on_error(e):
        out("error", json.dumps(e, default=str))
        done.set()

    out("ready")
    goal_id[0] = client.send_goal(roslibpy.Goal(json.loads(a.goal)) if hasattr(roslibpy, "Goal") else json.loads(a.goal),
                                  on_result, on_feedback, on_error)
    done.wait(60)


def cmd_topics(a, ros):
    out("ready")
    end = time.time() + 30
    while time.time() < end:
        # What ros.get_topics() asks, with the types too.
        r = roslibpy.Service(ros, "/rosapi/topics", "rosapi/Topics").call(roslibpy.ServiceRequest(), timeout=5)
        out("topics", json.dumps(dict(r), sort_keys=True))
        time.sleep(0.5)


def cmd_many(a, _ros):
    clients = []
    seen = set()

    def on_for(i):
        def on(_msg):
            with LOCK:
                new = i not in seen
                seen.add(i)
            if new:
                out("got", str(i))
                if len(seen) == a.n:
                    out("all", str(a.n))
        return on

    for i in range(a.n):
        ros = roslibpy.Ros(host="127.0.0.1", port=a.port)
        ros.run(timeout=20)
        t = roslibpy.Topic(ros, a.topic, a.type)
        t.subscribe(on_for(i))
        clients.append((ros, t))
    out("ready", str(len(clients)))
    while True:
        time.sleep(1)


p = argparse.ArgumentParser()
p.add_argument("port", type=int)
p.add_argument("--token")
p.add_argument("--header-token")
sub = p.add_subparsers(dest="cmd", required=True)
s = sub.add_parser("sub")
s.add_argument("topic")
s.add_argument("type")
s.add_argument("--count", type=int, default=0)
s.add_argument("--throttle", type=int, default=0)
s.add_argument("--queue-length", type=int, default=0)
s = sub.add_parser("pub")
s.add_argument("topic")
s.add_argument("type")
s.add_argument("json")
s.add_argument("--period", type=float, default=0.1)
s = sub.add_parser("call")
s.add_argument("service")
s.add_argument("type")
s.add_argument("args")
s.add_argument("--retry-for", type=float, default=30)
s.add_argument("--once", action="store_true")
s = sub.add_parser("calls")
s.add_argument("service")
s.add_argument("type")
s.add_argument("--retry-for", type=float, default=30)
s = sub.add_parser("serve")
s.add_argument("service")
s.add_argument("type")
s.add_argument("--refuse-over", type=int)
s = sub.add_parser("action")
s.add_argument("name")
s.add_argument("type")
s.add_argument("goal")
s.add_argument("--cancel", action="store_true")
sub.add_parser("topics")
s = sub.add_parser("many")
s.add_argument("n", type=int)
s.add_argument("topic")
s.add_argument("type")
a = p.parse_args()
ros = None if a.cmd == "many" else connect(a)
{"sub": cmd_sub, "pub": cmd_pub, "call": cmd_call, "calls": cmd_calls, "serve": cmd_serve, "action": cmd_action, "topics": cmd_topics, "many": cmd_many}[a.cmd](a, ros)
