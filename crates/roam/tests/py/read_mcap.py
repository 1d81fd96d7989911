"""Reads an MCAP file that `roam record` wrote with two independent readers, and prints what
each found, for tests/proxy/record_mcap.rs.

usage: read_mcap.py FILE
Lines: "mcap TOPIC SCHEMA ENCODING COUNT" per channel (SCHEMA "-" for a channel without one,
whose messages are "mcap-raw TOPIC LENGTH") (the `mcap` package, messages decoded
with mcap-ros2-support from the file's own schemas), "mcap-msg TOPIC JSON" for each decoded
message followed by "mcap-time TOPIC LOG_TIME PUBLISH_TIME" (nanoseconds), then "rosbags TOPIC TYPE COUNT" per connection and "rosbags-msg TOPIC JSON" per
message (rosbags' AnyReader, types from the file).
"""
import json
import sys
from collections import Counter
from pathlib import Path

from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory


def plain(m):
    if hasattr(m, "__slots__") or hasattr(m, "__dataclass_fields__") or hasattr(m, "__dict__"):
        names = getattr(m, "__slots__", None) or list(getattr(m, "__dataclass_fields__", {}) or vars(m))
        return {n: plain(getattr(m, n)) for n in names if not n.startswith("_")}
    if isinstance(m, (list, tuple)):
        return [plain(x) for x in m]
    return m


path = sys.argv[1]
counts = Counter()
channels = {}
factory = DecoderFactory()
with open(path, "rb") as f:
    reader = make_reader(f)
    for schema, channel, message in reader.iter_messages():
        counts[channel.topic] += 1
        if schema is None:
            # Recorded before (or without) a definition: the bytes only.
            channels[channel.topic] = ("-", "-", channel.message_encoding)
            print("mcap-raw", channel.topic, len(message.data), flush=True)
            continue
        channels[channel.topic] = (schema.name, schema.encoding, channel.message_encoding)
        decoded = factory.decoder_for(channel.message_encoding, schema)(message.data)
        print("mcap-msg", channel.topic, json.dumps(plain(decoded), sort_keys=True), flush=True)
        print("mcap-time", channel.topic, message.log_time, message.publish_time, flush=True)
for topic, (name, enc, menc) in sorted(channels.items()):
    print("mcap", topic, name, f"{enc}/{menc}", counts[topic], flush=True)

from rosbags.highlevel import AnyReader  # noqa: E402

with AnyReader([Path(path)]) as r:
    counts = Counter()
    typed = [c for c in r.connections if c.msgdef.data]
    for conn, _t, raw in r.messages(connections=typed):
        msg = r.deserialize(raw, conn.msgtype)
        counts[(conn.topic, conn.msgtype)] += 1
        print("rosbags-msg", conn.topic, json.dumps(plain(msg), sort_keys=True, default=str), flush=True)
    for (topic, ty), n in sorted(counts.items()):
        print("rosbags", topic, ty, n, flush=True)
print("done", flush=True)
