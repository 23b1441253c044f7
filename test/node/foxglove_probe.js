// A client of Foxglove's *published* WebSocket protocol: @foxglove/ws-protocol's FoxgloveClient,
// which offers only "foxglove.websocket.v1". Subscribes to every advertised channel, decodes each
// message with the protobuf schema the server advertised (protobufjs), and prints one JSON object:
// {"subprotocol": ..., "serverInfo": ..., "topics": {topic: {schemaName, encoding, count, first}}}.
// Usage: node foxglove_probe.js ws://127.0.0.1:PORT SECONDS [MIN_PER_TOPIC]
"use strict";
const { FoxgloveClient } = require("@foxglove/ws-protocol");
const WebSocket = require("ws");
const protobuf = require("protobufjs");
const descriptor = require("protobufjs/ext/descriptor");

const [url, seconds, minPerTopic] = [process.argv[2], Number(process.argv[3] || 10), Number(process.argv[4] || 1)];
const ws = new WebSocket(url, [FoxgloveClient.SUPPORTED_SUBPROTOCOL]);
const client = new FoxgloveClient({ ws });
const out = { subprotocol: null, serverInfo: null, topics: {}, errors: [] };
const bySubscription = new Map();

function finish(code) {
  process.stdout.write(JSON.stringify(out) + "\n");
  process.exit(code);
}

client.on("open", () => { out.subprotocol = ws.protocol; });
client.on("error", (e) => { out.errors.push(String(e && e.message ? e.message : e)); });
client.on("close", () => finish(out.serverInfo ? 0 : 1));
client.on("serverInfo", (info) => { out.serverInfo = { name: info.name, capabilities: info.capabilities }; });
client.on("advertise", (channels) => {
  for (const ch of channels) {
    if (ch.encoding !== "protobuf") continue;
    const set = descriptor.FileDescriptorSet.decode(Buffer.from(ch.schema, "base64"));
    const type = protobuf.Root.fromDescriptor(set).lookupType(ch.schemaName);
    const id = client.subscribe(ch.id);
    bySubscription.set(id, { topic: ch.topic, type, schemaName: ch.schemaName });
    out.topics[ch.topic] = { schemaName: ch.schemaName, encoding: ch.encoding, count: 0, first: null };
  }
});
client.on("message", ({ subscriptionId, data }) => {
  const sub = bySubscription.get(subscriptionId);
  if (!sub) return;
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const entry = out.topics[sub.topic];
  const decoded = sub.type.toObject(sub.type.decode(bytes), { longs: Number, bytes: String, defaults: false });
  entry.count += 1;
  if (entry.first === null) entry.first = decoded;
  const topics = Object.values(out.topics);
  if (topics.length && topics.every((t) => t.count >= minPerTopic)) { client.close(); }
});
setTimeout(() => { client.close(); setTimeout(() => finish(2), 2000); }, seconds * 1000);
