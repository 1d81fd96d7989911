"""A ROS 2-style talker that publishes a known number of std_msgs/String messages.

usage: counted_talker.py DOMAIN TOPIC TEXT COUNT [--period S]
Prints "ready" once its writer exists, waits until a reader has matched it (so none of the
COUNT is published to nobody), publishes "TEXT N" for N = 0 .. COUNT-1 (reliable), waits
for the readers' acknowledgements, prints "sent COUNT", and stays up until stopped.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../../roam-dds/tests/py"))
from common import String_, exit_on_sigterm, qos  # noqa: E402
from cyclonedds.domain import DomainParticipant  # noqa: E402
from cyclonedds.pub import DataWriter  # noqa: E402
from cyclonedds.topic import Topic  # noqa: E402
from cyclonedds.util import duration  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("domain", type=int)
p.add_argument("topic")
p.add_argument("text")
p.add_argument("count", type=int)
p.add_argument("--period", type=float, default=0.02)
a = p.parse_args()
exit_on_sigterm()

dp = DomainParticipant(a.domain)
topic = Topic(dp, a.topic, String_)
writer = DataWriter(dp, topic, qos=qos(depth=max(10, a.count)))
print("ready", flush=True)
while not writer.get_matched_subscriptions():
    time.sleep(0.01)
print("matched", flush=True)
for n in range(a.count):
    writer.write(String_(data=f"{a.text} {n}"))
    time.sleep(a.period)
writer.wait_for_acks(duration(seconds=10))
print(f"sent {a.count}", flush=True)
while True:
    time.sleep(1)
