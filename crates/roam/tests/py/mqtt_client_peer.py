"""A non-ROS MQTT program (paho-mqtt 2.x) that speaks mqtt_client 2.x's wire format, for the
MQTT bridge tests. It judges roam's bytes with independent code: rosbags serializes and
deserializes the CDR (RosMsgType, std_msgs, builtin_interfaces/Time).

usage:
  mqtt_client_peer.py read  PORT TOPIC [opts]       mqtt_client's receiving side: prints
      "type NAME STAMPED" per type message, then per data message
      "msg TYPE DATA [latency_ms=X]" (DATA: the message's `data` field, or its repr)
  mqtt_client_peer.py write PORT TOPIC COUNT [opts] mqtt_client's sending side: the retained
      RosMsgType for std_msgs/msg/String, then COUNT messages "paho N" (--stamped: with the
      injected timestamp), one every --period seconds
  mqtt_client_peer.py sub   PORT TOPIC [opts]       prints "raw TOPIC RETAINED QOS TEXT" per
      message (primitive and JSON payloads as text)
  mqtt_client_peer.py sniff PORT FILTER            prints "hex TOPIC PAYLOAD_HEX" per message
  mqtt_client_peer.py pub   PORT TOPIC PAYLOAD [opts]  one message (--hex: PAYLOAD is hex)
  mqtt_client_peer.py announce PORT TOPIC TYPE      a retained RosMsgType naming TYPE
  mqtt_client_peer.py garbage PORT TOPIC            junk on TOPIC and on its type topic
opts: --qos N --retain --ca FILE --user U --password P --period S
Every mode prints "ready" once connected (and subscribed).
"""
import argparse
import signal
import sys
import time

import paho.mqtt.client as mqtt
from rosbags.typesys import Stores, get_typestore, get_types_from_msg

TYPE_PREFIX = "mqtt_client/ros_msg_type/"
STAMP_LEN = 12

ts = get_typestore(Stores.ROS2_HUMBLE)
ts.register(
    get_types_from_msg(
        "string md5\nstring name\nstring definition\nbool stamped\n",
        "mqtt_client_interfaces/msg/RosMsgType",
    )
)
RosMsgType = ts.types["mqtt_client_interfaces/msg/RosMsgType"]
Time = ts.types["builtin_interfaces/msg/Time"]
String = ts.types["std_msgs/msg/String"]

p = argparse.ArgumentParser()
p.add_argument("mode")
p.add_argument("port", type=int)
p.add_argument("topic")
p.add_argument("rest", nargs="*")
p.add_argument("--qos", type=int, default=0)
p.add_argument("--retain", action="store_true")
p.add_argument("--stamped", action="store_true")
p.add_argument("--hex", action="store_true")
p.add_argument("--ca")
p.add_argument("--user")
p.add_argument("--password")
p.add_argument("--period", type=float, default=0.05)
a = p.parse_args()
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"paho-{a.mode}-{time.time_ns()}")
if a.user:
    client.username_pw_set(a.user, a.password)
if a.ca:
    client.tls_set(ca_certs=a.ca)
state = {"type": None, "stamped": False}


def ready_on_subscribe(c, userdata, mid, reason_codes, properties):
    print("ready", flush=True)


def on_message(c, userdata, m):
    if a.mode == "sniff":
        print(f"hex {m.topic} {m.payload.hex()}", flush=True)
        return
    if a.mode == "sub":
        text = m.payload.decode("utf-8", "replace")
        print(f"raw {m.topic} {int(m.retain)} {m.qos} {text}", flush=True)
        return
    if m.topic.startswith(TYPE_PREFIX):
        t = ts.deserialize_cdr(m.payload, "mqtt_client_interfaces/msg/RosMsgType")
        state["type"], state["stamped"] = t.name, t.stamped
        print(f"type {t.name} {int(t.stamped)}", flush=True)
        return
    if state["type"] is None:
        print("msg-before-type", flush=True)
        return
    payload = m.payload
    extra = ""
    if state["stamped"]:
        stamp = ts.deserialize_cdr(payload[:STAMP_LEN], "builtin_interfaces/msg/Time")
        sent = stamp.sec + stamp.nanosec / 1e9
        extra = f" latency_ms={(time.time() - sent) * 1000:.3f}"
        payload = payload[STAMP_LEN:]
    msg = ts.deserialize_cdr(payload, state["type"])
    data = getattr(msg, "data", msg)
    print(f"msg {state['type']} {data}{extra}", flush=True)


client.on_message = on_message
if a.mode in ("read", "sub", "sniff"):
    client.connect_async("127.0.0.1", a.port)
else:
    client.connect("127.0.0.1", a.port)

if a.mode in ("read", "sub", "sniff"):
    topics = [(a.topic, a.qos)]
    if a.mode == "read":
        topics.insert(0, (TYPE_PREFIX + a.topic, a.qos))

    def on_connect(c, userdata, flags, reason_code, properties):
        # Again after every reconnection (a restarted broker forgets subscriptions).
        print(f"connected {reason_code}", flush=True)
        c.subscribe(topics)

    client.on_connect = on_connect
    client.on_subscribe = ready_on_subscribe
    client.reconnect_delay_set(0.1, 1)
    client.loop_forever(retry_first_connection=True)
elif a.mode == "write":
    client.loop_start()
    print("ready", flush=True)
    t = RosMsgType(md5="", name="std_msgs/msg/String", definition="", stamped=a.stamped)
    client.publish(TYPE_PREFIX + a.topic, bytes(ts.serialize_cdr(t, "mqtt_client_interfaces/msg/RosMsgType")), a.qos, True)
    for n in range(int(a.rest[0])):
        body = bytes(ts.serialize_cdr(String(data=f"paho {n}"), "std_msgs/msg/String"))
        if a.stamped:
            now = time.time_ns()
            stamp = Time(sec=now // 10**9, nanosec=now % 10**9)
            body = bytes(ts.serialize_cdr(stamp, "builtin_interfaces/msg/Time")) + body
        client.publish(a.topic, body, a.qos, a.retain).wait_for_publish(5)
        time.sleep(a.period)
    print("done", flush=True)
    client.loop_stop()
elif a.mode == "pub":
    client.loop_start()
    payload = bytes.fromhex(a.rest[0]) if a.hex else a.rest[0].encode()
    client.publish(a.topic, payload, a.qos, a.retain).wait_for_publish(5)
    print("ready", flush=True)
    print("done", flush=True)
    client.loop_stop()
elif a.mode == "announce":
    client.loop_start()
    t = RosMsgType(md5="", name=a.rest[0], definition="", stamped=a.stamped)
    body = bytes(ts.serialize_cdr(t, "mqtt_client_interfaces/msg/RosMsgType"))
    client.publish(TYPE_PREFIX + a.topic, body, 1, True).wait_for_publish(5)
    print("ready", flush=True)
    client.loop_stop()
elif a.mode == "garbage":
    client.loop_start()
    # Retained, so a bridge that subscribes after this was sent still gets it.
    client.publish(TYPE_PREFIX + a.topic, b"\x00\x01\x00\x00\xff\xff\xff\xff", 1, True).wait_for_publish(5)
    client.publish(a.topic, b"not cdr at all", 1).wait_for_publish(5)
    # Only now: the test stops this process once it reads "ready".
    print("ready", flush=True)
    client.loop_stop()
