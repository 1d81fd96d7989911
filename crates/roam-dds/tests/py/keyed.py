"""A keyed DDS topic (two @key fields), as a robot fleet's state topic might be.

usage: keyed.py talk DOMAIN TOPIC [--keys N] [--updates M] [--dispose K,...] [--unregister K,...]
                                   [--lifecycle-when FILE] [--volatile] [--best-effort] [--depth D]
       keyed.py listen DOMAIN TOPIC [--volatile] [--best-effort]

talk: writes M updates of each of N instances (fleet "f<k % 2>", robot k), with KEEP_LAST D
(default 1), reliable and transient-local unless told otherwise, and prints "written"; then
(once FILE exists, with --lifecycle-when) disposes and unregisters the keys listed, prints
"done", and keeps the writer alive until stopped (so late joiners can read its history).
listen: prints "ready" ("reader matched" too with --say-matched), then one line per sample:
"data fleet=.. robot=.. update=..", or
"disposed fleet=.. robot=.." / "unregistered fleet=.. robot=.." when an instance's state
changes (an invalid sample carrying the key).
"""
import argparse
import os
import time
from dataclasses import dataclass

from common import exit_on_sigterm
from cyclonedds.core import InstanceState, Policy, Qos
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.annotations import key
from cyclonedds.idl.types import uint32
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration


@dataclass
class RobotState(IdlStruct, typename="roam_test::RobotState"):
    fleet: str
    key("fleet")
    robot: uint32
    key("robot")
    update: uint32
    note: str


p = argparse.ArgumentParser()
p.add_argument("mode", choices=["talk", "listen"])
p.add_argument("domain", type=int)
p.add_argument("topic")
p.add_argument("--keys", type=int, default=8)
p.add_argument("--updates", type=int, default=5)
p.add_argument("--depth", type=int, default=1)
p.add_argument("--dispose", default="")
p.add_argument("--unregister", default="")
p.add_argument("--lifecycle-when", default="")
p.add_argument("--no-autodispose", action="store_true", help="unregistering does not dispose")
p.add_argument("--volatile", action="store_true")
p.add_argument("--best-effort", action="store_true")
p.add_argument("--say-matched", action="store_true", help="listen: print 'reader matched' once")
a = p.parse_args()
exit_on_sigterm()

qos = Qos(
    Policy.Reliability.BestEffort if a.best_effort else Policy.Reliability.Reliable(duration(seconds=1)),
    Policy.Durability.Volatile if a.volatile else Policy.Durability.TransientLocal,
    Policy.History.KeepLast(a.depth),
    Policy.WriterDataLifecycle(autodispose=not a.no_autodispose),
)
dp = DomainParticipant(a.domain)
topic = Topic(dp, a.topic, RobotState)


def instance(k):
    return RobotState(fleet=f"f{k % 2}", robot=k, update=0, note="")


if a.mode == "talk":
    writer = DataWriter(dp, topic, qos=qos)
    print("ready", flush=True)
    for u in range(a.updates):
        for k in range(a.keys):
            writer.write(RobotState(fleet=f"f{k % 2}", robot=k, update=u, note=f"robot {k} update {u}"))
    print("written", flush=True)
    while a.lifecycle_when and not os.path.exists(a.lifecycle_when):
        time.sleep(0.05)
    for k in [int(x) for x in a.dispose.split(",") if x]:
        writer.dispose(instance(k))
    for k in [int(x) for x in a.unregister.split(",") if x]:
        writer.unregister_instance(instance(k))
    print("done", flush=True)
    while True:
        time.sleep(1)
else:
    reader = DataReader(dp, topic, qos=qos)
    print("ready", flush=True)
    matched = False
    while True:
        # Said once, so a test with volatile readers can start the talker only after the
        # writer on this side exists and has matched (else the first samples go nowhere).
        if a.say_matched and not matched and reader.get_matched_publications():
            matched = True
            print("reader matched", flush=True)
        for s in reader.take(N=64):
            info = s.sample_info
            # A valid sample carries its instance's state too; an invalid one only the state
            # change, with the key in key_sample.
            k = s if info.valid_data else s.key_sample
            if info.valid_data:
                print(f"data fleet={s.fleet} robot={s.robot} update={s.update}", flush=True)
            if info.instance_state == InstanceState.NotAliveDisposed:
                print(f"disposed fleet={k.fleet} robot={k.robot}", flush=True)
            elif info.instance_state == InstanceState.NotAliveNoWriters:
                print(f"unregistered fleet={k.fleet} robot={k.robot}", flush=True)
        time.sleep(0.01)
