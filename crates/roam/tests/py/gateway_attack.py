"""What an attacker does to `roam gateway`'s WebSocket doors, on the `websockets` client library
(PyPI): connections that never authenticate, bursts of connections, fragments that claim a
huge total, and a Foxglove client that reads until the gateway ends it.

usage: gateway_attack.py PORT COMMAND ...
  hold SOURCES PER_SOURCE
        opens PER_SOURCE WebSocket connections without a token from each of SOURCES loopback
        addresses (127.0.0.2, 127.0.0.3, ...), sends nothing; prints "opened N REFUSED" once
        every attempt is made, "closed I CODE" as the gateway closes each, "all closed" at the end
  burst TOKEN N
        N connections with the token at once, each from its own address (127.0.1.1, ...), each held until all attempts are done; prints
        "admitted A refused R dropped D" (R: answered HTTP 503; D: closed without an answer),
        then closes the admitted ones (close handshakes) and exits
  fragments TOKEN N TOTAL BIG
        sends N one-byte fragments of N messages, each the last of TOTAL; prints "sent N" and
        waits for SIGUSR1 (the fragments stay pending meanwhile); then one fragment of BIG bytes; prints "status JSON" for each
        status, "alive" once the connection still answers an op after it
  foxglove TOKEN TOPIC
        a Foxglove client (subprotocol foxglove.websocket.v1): subscribes to TOPIC's channel,
        prints "msg" per message, "status JSON" per status, "closed CODE REASON" at the end
"""
import asyncio
import json
import signal
import sys

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus


def out(*parts):
    print(" ".join(str(p) for p in parts), flush=True)


async def hold(port, sources, per_source):
    conns = []
    refused = 0
    for s in range(sources):
        for _ in range(per_source):
            try:
                ws = await connect(f"ws://127.0.0.1:{port}/", local_addr=(f"127.0.0.{2 + s}", 0),
                                   open_timeout=5, ping_interval=None)
                conns.append(ws)
            except Exception:  # closed at once (no slot for it), or an HTTP refusal
                refused += 1
    out("opened", len(conns), refused)

    async def wait_closed(i, ws):
        try:
            while True:
                await ws.recv()
        except ConnectionClosed as e:
            code = e.rcvd.code if e.rcvd else "none"
            out("closed", i, code)

    await asyncio.gather(*(wait_closed(i, ws) for i, ws in enumerate(conns)))
    out("all closed")


async def burst(port, token, n):
    release = asyncio.Event()
    admitted = refused = dropped = 0

    async def one(i):
        nonlocal admitted, refused, dropped
        try:
            ws = await connect(f"ws://127.0.0.1:{port}/?token={token}", open_timeout=10,
                               ping_interval=None, local_addr=(f"127.0.1.{1 + i}", 0))
        except InvalidStatus as e:
            if e.response.status_code != 503:
                raise
            refused += 1
            return
        except Exception:
            dropped += 1
            return
        admitted += 1
        await release.wait()
        await ws.close()

    tasks = [asyncio.create_task(one(i)) for i in range(n)]
    while admitted + refused + dropped < n and not any(t.done() and t.exception() for t in tasks):
        await asyncio.sleep(0.05)
    out("admitted", admitted, "refused", refused, "dropped", dropped)
    release.set()
    await asyncio.gather(*tasks)


async def statuses(ws):
    while True:
        m = await ws.recv()
        if isinstance(m, str) and '"op":"status"' in m.replace(" ", ""):
            out("status", m)
            yield json.loads(m)


async def connect_retrying(uri, **kw):
    """Connects, trying again for 10 s while the gateway answers 503 (full)."""
    end = asyncio.get_running_loop().time() + 10
    while True:
        try:
            return await connect(uri, **kw)
        except InvalidStatus as e:
            if e.response.status_code != 503 or asyncio.get_running_loop().time() > end:
                raise
            await asyncio.sleep(0.1)


async def fragments(port, token, n, total, big):
    async with await connect_retrying(f"ws://127.0.0.1:{port}/?token={token}",
                                      ping_interval=None, max_size=None) as ws:
        for i in range(n):
            await ws.send(json.dumps({"op": "fragment", "id": f"f{i}", "data": "A",
                                      "num": total - 1, "total": total}))
        # An op after them: its answer says the fragments were all read.
        await ws.send(json.dumps({"op": "nope", "id": "after"}))
        async for s in statuses(ws):
            if s.get("id") == "after":
                break
        go = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, go.set)
        out("sent", n)
        await go.wait()
        await ws.send(json.dumps({"op": "fragment", "id": "big", "data": "B" * big, "num": 0,
                                  "total": 2}))
        await ws.send(json.dumps({"op": "nope", "id": "alive"}))
        async for s in statuses(ws):
            if s.get("id") == "alive":
                out("alive")
                break


async def foxglove(port, token, topic):
    async with connect(f"ws://127.0.0.1:{port}/?token={token}",
                       subprotocols=["foxglove.websocket.v1"], ping_interval=None) as ws:
        try:
            while True:
                m = await ws.recv()
                if isinstance(m, bytes):
                    out("msg")
                    continue
                op = json.loads(m)
                if op.get("op") == "advertise":
                    for ch in op["channels"]:
                        if ch["topic"] == topic:
                            await ws.send(json.dumps({"op": "subscribe", "subscriptions": [
                                {"id": 1, "channelId": ch["id"]}]}))
                elif op.get("op") == "status":
                    out("status", m)
        except ConnectionClosed as e:
            code, reason = (e.rcvd.code, e.rcvd.reason) if e.rcvd else ("none", "")
            out("closed", code, reason)


def main():
    port, cmd, args = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    if cmd == "hold":
        asyncio.run(hold(port, int(args[0]), int(args[1])))
    elif cmd == "burst":
        asyncio.run(burst(port, args[0], int(args[1])))
    elif cmd == "fragments":
        asyncio.run(fragments(port, args[0], int(args[1]), int(args[2]), int(args[3])))
    elif cmd == "foxglove":
        asyncio.run(foxglove(port, args[0], args[1]))
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
