"""Publishers and listeners of richer ROS 2 types: sensor_msgs/LaserScan and a custom nested
type with sequences (roam_test_msgs/Fleet), as they appear on the wire under rmw_cyclonedds.

usage: typed.py talk|listen laserscan|fleet DOMAIN
A talker prints "summary ..." for the sample it publishes (the same every time) and then
publishes it every 0.1 s; a listener prints "summary ..." for every sample it receives.
"""
import hashlib
import struct
import sys
import time
from dataclasses import dataclass

from common import Header_, Time_, exit_on_sigterm, qos
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct, types
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic


@dataclass
class LaserScan_(IdlStruct, typename="sensor_msgs::msg::dds_::LaserScan_"):
    header: Header_
    angle_min: types.float32
    angle_max: types.float32
    angle_increment: types.float32
    time_increment: types.float32
    scan_time: types.float32
    range_min: types.float32
    range_max: types.float32
    ranges: types.sequence[types.float32]
    intensities: types.sequence[types.float32]


@dataclass
class Robot_(IdlStruct, typename="roam_test_msgs::msg::dds_::Robot_"):
    id: types.uint32
    pose: types.sequence[types.float64]
    label: str


@dataclass
class Fleet_(IdlStruct, typename="roam_test_msgs::msg::dds_::Fleet_"):
    name: str
    robots: types.sequence[Robot_]
    tags: types.sequence[str]


def laserscan():
    n = 100_000
    ranges = [float((i * 37) % 1000) / 100.0 for i in range(n)]
    return LaserScan_(
        header=Header_(stamp=Time_(sec=1700000000, nanosec=42), frame_id="laser"),
        angle_min=-3.0, angle_max=3.0, angle_increment=6.0 / n, time_increment=0.0,
        scan_time=0.1, range_min=0.05, range_max=30.0, ranges=ranges, intensities=[1.0] * n,
    )


def fleet():
    robots = [Robot_(id=i, pose=[i * 1.5, -i * 0.25, i / 7.0], label=f"robot-{i}") for i in range(50)]
    return Fleet_(name="warehouse", robots=robots, tags=["a", "bb", "ccc"])


def summary(kind, s):
    if kind == "laserscan":
        h = hashlib.sha256(struct.pack(f"<{len(s.ranges)}f", *s.ranges)).hexdigest()
        return f"summary laserscan frame={s.header.frame_id} n={len(s.ranges)} ranges_sha256={h} sec={s.header.stamp.sec}"
    text = "|".join(f"{r.id}:{r.label}:{','.join(repr(p) for p in r.pose)}" for r in s.robots)
    return f"summary fleet name={s.name} robots={len(s.robots)} tags={','.join(s.tags)} sha256={hashlib.sha256(text.encode()).hexdigest()}"


exit_on_sigterm()
mode, kind, domain = sys.argv[1], sys.argv[2], int(sys.argv[3])
cls, make, topic_name = (LaserScan_, laserscan, "rt/scan") if kind == "laserscan" else (Fleet_, fleet, "rt/fleet")
dp = DomainParticipant(domain)
topic = Topic(dp, topic_name, cls)
if mode == "talk":
    writer = DataWriter(dp, topic, qos=qos())
    sample = make()
    print("ready", flush=True)
    print(summary(kind, sample), flush=True)
    while True:
        writer.write(sample)
        time.sleep(0.1)
else:
    reader = DataReader(dp, topic, qos=qos())
    print("ready", flush=True)
    while True:
        for s in reader.take(N=10):
            if s.sample_info.valid_data:
                print(summary(kind, s), flush=True)
        time.sleep(0.01)
