"""A ROS 2-style AddTwoInts service server or client, as rmw_cyclonedds puts it on the wire.

usage: service.py server DOMAIN NAME
       service.py client DOMAIN NAME GUID COUNT
Requests go on rq/NAMERequest, replies on rr/NAMEReply. Each sample starts with the rmw
request header (client GUID, sequence): the server copies it into its reply and a client keeps
only replies carrying its own GUID. The server prints "served N"; a client prints
"reply SEQ SUM" per answer to its own requests, and "done" when all COUNT are answered.
"""
import sys
import time
from dataclasses import dataclass

from common import exit_on_sigterm, qos
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct, types
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic


@dataclass
class AddTwoInts_Request_(IdlStruct, typename="example_interfaces::srv::dds_::AddTwoInts_Request_"):
    guid: types.uint64
    seq: types.int64
    a: types.int64
    b: types.int64


@dataclass
class AddTwoInts_Response_(IdlStruct, typename="example_interfaces::srv::dds_::AddTwoInts_Response_"):
    guid: types.uint64
    seq: types.int64
    sum: types.int64


exit_on_sigterm()
mode, domain, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
dp = DomainParticipant(domain)
rq = Topic(dp, f"rq/{name}Request", AddTwoInts_Request_)
rr = Topic(dp, f"rr/{name}Reply", AddTwoInts_Response_)

if mode == "server":
    requests = DataReader(dp, rq, qos=qos())
    replies = DataWriter(dp, rr, qos=qos())
    print("ready", flush=True)
    served = 0
    while True:
        for s in requests.take(N=100):
            if not s.sample_info.valid_data:
                continue
            replies.write(AddTwoInts_Response_(guid=s.guid, seq=s.seq, sum=s.a + s.b))
            served += 1
            print(f"served {served}", flush=True)
        time.sleep(0.005)
else:
    guid, count = int(sys.argv[4]), int(sys.argv[5])
    replies = DataReader(dp, rr, qos=qos())
    requests = DataWriter(dp, rq, qos=qos())
    print("ready", flush=True)
    answered = set()
    next_seq, last_send = 1, 0.0
    while len(answered) < count:
        # Like a ROS client: call, wait a little for the answer, call again if none came.
        if next_seq <= count and time.time() - last_send > 0.2:
            requests.write(AddTwoInts_Request_(guid=guid, seq=next_seq, a=guid, b=next_seq))
            last_send = time.time()
        for s in replies.take(N=100):
            if not s.sample_info.valid_data or s.guid != guid or s.seq in answered:
                continue
            answered.add(s.seq)
            print(f"reply {s.seq} {s.sum}", flush=True)
            if s.seq == next_seq:
                next_seq += 1
        time.sleep(0.005)
    print("done", flush=True)
