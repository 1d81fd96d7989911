"""What monitoring every topic costs without roam: `ros2 topic hz` and `ros2 topic bw` for every
topic at once, in Python (PyPI cyclonedds), as a robot's monitoring scripts do it: one reader
per topic, each message taken and counted (rate, bytes, min/max/mean size), figures printed
every second. The baseline of roam's rules benchmark (seed 001's comparison).

usage: py_monitor.py DOMAIN TOPIC...   (DDS names, std_msgs/String)
Prints "ready" once every reader exists.
"""
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "crates" / "roam-dds" / "tests" / "py"))
from common import String_, exit_on_sigterm, qos  # noqa: E402
from cyclonedds.core import Listener  # noqa: E402
from cyclonedds.domain import DomainParticipant  # noqa: E402
from cyclonedds.sub import DataReader  # noqa: E402
from cyclonedds.topic import Topic  # noqa: E402

exit_on_sigterm()
domain, topics = int(sys.argv[1]), sys.argv[2:]
dp = DomainParticipant(domain)
stats = {t: [0, 0, None, 0] for t in topics}  # count, bytes, min, max
lock = threading.Lock()
readers = []
for t in topics:

    def on_data(reader, t=t):
        for s in reader.take(N=256):
            n = len(s.data)
            with lock:
                st = stats[t]
                st[0] += 1
                st[1] += n
                st[2] = n if st[2] is None else min(st[2], n)
                st[3] = max(st[3], n)

    readers.append(DataReader(dp, Topic(dp, t, String_), qos=qos(), listener=Listener(on_data_available=on_data)))
print("ready", flush=True)
last = time.monotonic()
while True:
    time.sleep(1)
    now = time.monotonic()
    with lock:
        for t, st in stats.items():
            if st[0]:
                print(f"{t} hz={st[0] / (now - last):.1f} bw={st[1] / (now - last):.0f}B/s mean={st[1] / st[0]:.0f} min={st[2]} max={st[3]}", flush=True)
            stats[t] = [0, 0, None, 0]
    last = now
