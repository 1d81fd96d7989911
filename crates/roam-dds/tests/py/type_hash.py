"""A std_msgs/String talker with the USER_DATA a ROS 2 distribution gives it, and an inspector
that prints what the writers of a topic carry in theirs (what `ros2 topic info -v` reads the
type hash from).

usage: type_hash.py talk DOMAIN TOPIC humble|jazzy
       type_hash.py inspect DOMAIN TOPIC
A jazzy talker carries `typehash=RIHS01_...;` (std_msgs/msg/String's hash, as rmw_dds_common
encodes it); a humble one carries nothing. It publishes "hello N" every 50 ms. The inspector
prints "writer USER_DATA" once for every writer of rt/TOPIC it discovers (USER_DATA as text,
"-" when empty), then "detail ..." (its participant, type and QoS).
"""
import sys
import time

from common import String_, exit_on_sigterm, qos
from cyclonedds.builtin import BuiltinDataReader, BuiltinTopicDcpsPublication
from cyclonedds.core import Policy, Qos
from cyclonedds.domain import DomainParticipant
from cyclonedds.pub import DataWriter
from cyclonedds.topic import Topic

STRING_HASH = "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"

exit_on_sigterm()
mode, domain, topic = sys.argv[1], int(sys.argv[2]), sys.argv[3]
dp = DomainParticipant(domain)
if mode == "talk":
    q = qos()
    if sys.argv[4] == "jazzy":
        q = Qos(*q, Policy.Userdata(f"typehash={STRING_HASH};".encode()))
    w = DataWriter(dp, Topic(dp, f"rt/{topic}", String_), qos=q)
    print("ready", flush=True)
    n = 0
    while True:
        w.write(String_(data=f"hello {n}"))
        n += 1
        time.sleep(0.05)
else:
    reader = BuiltinDataReader(dp, BuiltinTopicDcpsPublication)
    print("ready", flush=True)
    seen = set()
    while True:
        for s in reader.take(N=100):
            if s.topic_name != f"rt/{topic}" or s.key in seen:
                continue
            seen.add(s.key)
            data = s.qos[Policy.Userdata].data if Policy.Userdata in s.qos else b""
            print(f"writer {data.decode(errors='replace') or '-'}", flush=True)
            # Whose it is, for a failure's message: its participant and the rest of its QoS.
            print(f"detail participant={s.participant_key} type={s.type_name} qos={s.qos}", flush=True)
        time.sleep(0.02)
