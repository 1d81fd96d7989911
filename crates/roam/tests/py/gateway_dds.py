"""A ROS 2-style talker or listener of geometry_msgs/PointStamped, as rmw_cyclonedds puts it
on the wire (PyPI cyclonedds), for the gateway tests.

usage: gateway_dds.py talk|listen DOMAIN TOPIC
A talker publishes PointStamped{header: {stamp: {sec: 7, nanosec: N}, frame_id: "map"},
point: {x: 1.5, y: -2.25, z: N}} every 0.05 s for N = 0, 1, ...; a listener prints
"point FRAME SEC NANOSEC X Y Z" per sample. Both print "ready" once their endpoint exists.
"""
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "roam-dds" / "tests" / "py"))
from common import exit_on_sigterm, qos  # noqa: E402
from cyclonedds.domain import DomainParticipant  # noqa: E402
from cyclonedds.idl import IdlStruct, types  # noqa: E402
from cyclonedds.pub import DataWriter  # noqa: E402
from cyclonedds.sub import DataReader  # noqa: E402
from cyclonedds.topic import Topic  # noqa: E402


@dataclass
class Time_(IdlStruct, typename="builtin_interfaces::msg::dds_::Time_"):
    sec: types.int32
    nanosec: types.uint32


@dataclass
class Header_(IdlStruct, typename="std_msgs::msg::dds_::Header_"):
    stamp: Time_
    frame_id: str


@dataclass
class Point_(IdlStruct, typename="geometry_msgs::msg::dds_::Point_"):
    x: types.float64
    y: types.float64
    z: types.float64


@dataclass
class PointStamped_(IdlStruct, typename="geometry_msgs::msg::dds_::PointStamped_"):
    header: Header_
    point: Point_


exit_on_sigterm()
mode, domain, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
dp = DomainParticipant(domain)
topic = Topic(dp, name, PointStamped_)
if mode == "talk":
    writer = DataWriter(dp, topic, qos=qos())
    print("ready", flush=True)
    n = 0
    while True:
        writer.write(PointStamped_(Header_(Time_(7, n), "map"), Point_(1.5, -2.25, float(n))))
        n += 1
        time.sleep(0.05)
else:
    reader = DataReader(dp, topic, qos=qos())
    print("ready", flush=True)
    while True:
        for s in reader.take(N=100):
            if not s.sample_info.valid_data:
                continue
            h, p = s.header, s.point
            print(f"point {h.frame_id} {h.stamp.sec} {h.stamp.nanosec} {p.x} {p.y} {p.z}", flush=True)
        time.sleep(0.01)
