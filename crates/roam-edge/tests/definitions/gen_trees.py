#!/usr/bin/env python3
"""Writes real ROS 2 interface trees for crates/roam-edge/tests/definitions.rs, from rosbags.

    gen_trees.py OUT_DIR

Nothing here uses roam's code. The standard definitions come from rosbags' ROS 2 Jazzy
typestore, written out as the .msg files ROS installs; the .idl files are written the way
rosidl_adapter writes them (for the standard types with `to_idl` of roam-msg's oracle script,
which is plain Python over rosbags); the expected ros2msg texts and the CDR bytes come from
rosbags too.

    OUT/overlay/share/{sensor_msgs,geometry_msgs}/msg/X.msg and X.idl
        an ament prefix, as ROS installs one (both files, the .idl generated from the .msg)
    OUT/underlay/share/{std_msgs,builtin_interfaces}/msg/X.msg, and sensor_msgs/msg/LaserScan.msg
        a second prefix; its LaserScan is different, so it must lose to the overlay's
    OUT/ws/src/my_robot_msgs/{package.xml,CMakeLists.txt,msg,srv,action}
        a colcon source package (a msg_paths package directory) with nested types, constants,
        defaults, bounded fields, a service and an action
    OUT/idl_only/share/<pkg>/{msg,srv,action}/X.idl
        the same packages shipping .idl files only
    OUT/expected.json
        per looked-up type: rosbags' ros2msg text, and CDR of random values with their JSON
"""

import json
import random
import sys
from pathlib import Path

from rosbags.typesys import Stores, get_types_from_msg, get_typestore

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / 'roam-msg' / 'tests' / 'oracle'))
import oracle  # noqa: E402  (roam-msg's rosbags helpers: random values, rosbridge JSON, IDL)

SEP = '=' * 80 + '\n'
PKG = 'my_robot_msgs'

STATUS = """# Health of one tracker, as a robot reports it.
uint8 OK=0
uint8 WARN=1   # degraded
uint8 ERROR=2
uint8 level
string detail
builtin_interfaces/Time stamp
"""

TRACK = """# A tracked object.

uint8 KIND_PERSON=1 # constants come first in the wire-free part
string NAME_PREFIX=trk_
std_msgs/Header header
Status[] history       # same-package types may be written bare
Status current
geometry_msgs/PoseStamped pose
float64[3] velocity
int32 confidence 50
string<=8 label "none"
sensor_msgs/LaserScan[<=2] scans
"""

GET_TRACK = """# Ask for a track by its id.
uint32 id
bool with_history true
---
bool found
Track track
string message
"""

FOLLOW_TRACK = """# Follow a track until told to stop.
uint32 track_id
float64 distance 1.5
---
Status final_status
float64 travelled
---
geometry_msgs/PoseStamped current
float32 progress
"""

# The structures rosidl derives (rosidl_parser/definition.py), registered in rosbags as
# messages so it can serialize them; the layout is what counts on the wire.
DERIVED = {
    'GetTrack_Request': GET_TRACK.split('---')[0],
    'GetTrack_Response': GET_TRACK.split('---')[1],
    'FollowTrack_Goal': FOLLOW_TRACK.split('---')[0],
    'FollowTrack_Result': FOLLOW_TRACK.split('---')[1],
    'FollowTrack_Feedback': FOLLOW_TRACK.split('---')[2],
    'FollowTrack_SendGoal_Request': 'unique_identifier_msgs/UUID goal_id\nmy_robot_msgs/msg/FollowTrack_Goal goal\n',
    'FollowTrack_FeedbackMessage': 'unique_identifier_msgs/UUID goal_id\n'
                                   'my_robot_msgs/msg/FollowTrack_Feedback feedback\n',
}

# What rosidl_adapter writes for the custom package (msg.idl.em, srv.idl.em, action.idl.em).
CUSTOM_IDL = {
    'msg/Status.idl': """// generated from rosidl_adapter/resource/msg.idl.em
// with input from my_robot_msgs/msg/Status.msg
// generated code does not contain a copyright notice

#include "builtin_interfaces/msg/Time.idl"

module my_robot_msgs {
  module msg {
    module Status_Constants {
      const uint8 OK = 0;
      @verbatim (language="comment", text=
        "degraded")
      const uint8 WARN = 1;
      const uint8 ERROR = 2;
    };
    @verbatim (language="comment", text=
      "Health of one tracker, as a robot reports it.")
    struct Status {
      uint8 level;

      string detail;

      builtin_interfaces::msg::Time stamp;
    };
  };
};
""",
    'msg/Track.idl': """// generated from rosidl_adapter/resource/msg.idl.em
// with input from my_robot_msgs/msg/Track.msg
// generated code does not contain a copyright notice

#include "geometry_msgs/msg/PoseStamped.idl"
#include "my_robot_msgs/msg/Status.idl"
#include "sensor_msgs/msg/LaserScan.idl"
#include "std_msgs/msg/Header.idl"

module my_robot_msgs {
  module msg {
    typedef double double__3[3];
    module Track_Constants {
      const uint8 KIND_PERSON = 1;
      const string NAME_PREFIX = "trk_";
    };
    @verbatim (language="comment", text=
      "A tracked object.")
    struct Track {
      std_msgs::msg::Header header;

      @verbatim (language="comment", text=
        "same-package types may be written bare")
      sequence<my_robot_msgs::msg::Status> history;

      my_robot_msgs::msg::Status current;

      geometry_msgs::msg::PoseStamped pose;

      double__3 velocity;

      @default (value=50)
      int32 confidence;

      @default (value="none")
      string<8> label;

      sequence<sensor_msgs::msg::LaserScan, 2> scans;
    };
  };
};
""",
    'srv/GetTrack.idl': """// generated from rosidl_adapter/resource/srv.idl.em
// with input from my_robot_msgs/srv/GetTrack.srv
// generated code does not contain a copyright notice

#include "my_robot_msgs/msg/Track.idl"

module my_robot_msgs {
  module srv {
    @verbatim (language="comment", text=
      "Ask for a track by its id.")
    struct GetTrack_Request {
      uint32 id;

      @default (value=TRUE)
      boolean with_history;
    };
    struct GetTrack_Response {
      boolean found;

      my_robot_msgs::msg::Track track;

      string message;
    };
  };
};
""",
    'action/FollowTrack.idl': """// generated from rosidl_adapter/resource/action.idl.em
// with input from my_robot_msgs/action/FollowTrack.action
// generated code does not contain a copyright notice

#include "geometry_msgs/msg/PoseStamped.idl"
#include "my_robot_msgs/msg/Status.idl"

module my_robot_msgs {
  module action {
    @verbatim (language="comment", text=
      "Follow a track until told to stop.")
    struct FollowTrack_Goal {
      uint32 track_id;

      @default (value=1.5)
      double distance;
    };
    struct FollowTrack_Result {
      my_robot_msgs::msg::Status final_status;

      double travelled;
    };
    struct FollowTrack_Feedback {
      geometry_msgs::msg::PoseStamped current;

      float progress;
    };
  };
};
""",
}

PACKAGE_XML = """<?xml version="1.0"?>
<?xml-model href="http://download.ros.org/schema/package_format3.xsd" schematypens="http://www.w3.org/2001/XMLSchema"?>
<package format="3">
  <name>my_robot_msgs</name>
  <version>0.1.0</version>
  <description>Interfaces of a test robot</description>
  <maintainer email="dev@example.com">dev</maintainer>
  <license>Apache-2.0</license>
  <buildtool_depend>ament_cmake</buildtool_depend>
  <buildtool_depend>rosidl_default_generators</buildtool_depend>
  <depend>geometry_msgs</depend>
  <depend>sensor_msgs</depend>
  <member_of_group>rosidl_interface_packages</member_of_group>
  <export><build_type>ament_cmake</build_type></export>
</package>
"""


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def msg_file(ts, typename):
    """The type's own .msg text as ROS ships it: a comment, same-package types written bare."""
    pkg = typename.split('/')[0]
    own = ts.generate_msgdef(typename, ros_version=2)[0].split(SEP)[0]
    lines = [line[len(pkg) + 1:] if line.startswith(pkg + '/') else line for line in own.splitlines()]
    return f'# {typename}, as installed (written from rosbags)\n\n' + '\n'.join(lines) + '\n'


def custom_store():
    ts = get_typestore(Stores.ROS2_JAZZY)
    types = {}
    types.update(get_types_from_msg(STATUS, f'{PKG}/msg/Status'))
    types.update(get_types_from_msg(TRACK, f'{PKG}/msg/Track'))
    for name, text in DERIVED.items():
        types.update(get_types_from_msg(text, f'{PKG}/msg/{name}'))
    ts.register(types)
    return ts


def cases(ts, rng, typename):
    gen = oracle.Gen(ts, rng)
    out = []
    for mode in ('empty', 'random', 'extreme'):
        cdr = ts.serialize_cdr(gen.message(typename, mode), typename, little_endian=True)
        value = oracle.msg_to_json(ts, ts.deserialize_cdr(cdr, typename), typename)
        out.append({'cdr': bytes(cdr).hex(), 'json': value})
    return out


def main(out):
    ts = custom_store()
    rng = random.Random(12)
    for pkg in ('sensor_msgs', 'geometry_msgs'):
        for typename in sorted(t for t in ts.fielddefs if t.startswith(pkg + '/')):
            name = typename.split('/')[-1]
            write(out / 'overlay/share' / pkg / 'msg' / f'{name}.msg', msg_file(ts, typename))
            write(out / 'overlay/share' / pkg / 'msg' / f'{name}.idl', oracle.to_idl(ts, typename))
            write(out / 'idl_only/share' / pkg / 'msg' / f'{name}.idl', oracle.to_idl(ts, typename))
        write(out / 'overlay/share' / pkg / 'package.xml', PACKAGE_XML.replace(PKG, pkg))
    for pkg in ('std_msgs', 'builtin_interfaces'):
        for typename in sorted(t for t in ts.fielddefs if t.startswith(pkg + '/')):
            name = typename.split('/')[-1]
            write(out / 'underlay/share' / pkg / 'msg' / f'{name}.msg', msg_file(ts, typename))
            write(out / 'idl_only/share' / pkg / 'msg' / f'{name}.idl', oracle.to_idl(ts, typename))
    write(out / 'underlay/share/sensor_msgs/msg/LaserScan.msg', 'float64 older_laserscan_from_the_underlay\n')
    # A package without interfaces in the first prefix must not hide the real one.
    write(out / 'overlay/share/std_msgs/cmake/std_msgs-extras.cmake', '# not interfaces\n')

    src = out / 'ws/src' / PKG
    write(src / 'package.xml', PACKAGE_XML)
    write(src / 'CMakeLists.txt', 'cmake_minimum_required(VERSION 3.8)\nproject(my_robot_msgs)\n')
    write(src / 'msg/Status.msg', STATUS)
    write(src / 'msg/Track.msg', TRACK)
    write(src / 'srv/GetTrack.srv', GET_TRACK)
    write(src / 'action/FollowTrack.action', FOLLOW_TRACK)
    for rel, text in CUSTOM_IDL.items():
        write(out / 'idl_only/share' / PKG / rel, text)

    expected = {}
    for roam_name, oracle_name, with_def in [
        ('sensor_msgs/msg/LaserScan', 'sensor_msgs/msg/LaserScan', True),
        ('sensor_msgs/msg/PointCloud2', 'sensor_msgs/msg/PointCloud2', True),
        ('geometry_msgs/msg/PoseStamped', 'geometry_msgs/msg/PoseStamped', True),
        (f'{PKG}/msg/Track', f'{PKG}/msg/Track', True),
        (f'{PKG}/srv/GetTrack_Request', f'{PKG}/msg/GetTrack_Request', True),
        (f'{PKG}/srv/GetTrack_Response', f'{PKG}/msg/GetTrack_Response', True),
        (f'{PKG}/action/FollowTrack_Goal', f'{PKG}/msg/FollowTrack_Goal', True),
        (f'{PKG}/action/FollowTrack_Result', f'{PKG}/msg/FollowTrack_Result', True),
        # Their dependencies' names differ (action/ in roam, msg/ in rosbags): bytes only.
        (f'{PKG}/action/FollowTrack_SendGoal_Request', f'{PKG}/msg/FollowTrack_SendGoal_Request', False),
        (f'{PKG}/action/FollowTrack_FeedbackMessage', f'{PKG}/msg/FollowTrack_FeedbackMessage', False),
    ]:
        expected[roam_name] = {
            'oracle_type': oracle_name,
            'def': ts.generate_msgdef(oracle_name, ros_version=2)[0] if with_def else None,
            'cases': cases(ts, rng, oracle_name),
        }
    write(out / 'expected.json', json.dumps(expected))


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
