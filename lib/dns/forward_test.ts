import { deepEqual, equal, ok } from "node:assert/strict";
import { FORWARD_SOCKETS, forwardLoad, forwardUdp, MAX_FORWARDS_IN_FLIGHT } from "./forward.ts";
import { decode, query } from "./test_helpers.ts";

/** A loopback upstream that echoes each query back as its answer, or stays silent. */
function upstream(answer: boolean): { conn: Deno.DatagramConn; port: number } & Disposable {
  const conn = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  (async () => {
    try {
      for await (const [message, from] of conn) {
        if (!answer) continue;
        const reply = message.slice();
        reply[2] |= 0x80;
        await conn.send(reply, from);
      }
    } catch {
      // Closed.
    }
  })();
  return { conn, port: (conn.addr as Deno.NetAddr).port, [Symbol.dispose]: () => conn.close() };
}

Deno.test("forwardUdp() hands back the upstream's answer under the query's own id", async () => {
  using up = upstream(true);
  const answer = await forwardUdp(
    query("example.com", "A", 4242),
    [{ hostname: "127.0.0.1", port: up.port }],
    1000,
  );
  ok(answer);
  equal(decode(answer).id, 4242);
  equal(decode(answer).questions?.[0].name, "example.com");
  equal(forwardLoad().sockets, 0, "a socket closes once nothing waits on it");
});

Deno.test("forwardUdp() caps queries in flight and the sockets they share", async () => {
  using silent = upstream(false);
  const target = [{ hostname: "127.0.0.1", port: silent.port }];
  const total = MAX_FORWARDS_IN_FLIGHT + 500;
  // Which queries settled, in order: the excess must be refused before any admitted query reaches its timeout,
  // whatever the machine's speed, so the test reads order rather than elapsed time.
  const settled: { i: number; answered: boolean }[] = [];
  const forwards = Array.from(
    { length: total },
    (_, i) =>
      forwardUdp(query(`n${i}.example.com`, "A", i & 0xffff), target, 300).then((answer) => {
        settled.push({ i, answered: answer !== undefined });
      }),
  );
  // Admission happens when forwardUdp() is called, so the load is exact right after the calls.
  const load = forwardLoad();
  equal(load.inFlight, MAX_FORWARDS_IN_FLIGHT);
  ok(load.sockets <= FORWARD_SOCKETS, `${load.sockets} sockets`);
  await Promise.all(forwards);
  equal(settled.length, total);
  ok(settled.every((s) => !s.answered), "a silent upstream answers nothing");
  deepEqual(
    settled.slice(0, 500).map((s) => s.i),
    Array.from({ length: 500 }, (_, k) => MAX_FORWARDS_IN_FLIGHT + k),
    "the excess is refused at once, before any admitted query times out",
  );
  const after = forwardLoad();
  equal(after.inFlight, 0);
  equal(after.sockets, 0);
});

Deno.test("forwardUdp() ignores an answer from another source", async () => {
  using silent = upstream(false);
  using other = upstream(false);
  const forwarding = forwardUdp(query("example.com"), [{ hostname: "127.0.0.1", port: silent.port }], 500);
  const [sent, from] = await silent.conn.receive();
  const forged = sent.slice();
  forged[2] |= 0x80;
  await other.conn.send(forged, from);
  equal(await forwarding, undefined);
});
