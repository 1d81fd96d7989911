"""A ROS 2-style listener: prints every std_msgs/String received on a DDS topic.

usage: listener.py DOMAIN TOPIC [--summary] [--transient-local] [--stamps] [--depth N]
Prints "ready" once the reader exists, then one line per sample: "data: TEXT", or with
--summary "len: N sha256: HEX" (for big samples); --stamps adds " stamp: NS", the sample's
source timestamp.
"""
import argparse
import hashlib
import time

from common import String_, exit_on_sigterm, qos
from cyclonedds.domain import DomainParticipant
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic

p = argparse.ArgumentParser()
p.add_argument("domain", type=int)
p.add_argument("topic")
p.add_argument("--summary", action="store_true")
p.add_argument("--transient-local", action="store_true", help="ask for samples published before this reader existed")
p.add_argument("--stamps", action="store_true", help="print each sample's source timestamp too")
p.add_argument("--depth", type=int, default=10, help="the reader's history depth (a fast stream needs more than a Python reader's pauses; 0: KEEP_ALL)")
a = p.parse_args()
exit_on_sigterm()

dp = DomainParticipant(a.domain)
topic = Topic(dp, a.topic, String_)
reader = DataReader(dp, topic, qos=qos(transient_local=a.transient_local, depth=a.depth))
print("ready", flush=True)
while True:
    for s in reader.take(N=100):
        # take() also returns invalid samples (a writer left): skip them.
        if not s.sample_info.valid_data:
            continue
        if a.summary:
            data = s.data.encode()
            print(f"len: {len(data)} sha256: {hashlib.sha256(data).hexdigest()}", flush=True)
        elif a.stamps:
            print(f"data: {s.data} stamp: {s.sample_info.source_timestamp}", flush=True)
        else:
            print(f"data: {s.data}", flush=True)
    time.sleep(0.01)
