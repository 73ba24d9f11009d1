import assert from "node:assert/strict";
import {
  findPortHolder,
  hostProcRoot,
  listeningInodes,
  portConflictMessage,
  portConflictOf,
} from "./port_holder.ts";

Deno.test("portConflictOf reads Docker's two taken-port errors and nothing else", () => {
  assert.deepEqual(
    portConflictOf(
      "driver failed programming external connectivity on endpoint caddy (cb30): Error starting userland proxy: " +
        "listen tcp4 0.0.0.0:443: bind: address already in use",
    ),
    { address: "0.0.0.0", port: 443, by: "process" },
  );
  assert.deepEqual(
    portConflictOf("listen tcp6 [::]:80: bind: address already in use"),
    { address: "[::]", port: 80, by: "process" },
  );
  assert.deepEqual(
    portConflictOf(
      "driver failed programming external connectivity: Bind for 0.0.0.0:443 failed: port is already allocated",
    ),
    { address: "0.0.0.0", port: 443, by: "container" },
  );
  assert.equal(portConflictOf("No such image: caddy"), null);
});

Deno.test("listeningInodes keeps listening sockets on the port only", () => {
  const table = [
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
    "   0: 00000000:01BB 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1",
    "   1: 0100007F:01BB 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 4343 1",
    "   2: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4444 1",
  ].join("\n");
  assert.deepEqual(listeningInodes(table, 443), ["4242"]);
  assert.deepEqual(listeningInodes(table, 80), ["4444"]);
  assert.deepEqual(listeningInodes(table, 8080), []);
});

Deno.test("findPortHolder names this very process when it listens on the port", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const port = (listener.addr as Deno.NetAddr).port;
    const holder = await findPortHolder(port);
    assert.equal(holder?.pid, Deno.pid);
    assert.match(holder?.command ?? "", /deno/);
    assert.equal(
      portConflictMessage({ address: "0.0.0.0", port: 443, by: "process" }, "m3", holder),
      `Port 443 on Machine "m3" is already in use: ${holder?.command} (pid ${Deno.pid}) holds it; ` +
        "free the port, then start the container again",
    );
  } finally {
    listener.close();
  }
  assert.match(
    portConflictMessage({ address: "0.0.0.0", port: 80, by: "container" }, "m1", undefined),
    /^Port 80 on Machine "m1" is already in use: another container publishes it;/,
  );
});

Deno.test("hostProcRoot prefers the read-only bind of /proc the daemon was given", () => {
  assert.equal(hostProcRoot(() => undefined), "/proc");
  assert.equal(hostProcRoot(() => "/run/ployz/observe-host/proc"), "/run/ployz/observe-host/proc");
});
