// Restarting Internal DNS refuses no query: the new process binds beside the old one (UDP SO_REUSEADDR, TCP
// SO_REUSEPORT), announces it is serving, and only then is the old one sent SIGTERM; it drains what it queued and
// exits. A query loop runs across several such restarts and must see every query answered. A control run that
// stops the old process before starting the new one shows the loop does notice a gap.
import { equal, ok } from "node:assert/strict";
import { join } from "node:path";
import { writeDnsSpec } from "../lib/dns/mod.ts";
import {
  type DnsProcess,
  dnsTestFlags,
  freeDnsPort,
  startDns,
  tcpQuery,
  udpClient,
  webShopSpec,
} from "./support/dns.ts";
import { tempLayout } from "./support/spawn.ts";
import { sleep } from "./support/poll.ts";

const CLIENTS = 4;
const RESTARTS = 3;

interface Tally {
  answered: number;
  failed: number;
  failures: string[];
}

/** Runs `CLIENTS` sequential query loops (1 s timeout each, like a stub resolver's first try) until stopped. */
function queryLoop(port: number): { stop(): Promise<Tally> } {
  const tally: Tally = { answered: 0, failed: 0, failures: [] };
  let running = true;
  const loops = Array.from({ length: CLIENTS }, async () => {
    const client = await udpClient(port);
    try {
      while (running) {
        const outcome = await client.query("web.shop.internal", 1000);
        if ("addresses" in outcome && outcome.addresses.length === 1) tally.answered++;
        else {
          tally.failed++;
          if (tally.failures.length < 5) tally.failures.push(JSON.stringify(outcome));
        }
      }
    } finally {
      await client.close();
    }
  });
  return {
    async stop(): Promise<Tally> {
      running = false;
      await Promise.all(loops);
      return tally;
    },
  };
}

async function restartCycles(overlap: boolean, restarts: number): Promise<Tally> {
  await using layout = await tempLayout();
  const port = await freeDnsPort();
  await writeDnsSpec(join(layout.runDir, "dns.json"), webShopSpec(port, ["10.210.1.5"], []));
  const flags = dnsTestFlags(layout);
  const processes: DnsProcess[] = [];
  try {
    let current = startDns(layout, flags);
    processes.push(current);
    await current.waitFor(/Serving spec/);
    const loop = queryLoop(port);
    await sleep(300);
    for (let i = 0; i < restarts; i++) {
      let next: DnsProcess;
      if (overlap) {
        next = startDns(layout, flags);
        processes.push(next);
        await next.waitFor(/Serving spec/);
        current.child.kill("SIGTERM");
        equal(await current.exited(), 0);
      } else {
        current.child.kill("SIGTERM");
        equal(await current.exited(), 0);
        next = startDns(layout, flags);
        processes.push(next);
        await next.waitFor(/Serving spec/);
      }
      current = next;
      // TCP keeps working on the successor too.
      ok("addresses" in await tcpQuery(port, "web.shop.internal"));
      await sleep(300);
    }
    return await loop.stop();
  } finally {
    for (const p of processes) await p[Symbol.asyncDispose]();
  }
}

Deno.test("restarting ployzd dns with the overlap procedure leaves no query unanswered", async () => {
  const tally = await restartCycles(true, RESTARTS);
  console.log(
    `dns restart: ${tally.answered} queries answered, ${tally.failed} failed, across ${RESTARTS} overlapped restarts`,
  );
  equal(tally.failed, 0, `failed queries: ${tally.failures.join(", ")}`);
  ok(tally.answered > 100, `only ${tally.answered} queries ran`);
});

Deno.test("stopping ployzd dns before starting the next one does lose queries (control)", async () => {
  const tally = await restartCycles(false, 1);
  console.log(
    `dns restart control: ${tally.answered} answered, ${tally.failed} failed with a stop-then-start gap`,
  );
  ok(tally.failed > 0, "a stop-then-start restart should lose queries, or the loop cannot see a gap");
});
