"""A ROS 2 Fibonacci action server or client (example_interfaces/action/Fibonacci), as
rmw_cyclonedds and rcl_action put it on the wire.

usage: action.py server DOMAIN NAME [STEP_MS]
       action.py client DOMAIN NAME GUID ORDER [CANCEL_AFTER]

An action is three services (`rq/NAME/_action/{send_goal,cancel_goal,get_result}Request` and
their `rr/...Reply`, each sample led by rmw_cyclonedds's request header: client GUID, sequence)
and two topics (`rt/NAME/_action/feedback`, and `rt/NAME/_action/status`: transient-local,
keep last 1).

The server accepts every goal, adds one number of the sequence per step (100 ms by default),
publishing feedback and status, and answers `get_result` when the goal ends, however long
after it was asked; it prints "goal HEX ORDER", "succeeded HEX", "canceled HEX". The client
waits for the server like rclcpp's `wait_for_action_server`, sends one goal, asks for its
result at once (as rclcpp does), optionally cancels after CANCEL_AFTER feedback messages, and
prints "accepted", "feedback 0,1,1,...", "status CODE" (when its goal's status changes),
"cancel RETURN_CODE N_CANCELING", "result STATUS 0,1,1,..." and "done".
"""
import os
import sys
import time
from dataclasses import dataclass, field

from common import exit_on_sigterm, qos
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct, types
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic

ACCEPTED, EXECUTING, CANCELING, SUCCEEDED, CANCELED = 1, 2, 3, 4, 5


@dataclass
class UUID_(IdlStruct, typename="unique_identifier_msgs::msg::dds_::UUID_"):
    uuid: types.array[types.uint8, 16]


@dataclass
class Time_(IdlStruct, typename="builtin_interfaces::msg::dds_::Time_"):
    sec: types.int32
    nanosec: types.uint32


@dataclass
class GoalInfo_(IdlStruct, typename="action_msgs::msg::dds_::GoalInfo_"):
    goal_id: UUID_
    stamp: Time_


@dataclass
class GoalStatus_(IdlStruct, typename="action_msgs::msg::dds_::GoalStatus_"):
    goal_info: GoalInfo_
    status: types.int8


@dataclass
class GoalStatusArray_(IdlStruct, typename="action_msgs::msg::dds_::GoalStatusArray_"):
    status_list: types.sequence[GoalStatus_]


PKG = "example_interfaces::action::dds_::Fibonacci"


@dataclass
class Fibonacci_SendGoal_Request_(IdlStruct, typename=f"{PKG}_SendGoal_Request_"):
    guid: types.uint64
    seq: types.int64
    goal_id: UUID_
    order: types.int32


@dataclass
class Fibonacci_SendGoal_Response_(IdlStruct, typename=f"{PKG}_SendGoal_Response_"):
    guid: types.uint64
    seq: types.int64
    accepted: bool
    stamp: Time_


@dataclass
class Fibonacci_GetResult_Request_(IdlStruct, typename=f"{PKG}_GetResult_Request_"):
    guid: types.uint64
    seq: types.int64
    goal_id: UUID_


@dataclass
class Fibonacci_GetResult_Response_(IdlStruct, typename=f"{PKG}_GetResult_Response_"):
    guid: types.uint64
    seq: types.int64
    status: types.int8
    sequence: types.sequence[types.int32]


@dataclass
class Fibonacci_FeedbackMessage_(IdlStruct, typename=f"{PKG}_FeedbackMessage_"):
    goal_id: UUID_
    sequence: types.sequence[types.int32]


@dataclass
class CancelGoal_Request_(IdlStruct, typename="action_msgs::srv::dds_::CancelGoal_Request_"):
    guid: types.uint64
    seq: types.int64
    goal_info: GoalInfo_


@dataclass
class CancelGoal_Response_(IdlStruct, typename="action_msgs::srv::dds_::CancelGoal_Response_"):
    guid: types.uint64
    seq: types.int64
    return_code: types.int8
    goals_canceling: types.sequence[GoalInfo_]


def now():
    t = time.time()
    return Time_(sec=int(t), nanosec=int((t % 1) * 1e9))


def hexid(u):
    return bytes(u.uuid).hex()


def joined(seq):
    return ",".join(str(n) for n in seq)


class Endpoints:
    """The action's five DDS topics, with readers and writers for one side."""

    def __init__(self, dp, name, server):
        def topic(kind, part, ty):
            return Topic(dp, f"{kind}/{name}/_action/{part}", ty)

        def service(part, req, rep):
            rq = topic("rq", part + "Request", req)
            rr = topic("rr", part + "Reply", rep)
            if server:
                return DataReader(dp, rq, qos=qos()), DataWriter(dp, rr, qos=qos())
            return DataWriter(dp, rq, qos=qos()), DataReader(dp, rr, qos=qos())

        self.goal = service("send_goal", Fibonacci_SendGoal_Request_, Fibonacci_SendGoal_Response_)
        self.cancel = service("cancel_goal", CancelGoal_Request_, CancelGoal_Response_)
        self.result = service("get_result", Fibonacci_GetResult_Request_, Fibonacci_GetResult_Response_)
        feedback = topic("rt", "feedback", Fibonacci_FeedbackMessage_)
        status = topic("rt", "status", GoalStatusArray_)
        status_qos = qos(transient_local=True, depth=1)
        if server:
            self.feedback = DataWriter(dp, feedback, qos=qos())
            self.status = DataWriter(dp, status, qos=status_qos)
        else:
            self.feedback = DataReader(dp, feedback, qos=qos())
            self.status = DataReader(dp, status, qos=status_qos)


def taken(reader):
    return [s for s in reader.take(N=100) if s.sample_info.valid_data]


@dataclass
class Goal:
    info: GoalInfo_
    order: int
    status: int = ACCEPTED
    sequence: list = field(default_factory=list)
    waiting: list = field(default_factory=list)  # get_result headers (guid, seq)


def serve(ep, step):
    goals = {}

    def publish_status():
        ep.status.write(GoalStatusArray_(status_list=[
            GoalStatus_(goal_info=g.info, status=g.status) for g in goals.values()]))

    def answer_results(g):
        for guid, seq in g.waiting:
            ep.result[1].write(Fibonacci_GetResult_Response_(
                guid=guid, seq=seq, status=g.status, sequence=g.sequence))
        g.waiting.clear()

    print("ready", flush=True)
    next_step = time.time() + step
    while True:
        changed = False
        for r in taken(ep.goal[0]):
            key = hexid(r.goal_id)
            if key not in goals:  # a client's retry of a goal it sent already is answered again
                goals[key] = Goal(info=GoalInfo_(goal_id=r.goal_id, stamp=now()), order=r.order)
                print(f"goal {key} {r.order}", flush=True)
                changed = True
            ep.goal[1].write(Fibonacci_SendGoal_Response_(
                guid=r.guid, seq=r.seq, accepted=True, stamp=goals[key].info.stamp))
        for r in taken(ep.result[0]):
            g = goals.get(hexid(r.goal_id))
            if g is None:
                ep.result[1].write(Fibonacci_GetResult_Response_(guid=r.guid, seq=r.seq, status=0, sequence=[]))
                continue
            g.waiting.append((r.guid, r.seq))
            if g.status in (SUCCEEDED, CANCELED):
                answer_results(g)
        for r in taken(ep.cancel[0]):
            g = goals.get(hexid(r.goal_info.goal_id))
            if g is None:
                code, canceling = 2, []  # UNKNOWN_GOAL_ID
            elif g.status in (SUCCEEDED, CANCELED):
                code, canceling = 3, []  # GOAL_TERMINATED
            else:
                code, canceling = 0, [g.info]
                g.status = CANCELING
                changed = True
            ep.cancel[1].write(CancelGoal_Response_(
                guid=r.guid, seq=r.seq, return_code=code, goals_canceling=canceling))
        if time.time() >= next_step:
            next_step += step
            for key, g in goals.items():
                if g.status == CANCELING:
                    g.status = CANCELED
                    print(f"canceled {key}", flush=True)
                elif g.status in (ACCEPTED, EXECUTING):
                    g.status = EXECUTING
                    n = len(g.sequence)
                    g.sequence.append(n if n < 2 else g.sequence[-1] + g.sequence[-2])
                    ep.feedback.write(Fibonacci_FeedbackMessage_(goal_id=g.info.goal_id, sequence=g.sequence))
                    if len(g.sequence) > g.order:
                        g.status = SUCCEEDED
                        print(f"succeeded {key}", flush=True)
                else:
                    continue
                changed = True
                if g.status in (SUCCEEDED, CANCELED):
                    answer_results(g)
        if changed:
            publish_status()
        time.sleep(0.005)


def matched(ep):
    """What rclcpp's wait_for_action_server checks: every service has a server."""
    return all(w.get_matched_subscriptions() and r.get_matched_publications()
               for w, r in (ep.goal, ep.cancel, ep.result))


def call(guid, writer, reader, make, seq, retry_s, on_other=None):
    """Writes make(seq) until a reply with this guid and sequence comes (retrying like a ROS
    client after its own timeout, with the next sequence number); returns (reply, next seq)."""
    asked = set()
    last = 0.0
    while True:
        if time.time() - last > retry_s:
            writer.write(make(seq))
            asked.add(seq)
            seq += 1
            last = time.time()
        for s in taken(reader):
            if s.guid == guid and s.seq in asked:
                return s, seq
        if on_other:
            on_other()
        time.sleep(0.005)


def client(ep, guid, order, cancel_after):
    while not matched(ep):
        time.sleep(0.02)
    print("ready", flush=True)
    goal_id = UUID_(uuid=list(os.urandom(16)))
    mine = hexid(goal_id)
    seq = 1
    _, seq = call(guid, *ep.goal, lambda s: Fibonacci_SendGoal_Request_(
        guid=guid, seq=s, goal_id=goal_id, order=order), seq, 2.0)
    print("accepted", flush=True)
    result_seq = seq
    ep.result[0].write(Fibonacci_GetResult_Request_(guid=guid, seq=result_seq, goal_id=goal_id))
    seq += 1
    feedbacks, last_status, cancelled = 0, None, False

    def watch():
        nonlocal feedbacks, last_status
        for f in taken(ep.feedback):
            if hexid(f.goal_id) == mine:
                feedbacks += 1
                print(f"feedback {joined(f.sequence)}", flush=True)
        for a in taken(ep.status):
            for st in a.status_list:
                if hexid(st.goal_info.goal_id) == mine and st.status != last_status:
                    last_status = st.status
                    print(f"status {st.status}", flush=True)

    while True:
        watch()
        if cancel_after and not cancelled and feedbacks >= cancel_after:
            cancelled = True
            info = GoalInfo_(goal_id=goal_id, stamp=Time_(sec=0, nanosec=0))
            reply, seq = call(guid, *ep.cancel, lambda s: CancelGoal_Request_(
                guid=guid, seq=s, goal_info=info), seq, 2.0, watch)
            print(f"cancel {reply.return_code} {len(reply.goals_canceling)}", flush=True)
        for r in taken(ep.result[1]):
            if r.guid == guid and r.seq == result_seq:
                # The status topic and the result are separate streams: the status that
                # ends the goal may come after the result. Wait for it, within a deadline.
                end = time.monotonic() + 10.0
                while last_status != r.status and time.monotonic() < end:
                    watch()
                    time.sleep(0.005)
                print(f"result {r.status} {joined(r.sequence)}", flush=True)
                print("done", flush=True)
                return
        time.sleep(0.005)


exit_on_sigterm()
mode, domain, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
dp = DomainParticipant(domain)
if mode == "server":
    step_ms = int(sys.argv[4]) if len(sys.argv) > 4 else 100
    serve(Endpoints(dp, name, server=True), step_ms / 1000)
else:
    guid, order = int(sys.argv[4]), int(sys.argv[5])
    cancel_after = int(sys.argv[6]) if len(sys.argv) > 6 else 0
    client(Endpoints(dp, name, server=False), guid, order, cancel_after)
