import assert from "node:assert/strict";
import { createSocket, type Socket } from "node:dgram";
import { startRelay } from "./relay.ts";

function bind(): Promise<Socket> {
  const socket = createSocket("udp4");
  return new Promise((resolve) => socket.bind(0, "127.0.0.1", () => resolve(socket)));
}

function close(socket: Socket): Promise<void> {
  return new Promise((resolve) => socket.close(() => resolve()));
}

function nextMessage(socket: Socket): Promise<{ text: string; port: number; at: number }> {
  return new Promise((resolve) =>
    socket.once(
      "message",
      (msg: Uint8Array, info: { port: number }) =>
        resolve({ text: new TextDecoder().decode(msg), port: info.port, at: performance.now() }),
    )
  );
}

Deno.test("the relay delays each datagram and sends it from the reverse pair's port", async () => {
  const [a, b] = [await bind(), await bind()];
  const base = 40000 + Math.floor(Math.random() * 20000);
  const relay = await startRelay({
    bindAddress: "127.0.0.1",
    latencyMs: 60,
    jitterMs: 5,
    endpoints: {
      m1: { host: "127.0.0.1", port: a.address().port },
      m2: { host: "127.0.0.1", port: b.address().port },
    },
    ports: { "m1>m2": base, "m2>m1": base + 1 },
  });
  try {
    const atB = nextMessage(b);
    const sent = performance.now();
    a.send("ping", base, "127.0.0.1");
    const got = await atB;
    assert.equal(got.text, "ping");
    assert.equal(got.port, base + 1, "b sees the relay's m2>m1 port, its own endpoint for m1");
    assert.ok(got.at - sent >= 50, `delayed ${got.at - sent} ms`);
    const atA = nextMessage(a);
    b.send("pong", got.port, "127.0.0.1");
    const back = await atA;
    assert.equal(back.text, "pong");
    assert.equal(back.port, base);
    assert.equal(relay.forwarded(), 2);
  } finally {
    await relay.close();
    await close(a);
    await close(b);
  }
});
