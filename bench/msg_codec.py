#!/usr/bin/env python3
"""The Python pipeline a bridge runs, timed on the CDR files roam-msg-bench writes.

    msg_codec.py WINDOW DIR NAME=TYPE...   prints one JSON object: per NAME, MB/s of CDR
                                           for CDR -> JSON and JSON -> CDR, per second of CPU
                                           time (at least WINDOW seconds a figure)

CDR -> JSON: rosbags deserialises the bytes, the values become rosbridge's JSON shapes
(numeric arrays through numpy's tolist(), uint8[] as base64) and Python's json writes them.
JSON -> CDR: json parses the text, lists become numpy arrays and base64 becomes bytes, rosbags
builds and serialises the message. This is a lower bound on a real bridge's cost: rosbridge
itself walks float sequences element by element in Python to turn NaN into null.
"""

import base64
import json
import sys
import time

import numpy as np
from rosbags.interfaces import Nodetype
from rosbags.typesys import Stores, get_typestore
from rosbags.typesys.base import normalize_fieldname

TS = get_typestore(Stores.ROS2_JAZZY)
BASE, NAME, ARRAY, SEQUENCE = Nodetype.BASE, Nodetype.NAME, Nodetype.ARRAY, Nodetype.SEQUENCE
DTYPES = {'bool': np.bool_, 'byte': np.int8, 'char': np.uint8, 'int8': np.int8, 'uint8': np.uint8,
          'int16': np.int16, 'uint16': np.uint16, 'int32': np.int32, 'uint32': np.uint32,
          'int64': np.int64, 'uint64': np.uint64, 'float32': np.float32, 'float64': np.float64}


def binary(desc):
    sub, n = desc[1]
    return sub[0] == BASE and sub[1][0] in ('uint8', 'char') and (desc[0] == ARRAY or n == 0)


def to_json(val, desc):
    if desc[0] == NAME:
        return {n: to_json(getattr(val, normalize_fieldname(n)), d) for n, d in TS.fielddefs[desc[1]][1]}
    if desc[0] == BASE:
        return val
    if binary(desc):
        return base64.b64encode(val.tobytes()).decode('ascii')
    if isinstance(val, np.ndarray):
        return val.tolist()
    return [to_json(x, desc[1][0]) for x in val]


def from_json(obj, desc):
    if desc[0] == NAME:
        return TS.types[desc[1]](**{normalize_fieldname(n): from_json(obj[n], d) for n, d in TS.fielddefs[desc[1]][1]})
    if desc[0] == BASE:
        return obj
    if binary(desc):
        return np.frombuffer(base64.b64decode(obj), dtype=np.uint8)
    sub = desc[1][0]
    if sub[0] == BASE and sub[1][0] != 'string':
        return np.array(obj, dtype=DTYPES[sub[1][0]])
    return [from_json(x, sub) for x in obj]


def rate(fn, nbytes, min_time, min_iters=3):
    fn()  # warm up (rosbags compiles its codecs on first use)
    iters, start = 0, time.thread_time()
    while True:
        fn()
        iters += 1
        elapsed = time.thread_time() - start
        if elapsed >= min_time and iters >= min_iters:
            return nbytes * iters / elapsed / 1e6


def main():
    window, out_dir, pairs = float(sys.argv[1]), sys.argv[2], sys.argv[3:]
    results = {}
    for pair in pairs:
        name, typename = pair.split('=', 1)
        cdr = open(f'{out_dir}/{name}.cdr', 'rb').read()
        desc = (NAME, typename)
        text = json.dumps(to_json(TS.deserialize_cdr(cdr, typename), desc))

        def decode():
            return json.dumps(to_json(TS.deserialize_cdr(cdr, typename), desc))

        def encode():
            return TS.serialize_cdr(from_json(json.loads(text), desc), typename, little_endian=True)

        if bytes(encode()) != cdr:
            sys.exit(f'{name}: the Python pipeline does not reproduce the CDR')
        results[name] = {'cdr_to_json_mbps': rate(decode, len(cdr), window),
                         'json_to_cdr_mbps': rate(encode, len(cdr), window)}
    print(json.dumps(results))


if __name__ == '__main__':
    main()
