// A Foxglove WebSocket client for tests/gateway/foxglove.rs: @foxglove/ws-protocol's
// FoxgloveClient over the `ws` package, schemas parsed with @foxglove/rosmsg, CDR read and
// written with @foxglove/rosmsg2-serialization (none of it ours).
//
// usage: node fox.mjs URL [--token T] [--ca FILE] MODE ARGS...
//   --token T        sent as `Authorization: Bearer T` on the upgrade request
//   --ca FILE        for wss://: trust the server certificates this PEM file holds
//   sub TOPIC N      subscribe to TOPIC's channel; print N messages decoded with its schema
//   pub TOPIC TYPE ENCODING TEMPLATE [SCHEMA]
//                    advertise TOPIC (cdr or json) and publish TEMPLATE every 100 ms, `$N`
//                    replaced by 0, 1, ...; for cdr, the schema of TYPE comes from a channel
//                    the server advertised with that schemaName, else SCHEMA (ros2msg text)
//   call SERVICE ENCODING REQUEST
//                    call SERVICE once with REQUEST (JSON text), print the decoded reply
//   watch [--subscribe CHANNEL] [--advertise TOPIC TYPE ENCODING] [--publish CHANNEL]
//         [--text TEXT] [--binary HEX]
//                    print what the server says; after its first advertise, try the ops in
//                    order (--publish sends the 2 bytes `{}`; --text and --binary send a raw
//                    frame)
//
// Every mode prints `protocol P`, `status LEVEL MESSAGE`, `advertise [TOPICS]` and
// `services [NAMES]` as they come.

// The packages are CommonJS: their exports come as the default import's properties.
import wsProtocol from "@foxglove/ws-protocol";
import rosmsg from "@foxglove/rosmsg";
import serialization from "@foxglove/rosmsg2-serialization";
import WebSocket from "ws";
import { readFileSync } from "node:fs";

const { FoxgloveClient } = wsProtocol;
const { parse } = rosmsg;
const { MessageReader, MessageWriter } = serialization;

const args = process.argv.slice(2);
const url = args.shift();
let token;
let ca;
while (args[0] === "--token" || args[0] === "--ca") {
  const flag = args.shift();
  if (flag === "--token") token = args.shift();
  else ca = readFileSync(args.shift());
}
const mode = args.shift();

const show = (v) => JSON.stringify(v, (_, x) => (typeof x === "bigint" ? Number(x) : x));
const say = (...parts) => console.log(parts.join(" "));

const ws = new WebSocket(url, [FoxgloveClient.SUPPORTED_SUBPROTOCOL], {
  headers: token ? { Authorization: `Bearer ${token}` } : {},
  ...(ca ? { ca } : {}),
});
const client = new FoxgloveClient({ ws });
const channels = new Map();
const services = new Map();

client.on("open", () => say("protocol", ws.protocol));
client.on("error", (e) => say("error", e.message ?? e));
client.on("close", (e) => {
  say("closed", e.code ?? "");
  process.exit(0);
});
client.on("serverInfo", (i) => say("serverInfo", show(i)));
client.on("status", (s) => say("status", s.level, s.message));
client.on("advertise", (list) => {
  for (const c of list) channels.set(c.id, c);
  say("advertise", show(list.map((c) => c.topic)));
  onChannels();
});
client.on("unadvertise", (ids) => {
  for (const id of ids) channels.delete(id);
  say("unadvertise", show(ids));
});
client.on("advertiseServices", (list) => {
  for (const s of list) services.set(s.id, s);
  say("services", show(list.map((s) => s.name)));
  onServices();
});

const ros2 = (schema) => parse(schema, { ros2: true });
let onChannels = () => {};
let onServices = () => {};

if (mode === "sub") {
  const [topic, count] = [args[0], Number(args[1])];
  let subscribed = false;
  let got = 0;
  const readers = new Map();
  onChannels = () => {
    if (subscribed) return;
    const c = [...channels.values()].find((x) => x.topic === topic);
    if (!c) return;
    subscribed = true;
    const { schema, ...rest } = c;
    say("channel", show(rest));
    say("schema", show(schema));
    readers.set(client.subscribe(c.id), new MessageReader(ros2(schema)));
  };
  client.on("message", ({ subscriptionId, timestamp, data }) => {
    const reader = readers.get(subscriptionId);
    if (!reader) return;
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    // The receive time: nanoseconds since the Unix epoch, within a minute of now.
    const age = Math.abs(Date.now() - Number(timestamp / 1000000n));
    say("msg", show(reader.readMessage(bytes)), age < 60000 ? "stamp-ok" : `stamp-off ${timestamp}`);
    if (++got >= count) process.exit(0);
  });
} else if (mode === "pub") {
  const [topic, type, encoding, template, givenSchema] = args;
  let started = false;
  onChannels = () => {
    if (started) return;
    let writer = null;
    if (encoding === "cdr") {
      const c = [...channels.values()].find((x) => x.schemaName === type);
      if (!c && givenSchema === undefined) return;
      say("schema from", c ? `channel ${c.topic}` : "the command line");
      writer = new MessageWriter(ros2(c ? c.schema : givenSchema));
    }
    started = true;
    const id = client.advertise({ topic, encoding, schemaName: type });
    say("advertised", id);
    let n = 0;
    const enc = new TextEncoder();
    setInterval(() => {
      const msg = template.replaceAll("$N", String(n++));
      const data = writer ? writer.writeMessage(JSON.parse(msg)) : enc.encode(msg);
      client.sendMessage(id, data);
    }, 100);
  };
} else if (mode === "call") {
  const [name, encoding, request] = args;
  let called = false;
  onServices = () => {
    if (called) return;
    const s = [...services.values()].find((x) => x.name === name);
    if (!s) return;
    called = true;
    say("service", show({ name: s.name, type: s.type, request: s.request.schemaName, response: s.response.schemaName }));
    const data =
      encoding === "cdr"
        ? new MessageWriter(ros2(s.request.schema)).writeMessage(JSON.parse(request))
        : new TextEncoder().encode(request);
    client.on("serviceCallResponse", (r) => {
      const bytes = new Uint8Array(r.data.buffer, r.data.byteOffset, r.data.byteLength);
      const reply =
        r.encoding === "cdr"
          ? new MessageReader(ros2(s.response.schema)).readMessage(bytes)
          : JSON.parse(new TextDecoder().decode(bytes));
      say("result", r.encoding, show(reply));
      process.exit(0);
    });
    client.on("serviceCallFailure", (f) => {
      say("failure", f.message);
      process.exit(0);
    });
    client.sendServiceCallRequest({ serviceId: s.id, callId: 7, encoding, data });
  };
} else if (mode === "watch") {
  let tried = false;
  onChannels = () => {
    if (tried) return;
    tried = true;
    for (let i = 0; i < args.length; i++) {
      if (args[i] === "--subscribe") {
        client.subscribe(Number(args[++i]));
        say("tried subscribe");
      } else if (args[i] === "--advertise") {
        const [topic, schemaName, encoding] = [args[++i], args[++i], args[++i]];
        client.advertise({ topic, encoding, schemaName });
        say("tried advertise");
      } else if (args[i] === "--publish") {
        client.sendMessage(Number(args[++i]), new TextEncoder().encode("{}"));
        say("tried publish");
      } else if (args[i] === "--text") {
        ws.send(args[++i]);
        say("tried text");
      } else if (args[i] === "--binary") {
        ws.send(Buffer.from(args[++i], "hex"));
        say("tried binary");
      }
    }
  };
} else {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}
