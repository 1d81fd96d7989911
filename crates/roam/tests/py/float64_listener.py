"""Prints every std_msgs/Float64 on a DDS topic (PyPI cyclonedds), as rmw_cyclonedds has it:
for the MQTT bridge's latency topics.

usage: float64_listener.py DOMAIN TOPIC     (DDS name, e.g. rt/mqtt_client/latencies/cmd)
Prints "ready" once the reader exists, then "value X" per sample.
"""
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "roam-dds" / "tests" / "py"))
from common import exit_on_sigterm, qos  # noqa: E402
from cyclonedds.domain import DomainParticipant  # noqa: E402
from cyclonedds.idl import IdlStruct  # noqa: E402
from cyclonedds.idl.types import float64  # noqa: E402
from cyclonedds.sub import DataReader  # noqa: E402
from cyclonedds.topic import Topic  # noqa: E402


@dataclass
class Float64_(IdlStruct, typename="std_msgs::msg::dds_::Float64_"):
    data: float64


exit_on_sigterm()
dp = DomainParticipant(int(sys.argv[1]))
reader = DataReader(dp, Topic(dp, sys.argv[2], Float64_), qos=qos(depth=1))
print("ready", flush=True)
while True:
    for s in reader.take(N=100):
        if s.sample_info.valid_data:
            print(f"value {s.data}", flush=True)
    time.sleep(0.01)
