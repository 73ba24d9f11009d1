import assert from "node:assert/strict";
import { createDnsServer, MAX_TCP_CONNECTIONS } from "./server.ts";
import { sleep } from "../util/mod.ts";

// True when the server closed the connection within `ms` (a read ends), false while it keeps it open.
async function closedWithin(conn: Deno.TcpConn, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const read = conn.read(new Uint8Array(1)).then((n) => n === null, () => true);
  const wait = new Promise<false>((resolve) => timer = setTimeout(() => resolve(false), ms));
  try {
    return await Promise.race([read, wait]);
  } finally {
    clearTimeout(timer);
  }
}

Deno.test("the DNS server keeps at most MAX_TCP_CONNECTIONS clients and serves new ones once others leave", async () => {
  const lines: string[] = [];
  const server = createDnsServer((line) => lines.push(line));
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  assert.deepEqual(server.listen([{ hostname: "127.0.0.1", port }]), []);
  const conns: Deno.TcpConn[] = [];
  try {
    const extra = 20;
    for (let i = 0; i < MAX_TCP_CONNECTIONS + extra; i++) {
      conns.push(await Deno.connect({ hostname: "127.0.0.1", port }));
    }
    const closed = await Promise.all(conns.map((c) => closedWithin(c, 1000)));
    assert.equal(closed.filter((c) => !c).length, MAX_TCP_CONNECTIONS, "clients kept open");
    assert.equal(closed.filter((c) => c).length, extra, "clients closed at once");
    assert.equal(lines.filter((l) => l.startsWith("Refusing TCP clients")).length, 1, lines.join("\n"));
    for (const conn of conns.splice(0)) conn.close();
    // The slots come back as the server sees clients leave.
    let served = false;
    for (let attempt = 0; attempt < 20 && !served; attempt++) {
      await sleep(100);
      const late = await Deno.connect({ hostname: "127.0.0.1", port });
      conns.push(late);
      served = !(await closedWithin(late, 300));
    }
    assert.ok(served, "a new client is served once others left");
  } finally {
    for (const conn of conns) {
      try {
        conn.close();
      } catch {
        // closed by the server
      }
    }
    await server.close();
  }
});
