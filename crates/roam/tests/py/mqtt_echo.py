"""The echo side of seed 003's ping-pong: a ROS 2-style node (PyPI cyclonedds) that publishes
every std_msgs/String it receives on one topic on another, unchanged.

usage: mqtt_echo.py DOMAIN IN_TOPIC OUT_TOPIC   (DDS names: rt/ping rt/pong)
Prints "ready" once both endpoints exist, and "echo N" every 10 messages.
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "roam-dds" / "tests" / "py"))
from common import String_, exit_on_sigterm, qos  # noqa: E402
from cyclonedds.domain import DomainParticipant  # noqa: E402
from cyclonedds.pub import DataWriter  # noqa: E402
from cyclonedds.sub import DataReader  # noqa: E402
from cyclonedds.topic import Topic  # noqa: E402

exit_on_sigterm()
domain, src, dst = int(sys.argv[1]), sys.argv[2], sys.argv[3]
dp = DomainParticipant(domain)
reader = DataReader(dp, Topic(dp, src, String_), qos=qos())
writer = DataWriter(dp, Topic(dp, dst, String_), qos=qos())
print("ready", flush=True)
n = 0
while True:
    for s in reader.take(N=100):
        if not s.sample_info.valid_data:
            continue
        writer.write(String_(data=s.data))
        n += 1
        if n % 10 == 0:
            print(f"echo {n}", flush=True)
    time.sleep(0.002)
