#!/usr/bin/env python3
"""The independent oracle for roam-msg: rosbags (PyPI) definitions, values and CDR.

    oracle.py gen DIR [SEED]   writes DIR/cases.jsonl (definitions, CDR in both byte orders,
                               the rosbridge-style JSON of each value), DIR/idl.jsonl and
                               DIR/hashes.jsonl (each type's RIHS01 type hash)
    oracle.py verify DIR       reads DIR/roam.jsonl (roam's JSON -> CDR of each case), has
                               rosbags deserialize it and compares with the original values

Run by crates/roam-msg/tests/oracle.rs. Nothing here uses roam's code: the definitions come
from rosbags' ROS 2 Humble and Jazzy typestores (plus the service and action types rosidl
derives, written from rosidl_parser/definition.py), the bytes from rosbags' serializer, and
the JSON from rosbridge's rules (message_conversion.py) applied to rosbags' objects.

rosbags reads `byte` as a signed int8 (its ROS 1 heritage); ROS 2's `byte` is an octet (0..255),
so byte values stay in 0..127 where both agree and JSON shows them unsigned.

Type hashes come from rosbags' `Typestore.hash_rihs01`. It hashes `char` as IDL `char` (13),
while rosidl turns a .msg `char` into `uint8` (3) first; for the types that use `char`,
hashes.jsonl also gives rosbags' hash of the definitions with `char` read as `uint8`.
"""

import base64
import json
import math
import random
import sys

import numpy as np
from rosbags.interfaces import Nodetype
from rosbags.typesys import Stores, get_typestore, get_types_from_idl, get_types_from_msg
from rosbags.typesys.base import normalize_fieldname

BASE, NAME, ARRAY, SEQUENCE = Nodetype.BASE, Nodetype.NAME, Nodetype.ARRAY, Nodetype.SEQUENCE
CASES_PER_TYPE = 4
INT_RANGES = {
    'int8': (-128, 127), 'uint8': (0, 255), 'byte': (0, 127), 'char': (0, 255),
    'int16': (-2**15, 2**15 - 1), 'uint16': (0, 2**16 - 1),
    'int32': (-2**31, 2**31 - 1), 'uint32': (0, 2**32 - 1),
    'int64': (-2**63, 2**63 - 1), 'uint64': (0, 2**64 - 1),
}
DTYPES = {
    'bool': np.bool_, 'byte': np.int8, 'char': np.uint8, 'int8': np.int8, 'uint8': np.uint8,
    'int16': np.int16, 'uint16': np.uint16, 'int32': np.int32, 'uint32': np.uint32,
    'int64': np.int64, 'uint64': np.uint64, 'float32': np.float32, 'float64': np.float64,
}
STRINGS = ['', 'a', 'frame_id', 'ünïcödé', '日本語テキスト', 'emoji 😀🚀', 'quote " slash \\ nl \n tab \t',
           'ctl \x01\x1f\x7f', 'x' * 300]
SPECIAL_F64 = [float('nan'), float('inf'), float('-inf'), -0.0, 0.0, 5e-324, 2.2250738585072014e-308,
               1.7976931348623157e308, -1.7976931348623157e308, 1.0, -1.5, 0.1]
SPECIAL_F32 = [float('nan'), float('inf'), float('-inf'), -0.0, 0.0, 1e-45, 1.1754943508222875e-38,
               3.4028234663852886e38, -3.4028234663852886e38, 1.0, -1.5, float(np.float32(0.1))]

# The types rosidl derives for services and actions (rosidl_parser/definition.py, classes
# Service and Action), registered in rosbags under message names; roam parses the .srv/.action
# text itself and must derive the same structures.
EXTRA = {
    'srv': [
        ('example_interfaces/srv/AddTwoInts', 'int64 a\nint64 b\n---\nint64 sum\n', {
            'AddTwoInts_Request': 'int64 a\nint64 b',
            'AddTwoInts_Response': 'int64 sum',
            'AddTwoInts_Event': 'service_msgs/ServiceEventInfo info\n'
                                'example_interfaces/msg/AddTwoInts_Request[<=1] request\n'
                                'example_interfaces/msg/AddTwoInts_Response[<=1] response',
        }),
        ('action_msgs/srv/CancelGoal', None, {
            'CancelGoal_Request': 'action_msgs/GoalInfo goal_info',
            'CancelGoal_Response': 'int8 ERROR_NONE=0\nint8 ERROR_REJECTED=1\nint8 ERROR_UNKNOWN_GOAL_ID=2\n'
                                   'int8 ERROR_GOAL_TERMINATED=3\nint8 return_code\n'
                                   'action_msgs/GoalInfo[] goals_canceling',
        }),
    ],
    'action': [
        ('example_interfaces/action/Fibonacci',
         'int32 order\n---\nint32[] sequence\n---\nint32[] sequence\n', {
             'Fibonacci_Goal': 'int32 order',
             'Fibonacci_Result': 'int32[] sequence',
             'Fibonacci_Feedback': 'int32[] sequence',
             'Fibonacci_SendGoal_Request': 'unique_identifier_msgs/UUID goal_id\n'
                                           'example_interfaces/action/Fibonacci_Goal goal',
             'Fibonacci_SendGoal_Response': 'bool accepted\nbuiltin_interfaces/Time stamp',
             'Fibonacci_GetResult_Request': 'unique_identifier_msgs/UUID goal_id',
             'Fibonacci_GetResult_Response': 'int8 status\nexample_interfaces/action/Fibonacci_Result result',
             'Fibonacci_FeedbackMessage': 'unique_identifier_msgs/UUID goal_id\n'
                                          'example_interfaces/action/Fibonacci_Feedback feedback',
         }),
    ],
}


def fields_of(ts, typename):
    return ts.fielddefs[typename][1]


def is_empty(fields):
    return len(fields) == 1 and fields[0][0] == 'structure_needs_at_least_one_member'


class Gen:
    """Random values for a typestore's types; `mode` picks empty, extreme or random values."""

    def __init__(self, ts, rng):
        self.ts, self.rng = ts, rng

    def scalar(self, t, bound, mode):
        r = self.rng
        if t == 'bool':
            return mode == 'extreme' or (mode == 'random' and r.random() < 0.5)
        if t == 'string':
            if bound:
                return ''.join(r.choice('abcxyz_0') for _ in range(bound if mode == 'extreme' else r.randint(0, bound)))
            return '' if mode == 'empty' else r.choice(STRINGS)
        if t in ('float32', 'float64'):
            specials = SPECIAL_F32 if t == 'float32' else SPECIAL_F64
            if mode == 'empty':
                return 0.0
            if mode == 'extreme' or r.random() < 0.3:
                return r.choice(specials)
            v = r.uniform(-1e6, 1e6) * 10 ** r.randint(-30, 30 if t == 'float64' else 20)
            return float(np.float32(v)) if t == 'float32' else v
        lo, hi = INT_RANGES[t]
        if mode == 'empty':
            return 0
        if mode == 'extreme':
            return r.choice([lo, hi])
        return r.randint(lo, hi)

    def array(self, t, bound, n, mode):
        vals = [self.scalar(t, bound, mode if mode != 'extreme' or i % 3 == 0 else 'random') for i in range(n)]
        if t == 'string':
            return vals
        return np.array(vals, dtype=DTYPES[t])

    def value(self, desc, mode, depth):
        kind = desc[0]
        if kind == NAME:
            return self.message(desc[1], mode, depth + 1)
        if kind == BASE:
            return self.scalar(desc[1][0], desc[1][1], mode)
        sub, n = desc[1]
        if kind == SEQUENCE:
            if mode == 'empty':
                n = 0
            elif n:  # bounded: at the bound when extreme
                n = n if mode == 'extreme' else self.rng.randint(0, n)
            elif sub[0] == BASE and sub[1][0] != 'string':
                n = self.rng.choice([1000, 2048]) if mode == 'extreme' else self.rng.randint(0, 40)
            else:
                n = self.rng.randint(0, 4 if depth < 3 else 1) if mode != 'extreme' else 3
        if sub[0] == BASE:
            return self.array(sub[1][0], sub[1][1], n, mode)
        return [self.value(sub, mode, depth) for _ in range(n)]

    def message(self, typename, mode, depth=0):
        fields = fields_of(self.ts, typename)
        if is_empty(fields):  # rosidl's placeholder member is always 0 on the wire
            return self.ts.types[typename](structure_needs_at_least_one_member=0)
        kwargs = {normalize_fieldname(name): self.value(desc, mode, depth) for name, desc in fields}
        return self.ts.types[typename](**kwargs)


def binary(desc):
    """rosbridge's base64 fields: uint8[] / char[] (sequence<uint8>) and uint8[N] / char[N]."""
    sub, n = desc[1]
    return sub[0] == BASE and sub[1][0] in ('uint8', 'char') and (desc[0] == ARRAY or n == 0)


def to_json_scalar(v, t):
    if t in ('float32', 'float64'):
        f = float(v)
        return f if math.isfinite(f) else None
    if t == 'bool':
        return bool(v)
    if t == 'string':
        return v
    if t == 'byte':
        return int(v) & 0xff
    return int(v)


def to_json(ts, val, desc):
    kind = desc[0]
    if kind == NAME:
        return msg_to_json(ts, val, desc[1])
    if kind == BASE:
        return to_json_scalar(val, desc[1][0])
    if binary(desc):
        return base64.b64encode(np.asarray(val, dtype=np.uint8).tobytes()).decode('ascii')
    sub = desc[1][0]
    if sub[0] == BASE:
        return [to_json_scalar(x, sub[1][0]) for x in val]
    return [to_json(ts, x, sub) for x in val]


def msg_to_json(ts, msg, typename):
    fields = fields_of(ts, typename)
    if is_empty(fields):
        return {}
    return {name: to_json(ts, getattr(msg, normalize_fieldname(name)), desc) for name, desc in fields}


def from_json_scalar(v, t):
    if t in ('float32', 'float64'):
        return float('nan') if v is None else float(v)
    if t == 'byte':
        return v - 256 if v > 127 else v
    return v


def from_json(ts, obj, desc):
    """The oracle's own JSON -> message (None -> NaN, base64 -> bytes), for the round trip."""
    kind = desc[0]
    if kind == NAME:
        fields = fields_of(ts, desc[1])
        if is_empty(fields):
            return ts.types[desc[1]](structure_needs_at_least_one_member=0)
        return ts.types[desc[1]](**{normalize_fieldname(n): from_json(ts, obj[n], d) for n, d in fields})
    if kind == BASE:
        return from_json_scalar(obj, desc[1][0])
    sub = desc[1][0]
    if binary(desc):
        return np.frombuffer(base64.b64decode(obj), dtype=np.uint8).copy()
    if sub[0] == BASE:
        t = sub[1][0]
        vals = [from_json_scalar(x, t) for x in obj]
        return vals if t == 'string' else np.array(vals, dtype=DTYPES[t])
    return [from_json(ts, x, sub) for x in obj]


def b64(data):
    return base64.b64encode(bytes(data)).decode('ascii')


def cases_for(ts, gen, typename):
    out = []
    for i in range(CASES_PER_TYPE):
        mode = ['empty', 'extreme', 'random', 'random'][i]
        msg = gen.message(typename, mode)
        le = ts.serialize_cdr(msg, typename, little_endian=True)
        be = ts.serialize_cdr(msg, typename, little_endian=False)
        # The values are what rosbags reads back from its bytes (a float32 holds what fits).
        js = msg_to_json(ts, ts.deserialize_cdr(le, typename), typename)
        back = from_json(ts, js, (NAME, typename))
        out.append({
            'le': b64(le), 'be': b64(be), 'json': js,
            'rt_le': b64(ts.serialize_cdr(back, typename, little_endian=True)),
            'rt_be': b64(ts.serialize_cdr(back, typename, little_endian=False)),
        })
    return out


def store_with_extras(store):
    ts = get_typestore(store)
    types = {}
    for kind in ('srv', 'action'):
        for full, _, parts in EXTRA[kind]:
            pkg = full.split('/')[0]
            folder = 'msg' if kind == 'srv' else 'action'
            for name, text in parts.items():
                types.update(get_types_from_msg(text, f'{pkg}/{folder}/{name}'))
    ts.register(types)
    return ts


# --- IDL: the .idl rosidl_adapter writes for a .msg (rosidl_adapter/resource/struct.idl.em) ---

IDL_NAMES = {'bool': 'boolean', 'byte': 'octet', 'char': 'uint8', 'float32': 'float', 'float64': 'double'}


def idl_base(sub):
    if sub[0] == NAME:
        pkg, _, name = sub[1].split('/')
        return f'{pkg}::msg::{name}'
    t, bound = sub[1]
    if t == 'string' and bound:
        return f'string<{bound}>'
    return IDL_NAMES.get(t, t)


def to_idl(ts, typename):
    pkg, _, name = typename.split('/')
    consts, fields = ts.fielddefs[typename]
    typedefs, members = [], []
    for fname, desc in fields:
        if desc[0] in (BASE, NAME):
            members.append(f'      {idl_base(desc)} {fname};')
            continue
        sub, n = desc[1]
        base = idl_base(sub)
        if desc[0] == ARRAY:
            ident = base.replace('::', '__').replace('<', '__').replace('>', '')
            if ident != base and f'    typedef {base} {ident};' not in typedefs:
                typedefs.append(f'    typedef {base} {ident};')
            alias = f'{ident}__{n}'
            if f'    typedef {ident} {alias}[{n}];' not in typedefs:
                typedefs.append(f'    typedef {ident} {alias}[{n}];')
            members.append(f'      {alias} {fname};')
        else:
            bound = f', {n}' if n else ''
            members.append(f'      sequence<{base}{bound}> {fname};')
    includes = sorted({f'#include "{d[1]}.idl"' for _, d in fields if d[0] == NAME}
                      | {f'#include "{d[1][0][1]}.idl"' for _, d in fields
                         if d[0] in (ARRAY, SEQUENCE) and d[1][0][0] == NAME})
    lines = ['// generated from rosidl_adapter/resource/msg.idl.em', *includes, '', f'module {pkg} {{', '  module msg {']
    lines += typedefs
    if consts:
        lines.append(f'    module {name}_Constants {{')
        for cname, ctype, value in consts:
            lines.append(f'      const {IDL_NAMES.get(ctype, ctype)} {cname} = {value};')
        lines.append('    };')
    lines.append('    @verbatim (language="comment", text=\n      "Generated by the roam-msg oracle.")')
    lines.append(f'    struct {name} {{')
    lines += members
    lines += ['    };', '  };', '};', '']
    return '\n'.join(lines)


def char_as_uint8(fielddef):
    """rosidl maps .msg `char` to IDL `uint8`: compare the two forms with that applied."""
    def fix(desc):
        if desc[0] == BASE and desc[1][0] == 'char':
            return (BASE, ('uint8', desc[1][1]))
        if desc[0] in (ARRAY, SEQUENCE):
            return (desc[0], (fix(desc[1][0]), desc[1][1]))
        return desc
    consts, fields = fielddef
    return ([tuple(c) for c in consts], [(n, fix(d)) for n, d in fields])


# --- RIHS01 type hashes (REP 2011) ---

def retype(fields, fix_base=lambda b: b, rename=None):
    """Fields with each base type passed through `fix_base` and nested names through `rename`."""
    rename = rename or {}

    def fix(desc):
        if desc[0] == NAME:
            return (NAME, rename.get(desc[1], desc[1]))
        if desc[0] == BASE:
            return (BASE, fix_base(desc[1]))
        return (desc[0], (fix(desc[1][0]), desc[1][1]))
    return [(n, fix(d)) for n, d in fields]


def hash_stores(store):
    """Typestores to hash with: `store` plus the derived service and action types under the names
    rosidl gives them (`pkg/srv/X_Request`: rosbags' .msg parser cannot register those, so they
    are renamed here), and a copy of it with `char` read as `uint8`."""
    ts = store_with_extras(store)
    rename = {}
    for full, _, parts in EXTRA['srv']:
        pkg = full.split('/')[0]
        rename.update({f'{pkg}/msg/{name}': f'{pkg}/srv/{name}' for name in parts})
    hts = get_typestore(store)
    hts.register({rename.get(name, name): (consts, retype(fields, rename=rename))
                  for name, (consts, fields) in ts.fielddefs.items() if name not in hts.fielddefs})
    u8 = get_typestore(Stores.EMPTY)
    u8.register({name: (consts, retype(fields, lambda b: ('uint8', 0) if b[0] == 'char' else b))
                 for name, (consts, fields) in hts.fielddefs.items()})
    return hts, u8


def uses_char(ts, typename, seen=None):
    """Whether `typename` or a type it contains has a `char` field."""
    seen = set() if seen is None else seen
    seen.add(typename)
    for _, desc in ts.fielddefs[typename][1]:
        sub = desc[1][0] if desc[0] in (ARRAY, SEQUENCE) else desc
        if sub[0] == BASE and sub[1][0] == 'char':
            return True
        if sub[0] == NAME and sub[1] not in seen and uses_char(ts, sub[1], seen):
            return True
    return False


def hash_entry(label, stores, typename):
    hts, u8 = stores
    entry = {'store': label, 'roam_type': typename, 'hash': hts.hash_rihs01(typename),
             'uses_char': uses_char(hts, typename)}
    if entry['uses_char']:
        entry['hash_char_as_uint8'] = u8.hash_rihs01(typename)
    return json.dumps(entry) + '\n'


def gen(out_dir, seed):
    rng = random.Random(seed)
    hashes = open(f'{out_dir}/hashes.jsonl', 'w')
    with open(f'{out_dir}/cases.jsonl', 'w') as f:
        for label, store in (('humble', Stores.ROS2_HUMBLE), ('jazzy', Stores.ROS2_JAZZY)):
            ts = store_with_extras(store)
            g = Gen(ts, rng)
            base = get_typestore(store)
            stores = hash_stores(store)
            for typename in sorted(base.fielddefs):
                msgdef, _ = ts.generate_msgdef(typename, ros_version=2)
                f.write(json.dumps({'store': label, 'type': typename, 'roam_type': typename, 'def': msgdef,
                                    'cases': cases_for(ts, g, typename)}) + '\n')
                hashes.write(hash_entry(label, stores, typename))
            for kind in ('srv', 'action'):
                for full, text, parts in EXTRA[kind]:
                    pkg = full.split('/')[0]
                    folder = 'msg' if kind == 'srv' else 'action'
                    for name in parts:
                        if name.endswith('_Event') and label == 'humble':
                            continue
                        typename = f'{pkg}/{folder}/{name}'
                        f.write(json.dumps({
                            'store': label, 'type': typename, 'roam_type': f'{pkg}/{kind}/{name}',
                            'source': {'kind': kind, 'name': full, 'text': text},
                            'def': ts.generate_msgdef(typename, ros_version=2)[0] if folder == 'msg' else None,
                            'cases': cases_for(ts, g, typename)}) + '\n')
                        hashes.write(hash_entry(label, stores, f'{pkg}/{kind}/{name}'))
    hashes.close()
    # IDL: every Jazzy type written as rosidl_adapter writes it, parsed back by rosbags; the
    # result must be the .msg form's definition (char read as uint8).
    ts = get_typestore(Stores.ROS2_JAZZY)
    with open(f'{out_dir}/idl.jsonl', 'w') as f:
        for typename in sorted(ts.fielddefs):
            idl = to_idl(ts, typename)
            # rosbags' IDL grammar has no preprocessor: it reads the text without #include lines
            # (they name files, not types); roam reads the whole text.
            plain = '\n'.join(x for x in idl.splitlines() if not x.startswith('#include'))
            parsed = get_types_from_idl(plain)[typename]
            if char_as_uint8(parsed) != char_as_uint8(ts.fielddefs[typename]):
                sys.exit(f'rosbags reads the IDL of {typename} differently from its .msg form:\n{idl}')
            f.write(json.dumps({'type': typename, 'idl': idl,
                                'msg': ts.generate_msgdef(typename, ros_version=2)[0]}) + '\n')


def verify(out_dir):
    stores = {'humble': store_with_extras(Stores.ROS2_HUMBLE), 'jazzy': store_with_extras(Stores.ROS2_JAZZY)}
    cases = {}
    with open(f'{out_dir}/cases.jsonl') as f:
        for line in f:
            entry = json.loads(line)
            cases[(entry['store'], entry['type'])] = entry
    checked, failures = 0, []
    with open(f'{out_dir}/roam.jsonl') as f:
        for line in f:
            got = json.loads(line)
            entry = cases[(got['store'], got['type'])]
            ts = stores[got['store']]
            want = entry['cases'][got['case']]['json']
            for order in ('le', 'be'):
                msg = ts.deserialize_cdr(base64.b64decode(got[order]), got['type'])
                have = msg_to_json(ts, msg, got['type'])
                if have != want:
                    failures.append(f"{got['store']} {got['type']} case {got['case']} {order}: {have!r} != {want!r}"[:2000])
                checked += 1
    for failure in failures[:20]:
        print(failure, file=sys.stderr)
    print(f'verify: rosbags read {checked} roam encodings, {len(failures)} differ')
    sys.exit(1 if failures or checked == 0 else 0)


if __name__ == '__main__':
    if len(sys.argv) >= 3 and sys.argv[1] == 'gen':
        gen(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    elif len(sys.argv) == 3 and sys.argv[1] == 'verify':
        verify(sys.argv[2])
    else:
        sys.exit(__doc__)
