"""ROS 2-style peers for the rules tests (PyPI cyclonedds, as rmw_cyclonedds puts them on the wire).

usage: rules_peer.py talk DOMAIN TOPIC TEXT [--period S] [--node NAME] [--frame FRAME] [--stamp NS]
       rules_peer.py listen DOMAIN TOPIC [--point]
talk publishes std_msgs/String "TEXT N" for N = 0, 1, ...; with --frame, a
geometry_msgs/PointStamped whose header.frame_id is FRAME and point.x is N. With --node it
announces itself as the ROS 2 node /NAME owning its writer in ros_discovery_info (what
rmw does), before publishing. With --stamp, message N is written with the source timestamp
NS + N (nanoseconds) instead of the clock's. listen prints "data: TEXT" per String, or
"point: FRAME X" per PointStamped. Both print "ready" once their endpoint exists.
"""
import argparse
import os
import sys
import time
from dataclasses import dataclass

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../../roam-dds/tests/py"))
from common import Header_, Point_, PointStamped_, String_, Time_, exit_on_sigterm, qos  # noqa: E402
from cyclonedds.domain import DomainParticipant  # noqa: E402
from cyclonedds.idl import IdlStruct, types  # noqa: E402
from cyclonedds.pub import DataWriter  # noqa: E402
from cyclonedds.sub import DataReader  # noqa: E402
from cyclonedds.topic import Topic  # noqa: E402


@dataclass
class Gid_(IdlStruct, typename="rmw_dds_common::msg::dds_::Gid_"):
    data: types.array[types.uint8, 16]


@dataclass
class NodeEntitiesInfo_(IdlStruct, typename="rmw_dds_common::msg::dds_::NodeEntitiesInfo_"):
    node_namespace: str
    node_name: str
    reader_gid_seq: types.sequence[Gid_]
    writer_gid_seq: types.sequence[Gid_]


@dataclass
class ParticipantEntitiesInfo_(IdlStruct, typename="rmw_dds_common::msg::dds_::ParticipantEntitiesInfo_"):
    gid: Gid_
    node_entities_info_seq: types.sequence[NodeEntitiesInfo_]


p = argparse.ArgumentParser()
p.add_argument("mode", choices=["talk", "listen"])
p.add_argument("domain", type=int)
p.add_argument("topic")
p.add_argument("text", nargs="?", default="")
p.add_argument("--period", type=float, default=0.05)
p.add_argument("--node")
p.add_argument("--frame")
p.add_argument("--point", action="store_true")
p.add_argument("--stamp", type=int, default=None)
a = p.parse_args()
exit_on_sigterm()

dp = DomainParticipant(a.domain)
point = a.frame is not None or a.point
topic = Topic(dp, a.topic, PointStamped_ if point else String_)

if a.mode == "listen":
    reader = DataReader(dp, topic, qos=qos(depth=1000))
    print("ready", flush=True)
    while True:
        for s in reader.take(N=1000):
            if not s.sample_info.valid_data:
                continue
            if point:
                print(f"point: {s.header.frame_id} {int(s.point.x)}", flush=True)
            else:
                print(f"data: {s.data}", flush=True)
        time.sleep(0.005)

writer = DataWriter(dp, topic, qos=qos())
if a.node:
    info = Topic(dp, "ros_discovery_info", ParticipantEntitiesInfo_)
    announce = DataWriter(dp, info, qos=qos(transient_local=True, depth=1))
    gid = lambda e: Gid_(data=list(e.guid.bytes))  # noqa: E731
    announce.write(ParticipantEntitiesInfo_(
        gid=gid(dp),
        node_entities_info_seq=[NodeEntitiesInfo_("/", a.node, [], [gid(writer)])],
    ))
print("ready", flush=True)
n = 0
while True:
    stamp = None if a.stamp is None else a.stamp + n
    if point:
        now = time.time()
        writer.write(PointStamped_(
            header=Header_(stamp=Time_(int(now), int((now % 1) * 1e9)), frame_id=a.frame),
            point=Point_(float(n), 0.0, 0.0),
        ), timestamp=stamp)
    else:
        writer.write(String_(data=f"{a.text} {n}"), timestamp=stamp)
    n += 1
    time.sleep(a.period)
