"""A ROS 2 <-> MQTT bridge in Python, built the way generic Python bridges are (the role of
mqtt_bridge in seed 003): paho-mqtt 2.x and PyPI cyclonedds, messages (de)serialized by the
DDS library's Python types and forwarded as CDR, the same wire as roam's and mqtt_client's CDR
mode. The benchmark's baseline: it measures its own hops the way roam does (DDS arrival to
MQTT hand-off, MQTT arrival to DDS write done).

usage: py_bridge.py --domain D --port P [--ca FILE] [--qos N]
                    [--out ROS_TOPIC=MQTT_TOPIC]... [--in MQTT_TOPIC=ROS_TOPIC]...
                    --stats FILE
DDS topic names are given as DDS names (rt/...); every topic is sensor_msgs/PointCloud2.
Prints "ready" once connected and subscribed; writes the stats file on SIGTERM.
"""
import argparse
import json
import signal
import statistics
import sys
import threading
import time
from dataclasses import dataclass

import paho.mqtt.client as mqtt
from cyclonedds.core import Listener, Qos, Policy
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.types import int32, uint32, uint8, sequence
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic


@dataclass
class Time_(IdlStruct, typename="builtin_interfaces::msg::dds_::Time_"):
    sec: int32
    nanosec: uint32


@dataclass
class Header_(IdlStruct, typename="std_msgs::msg::dds_::Header_"):
    stamp: Time_
    frame_id: str


@dataclass
class PointField_(IdlStruct, typename="sensor_msgs::msg::dds_::PointField_"):
    name: str
    offset: uint32
    datatype: uint8
    count: uint32


@dataclass
class PointCloud2_(IdlStruct, typename="sensor_msgs::msg::dds_::PointCloud2_"):
    header: Header_
    height: uint32
    width: uint32
    fields: sequence[PointField_]
    is_bigendian: bool
    point_step: uint32
    row_step: uint32
    data: sequence[uint8]
    is_dense: bool


p = argparse.ArgumentParser()
p.add_argument("--domain", type=int, required=True)
p.add_argument("--port", type=int, required=True)
p.add_argument("--ca")
p.add_argument("--qos", type=int, default=0)
p.add_argument("--out", action="append", default=[])
p.add_argument("--in", dest="inn", action="append", default=[])
p.add_argument("--stats", required=True)
a = p.parse_args()

qos = Qos(Policy.Reliability.Reliable(1_000_000_000), Policy.Durability.Volatile, Policy.History.KeepLast(10))
dp = DomainParticipant(a.domain)
client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"py-bridge-{time.time_ns()}")
if a.ca:
    client.tls_set(ca_certs=a.ca)
hops = {"ros2mqtt": {}, "mqtt2ros": {}, "dds_write": {}}
lock = threading.Lock()


def record(direction, topic, seconds):
    with lock:
        hops[direction].setdefault(topic, []).append(seconds * 1e6)


readers = []
for spec in a.out:
    ros, mq = spec.split("=")

    def on_data(reader, ros=ros, mq=mq):
        for s in reader.take(N=64):
            t0 = time.perf_counter()
            if not isinstance(s, PointCloud2_):
                continue
            client.publish(mq, s.serialize(), a.qos)
            record("ros2mqtt", ros, time.perf_counter() - t0)

    readers.append(DataReader(dp, Topic(dp, ros, PointCloud2_), qos=qos, listener=Listener(on_data_available=on_data)))

writers = {}
for spec in a.inn:
    mq, ros = spec.split("=")
    writers[mq] = (ros, DataWriter(dp, Topic(dp, ros, PointCloud2_), qos=qos))


def on_message(c, userdata, m):
    t0 = time.perf_counter()
    ros, w = writers[m.topic]
    msg = PointCloud2_.deserialize(m.payload)
    t1 = time.perf_counter()
    w.write(msg)
    record("mqtt2ros", m.topic, t1 - t0)
    record("dds_write", m.topic, time.perf_counter() - t1)


subscribed = threading.Event()


def on_connect(c, userdata, flags, reason_code, properties):
    if writers:
        c.subscribe([(t, a.qos) for t in writers])
    else:
        subscribed.set()


client.on_connect = on_connect
client.on_subscribe = lambda *args: subscribed.set()
client.on_message = on_message
client.connect("127.0.0.1", a.port)
client.loop_start()
subscribed.wait(20)
print("ready", flush=True)


def summary(v):
    s = sorted(v)
    mean = statistics.fmean(s)
    return {
        "n": len(s),
        "mean_us": mean,
        "median_us": statistics.median(s),
        "min_us": s[0],
        "max_us": s[-1],
        "std_us": statistics.pstdev(s) if len(s) > 1 else 0.0,
    }


def stop(*_):
    with lock:
        out = {d: {t: summary(v) for t, v in per.items() if v} for d, per in hops.items()}
    with open(a.stats, "w") as f:
        json.dump(out, f)
    client.loop_stop()
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
while True:
    time.sleep(1)
