"""A ROS 2-style talker: publishes std_msgs/String on a DDS topic until stopped.

usage: talker.py DOMAIN TOPIC TEXT [--transient-local] [--depth N (0: KEEP_ALL)] [--period S] [--pad BYTES]
                 [--stamp NS]
Publishes "TEXT N" for N = 0, 1, ...; prints "ready" once the writer exists. With --stamp,
message N is written with the source timestamp NS + N (nanoseconds) instead of the clock's.
"""
import argparse
import time

from common import String_, exit_on_sigterm, qos
from cyclonedds.domain import DomainParticipant
from cyclonedds.pub import DataWriter
from cyclonedds.topic import Topic

p = argparse.ArgumentParser()
p.add_argument("domain", type=int)
p.add_argument("topic")
p.add_argument("text")
p.add_argument("--transient-local", action="store_true")
p.add_argument("--depth", type=int, default=10, help="the writer's history depth (0: KEEP_ALL)")
p.add_argument("--period", type=float, default=0.05)
p.add_argument("--pad", type=int, default=0, help="append this many bytes of padding to each message (large-message tests)")
p.add_argument("--stamp", type=int, default=None, help="write message N with source timestamp STAMP + N (ns)")
a = p.parse_args()
exit_on_sigterm()

dp = DomainParticipant(a.domain)
topic = Topic(dp, a.topic, String_)
writer = DataWriter(dp, topic, qos=qos(transient_local=a.transient_local, depth=a.depth))
print("ready", flush=True)
n = 0
while True:
    pad = ("x" * a.pad) if a.pad else ""
    stamp = None if a.stamp is None else a.stamp + n
    writer.write(String_(data=f"{a.text} {n}{pad}"), timestamp=stamp)
    n += 1
    time.sleep(a.period)
