// Where no systemd runs, the daemon keeps `ployzd dns` as a child: one that dies (here SIGKILL, so it cannot drain
// or say goodbye) is respawned after a bounded backoff and answers real queries again; one that exits because
// its build cannot serve the spec stays down and is reported; a requested stop is never undone.
import assert from "node:assert/strict";
import { join } from "node:path";
import { type SupervisedDnsRunner, supervisedDnsRunner } from "../lib/daemon/mod.ts";
import { writeDnsSpec } from "../lib/dns/mod.ts";
import { dnsTestFlags, freeDnsPort, ployzdDnsArgs, udpFree, udpQuery, webShopSpec } from "./support/dns.ts";
import { type TempLayout, tempLayout } from "./support/spawn.ts";
import { eventually, sleep } from "./support/poll.ts";

/** A respawned child must answer again within this bound: a 1 s or 2 s backoff plus a deno start. */
const ANSWER_AGAIN_MS = 10_000;

function runner(layout: TempLayout, lines: string[]): SupervisedDnsRunner {
  return supervisedDnsRunner({
    argv: [Deno.execPath(), ...ployzdDnsArgs(dnsTestFlags(layout))],
    env: { ...layout.env, NO_COLOR: "1" },
    log: (line) => lines.push(line),
  });
}

/** Milliseconds until `web.shop.internal` is answered on `port`; throws after `ms`. */
async function answered(port: number, ms = ANSWER_AGAIN_MS): Promise<number> {
  const start = Date.now();
  while (true) {
    const outcome = await udpQuery(port, "web.shop.internal", 200);
    if ("addresses" in outcome && outcome.addresses.join() === "10.210.1.5") return Date.now() - start;
    if (Date.now() - start > ms) {
      throw new Error(`No answer on ${port} within ${ms} ms: ${JSON.stringify(outcome)}`);
    }
    await sleep(50);
  }
}

Deno.test("a ployzd dns child killed with SIGKILL is respawned with a growing delay and answers again", async () => {
  await using layout = await tempLayout();
  const port = await freeDnsPort();
  await writeDnsSpec(join(layout.runDir, "dns.json"), webShopSpec(port, ["10.210.1.5"], []));
  const lines: string[] = [];
  const dns = runner(layout, lines);
  try {
    await dns.ensure();
    await answered(port, 20_000);
    for (const [i, delay] of [1000, 2000].entries()) {
      const pid = dns.pid();
      assert.ok(pid !== undefined, "a child runs");
      Deno.kill(pid, "SIGKILL");
      const took = await answered(port);
      console.log(`dns respawn: answering again ${took} ms after SIGKILL #${i + 1} (backoff ${delay} ms)`);
      assert.ok(took >= delay - 100, `answered after ${took} ms, before the ${delay} ms backoff ended`);
      assert.notEqual(dns.pid(), pid);
      assert.match(
        lines.at(-1) ?? "",
        new RegExp(`exited with signal SIGKILL after \\d+ ms, restarting in ${delay} ms`),
      );
    }
  } finally {
    await dns.close();
  }
  assert.equal(dns.pid(), undefined);
  assert.ok(await udpFree(port), "the stopped child released its port");
  await sleep(1500);
  assert.equal(dns.pid(), undefined, "a requested stop is not undone by a respawn");
  assert.ok(await udpFree(port));
});

Deno.test("a ployzd dns child that cannot serve the spec (exit 3) stays down and is reported", async () => {
  await using layout = await tempLayout();
  const port = await freeDnsPort();
  const specPath = join(layout.runDir, "dns.json");
  await writeDnsSpec(specPath, webShopSpec(port, ["10.210.1.5"], []));
  const lines: string[] = [];
  const dns = runner(layout, lines);
  try {
    await dns.ensure();
    await answered(port, 20_000);
    await Deno.writeTextFile(
      specPath,
      JSON.stringify({ ...webShopSpec(port, ["10.210.1.5"], []), format: 2 }),
    );
    await eventually(
      10_000,
      "the exit-3 report",
      () => lines.some((l) => /exited with code 3/.test(l)) || undefined,
      50,
    );
    assert.match(lines.at(-1) ?? "", /cannot serve the current DNS spec, not restarting it/);
    await sleep(2500);
    assert.equal(dns.pid(), undefined, "not respawned");
    assert.equal(lines.length, 1, lines.join("\n"));
    assert.ok(await udpFree(port), "the port stays handed back");
    // The next ensure (a new binary, a new spec) starts it again.
    await writeDnsSpec(specPath, webShopSpec(port, ["10.210.1.5"], []));
    await dns.ensure();
    await answered(port, 20_000);
  } finally {
    await dns.close();
  }
});
