"""Shared bits of the roam-dds test peers: a std_msgs/String on the wire, QoS from argv."""
import signal
import sys
from dataclasses import dataclass

from cyclonedds.core import Policy, Qos
from cyclonedds.idl import IdlStruct, types
from cyclonedds.util import duration


@dataclass
class String_(IdlStruct, typename="std_msgs::msg::dds_::String_"):
    """std_msgs/msg/String as rmw_cyclonedds puts it on the wire."""
    data: str


# The ROS 2 message types several peers share, as rmw_cyclonedds puts them on the wire.
@dataclass
class Time_(IdlStruct, typename="builtin_interfaces::msg::dds_::Time_"):
    sec: types.int32
    nanosec: types.uint32


@dataclass
class Header_(IdlStruct, typename="std_msgs::msg::dds_::Header_"):
    stamp: Time_
    frame_id: str


@dataclass
class Point_(IdlStruct, typename="geometry_msgs::msg::dds_::Point_"):
    x: types.float64
    y: types.float64
    z: types.float64


@dataclass
class PointStamped_(IdlStruct, typename="geometry_msgs::msg::dds_::PointStamped_"):
    header: Header_
    point: Point_


def qos(reliable=True, transient_local=False, depth=10):
    """depth 0: KEEP_ALL (every sample kept until taken or acknowledged)."""
    return Qos(
        Policy.Reliability.Reliable(duration(seconds=1)) if reliable else Policy.Reliability.BestEffort,
        Policy.Durability.TransientLocal if transient_local else Policy.Durability.Volatile,
        Policy.History.KeepAll if depth == 0 else Policy.History.KeepLast(depth),
    )


def exit_on_sigterm():
    """Turn SIGTERM into a normal exit so CycloneDDS says goodbye to its peers."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
