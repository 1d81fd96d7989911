"""Prints the nodes announced on ros_discovery_info, as ROS 2 tools read them.

usage: discovery_info.py DOMAIN
One line per node and sample: "node NAMESPACE NAME readers R writers W".
"""
import sys
import time
from dataclasses import dataclass

from common import exit_on_sigterm, qos
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct, types
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic


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


exit_on_sigterm()
dp = DomainParticipant(int(sys.argv[1]))
topic = Topic(dp, "ros_discovery_info", ParticipantEntitiesInfo_)
# Every participant announces on this one keyless topic: a late reader gets each one's last
# sample at once, which a depth of 1 would let replace each other.
reader = DataReader(dp, topic, qos=qos(transient_local=True, depth=100))
print("ready", flush=True)
while True:
    for s in reader.take(N=100):
        if not s.sample_info.valid_data:
            continue
        for n in s.node_entities_info_seq:
            print(f"node {n.node_namespace} {n.node_name} readers {len(n.reader_gid_seq)} writers {len(n.writer_gid_seq)}", flush=True)
    time.sleep(0.01)
