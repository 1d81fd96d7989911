"""Announces plain DDS endpoints on `ros_discovery_info`, so the Zenoh ros2dds bridge routes them.

usage: ros_announce.py DOMAIN TOPIC [TOPIC ...] [--period S]

The ros2dds plugin only routes DDS readers and writers that some ROS node declares on the
`ros_discovery_info` topic (rmw does that for every real ROS 2 node). roam's test peers
(crates/roam-dds/tests/py/talker.py, listener.py) and ddsperf are plain DDS programs that do
not, so the bridge ignores them. This helper watches DDS discovery in DOMAIN for readers and
writers on the given DDS topics (e.g. rt/chatter) and, for each participant that owns some and
does not publish on ros_discovery_info itself (i.e. is not ROS-aware: not a ROS node, not the
bridge), publishes a ParticipantEntitiesInfo naming one node "dds_<participant guid prefix>"
with those readers and writers. GIDs are 16 bytes (ROS 2 Iron and later; the plugin's default
ROS_DISTRO assumption). Prints "ready" once its writer exists, and one line per change:
"announce PARTICIPANT readers R writers W".
"""
import argparse
import signal
import sys
import time
from dataclasses import dataclass

from cyclonedds.builtin import BuiltinDataReader, BuiltinTopicDcpsPublication, BuiltinTopicDcpsSubscription
from cyclonedds.core import InstanceState, Policy, Qos
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct, types
from cyclonedds.pub import DataWriter
from cyclonedds.topic import Topic
from cyclonedds.util import duration


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


DISCOVERY_TOPIC = "ros_discovery_info"


def gid(u):
    return Gid_(data=list(u.bytes))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("domain", type=int)
    p.add_argument("topics", nargs="+", metavar="TOPIC", help="DDS topic names, e.g. rt/chatter")
    p.add_argument("--period", type=float, default=1.0, help="republish every S seconds (default 1)")
    a = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

    dp = DomainParticipant(a.domain)
    own = dp.guid
    pubs = BuiltinDataReader(dp, BuiltinTopicDcpsPublication)
    subs = BuiltinDataReader(dp, BuiltinTopicDcpsSubscription)
    topic = Topic(dp, DISCOVERY_TOPIC, ParticipantEntitiesInfo_)
    writer = DataWriter(dp, topic, qos=Qos(
        Policy.Reliability.Reliable(duration(seconds=1)),
        Policy.Durability.TransientLocal,
        Policy.History.KeepLast(32),
    ))
    print("ready", flush=True)

    writers, readers = {}, {}     # endpoint guid -> participant guid, for the watched topics
    ros_aware = set()             # participants with their own ros_discovery_info writer
    announced = {}                # participant guid -> (readers, writers) last published
    last = 0.0
    while True:
        changed = False
        for reader, table in ((pubs, writers), (subs, readers)):
            for s in reader.take(N=256):
                alive = s.sample_info.instance_state == InstanceState.Alive
                if not s.sample_info.valid_data:
                    # key-only sample (an endpoint left): we only know its key
                    key = getattr(s, "key", None)
                    if key is not None and table.pop(key, None) is not None:
                        changed = True
                    continue
                if s.participant_key == own:
                    continue
                if reader is pubs and s.topic_name == DISCOVERY_TOPIC and alive:
                    ros_aware.add(s.participant_key)
                if s.topic_name in a.topics:
                    if alive:
                        changed |= table.get(s.key) != s.participant_key
                        table[s.key] = s.participant_key
                    elif table.pop(s.key, None) is not None:
                        changed = True
        now = time.monotonic()
        if changed or now - last >= a.period:
            last = now
            current = {}
            for table, idx in ((readers, 0), (writers, 1)):
                for ep, part in table.items():
                    if part in ros_aware:
                        continue
                    current.setdefault(part, ([], []))[idx].append(ep)
            # participants that lost all their endpoints: announce them empty once, then forget
            for part in set(announced) - set(current):
                current[part] = ([], [])
            for part, (rs, ws) in current.items():
                node = NodeEntitiesInfo_(
                    node_namespace="/",
                    node_name="dds_" + part.hex[:12],
                    reader_gid_seq=[gid(r) for r in rs],
                    writer_gid_seq=[gid(w) for w in ws],
                )
                nodes = [node] if rs or ws else []
                writer.write(ParticipantEntitiesInfo_(gid=gid(part), node_entities_info_seq=nodes))
                key = (len(rs), len(ws))
                if announced.get(part) != key:
                    print(f"announce {part} readers {len(rs)} writers {len(ws)}", flush=True)
                announced[part] = key
            for part in [p for p, k in announced.items() if k == (0, 0)]:
                del announced[part]
        time.sleep(0.1)


if __name__ == "__main__":
    main()
