"""Shared bits of the roam-dds test peers: a std_msgs/String on the wire, QoS from argv."""
import signal
import sys
from dataclasses import dataclass

from cyclonedds.core import Policy, Qos
from cyclonedds.idl import IdlStruct
from cyclonedds.util import duration


@dataclass
class String_(IdlStruct, typename="std_msgs::msg::dds_::String_"):
    """std_msgs/msg/String as rmw_cyclonedds puts it on the wire."""
    data: str


def qos(reliable=True, transient_local=False, depth=10):
    return Qos(
        Policy.Reliability.Reliable(duration(seconds=1)) if reliable else Policy.Reliability.BestEffort,
        Policy.Durability.TransientLocal if transient_local else Policy.Durability.Volatile,
        Policy.History.KeepLast(depth),
    )


def exit_on_sigterm():
    """Turn SIGTERM into a normal exit so CycloneDDS says goodbye to its peers."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
