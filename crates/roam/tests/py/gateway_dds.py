"""A ROS 2-style talker or listener of geometry_msgs/PointStamped, as rmw_cyclonedds puts it
on the wire (PyPI cyclonedds), for the gateway tests.

usage: gateway_dds.py talk|listen DOMAIN TOPIC
A talker publishes PointStamped{header: {stamp: {sec: 7, nanosec: N}, frame_id: "map"},
point: {x: 1.5, y: -2.25, z: N}} every 0.05 s for N = 0, 1, ...; a listener prints
"point FRAME SEC NANOSEC X Y Z" per sample. Both print "ready" once their endpoint exists.
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "roam-dds" / "tests" / "py"))
from common import PointStamped_, Header_, Point_, Time_, exit_on_sigterm, qos  # noqa: E402
from cyclonedds.domain import DomainParticipant  # noqa: E402
from cyclonedds.pub import DataWriter  # noqa: E402
from cyclonedds.sub import DataReader  # noqa: E402
from cyclonedds.topic import Topic  # noqa: E402


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
