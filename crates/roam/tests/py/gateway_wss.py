"""A rosbridge client over wss:// with Python's own TLS (OpenSSL) and the `websockets`
package (PyPI), for the gateway's TLS tests: verifies the gateway's certificate against a CA
file, optionally presents a client certificate, and sends rosbridge ops as they are given.

usage: gateway_wss.py URL --ca CA [--server-name NAME] [--cert PEM --key KEY] [--token T]
                      [--seconds S] OP_JSON...
With --repeat S, the last op is sent again every S seconds (a publisher that keeps going).
Prints "connected" once the WebSocket is open, "recv JSON" per text frame the gateway sends,
"closed CODE REASON" when it closes, "tls-error TEXT" or "error TEXT" when the connection
cannot be made, and "done" last. Exits after S seconds (default 5).
"""
import argparse
import asyncio
import json
import ssl
import sys

import websockets


def out(kind, text=""):
    print(f"{kind} {text}".rstrip(), flush=True)


async def main(a):
    ctx = None
    if a.url.startswith("wss://"):
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=a.ca)
        if a.cert:
            ctx.load_cert_chain(a.cert, a.key)
    headers = {"Authorization": f"Bearer {a.token}"} if a.token else None
    try:
        ws = await websockets.connect(
            a.url,
            ssl=ctx,
            server_hostname=a.server_name if ctx else None,
            additional_headers=headers,
            open_timeout=10,
            max_size=None,
        )
    except ssl.SSLError as e:
        out("tls-error", str(e))
        return
    except Exception as e:  # noqa: BLE001 - the test reads what went wrong
        out("error", f"{type(e).__name__}: {e}")
        return
    out("connected")
    for op in a.ops:
        await ws.send(op)

    async def repeat():
        while a.repeat and a.ops:
            await asyncio.sleep(a.repeat)
            await ws.send(a.ops[-1])

    repeating = asyncio.ensure_future(repeat())

    async def read():
        try:
            async for m in ws:
                if isinstance(m, str):
                    out("recv", json.dumps(json.loads(m), sort_keys=True))
                else:
                    out("recv-binary", str(len(m)))
        except websockets.ConnectionClosed as e:
            out("closed", f"{e.rcvd.code if e.rcvd else 0} {e.rcvd.reason if e.rcvd else ''}")
        except ssl.SSLError as e:
            out("tls-error", str(e))

    try:
        await asyncio.wait_for(read(), a.seconds)
    except asyncio.TimeoutError:
        pass
    repeating.cancel()
    await ws.close()


p = argparse.ArgumentParser()
p.add_argument("url")
p.add_argument("--ca")
p.add_argument("--server-name")
p.add_argument("--cert")
p.add_argument("--key")
p.add_argument("--token")
p.add_argument("--seconds", type=float, default=5.0)
p.add_argument("--repeat", type=float, default=0.0)
p.add_argument("ops", nargs="*")
asyncio.run(main(p.parse_intermixed_args()))
out("done")
sys.exit(0)
