// Draining before a stop, pure: which connections count as in flight, and how the bounded wait ends.
import { deepEqual, equal } from "node:assert/strict";
import { manualClock } from "../util/testing/mod.ts";
import { drainInflight, inflightConnections } from "./drain.ts";

const HEAD =
  "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode";
// 10.210.0.5:80 listening; one connection from a proxy at 10.210.1.2, one health probe over loopback, one
// connection the container opened itself (ephemeral local port), one closing.
const TCP = [
  HEAD,
  "   0: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1001 1",
  "   1: 0500D20A:0050 0201D20A:C350 01 00000000:00000000 00:00000000 00000000     0        0 1002 1",
  "   2: 0100007F:0050 0100007F:A1B2 01 00000000:00000000 00:00000000 00000000     0        0 1003 1",
  "   3: 0500D20A:D431 0301D20A:0035 01 00000000:00000000 00:00000000 00000000     0        0 1004 1",
  "   4: 0500D20A:0050 0301D20A:C351 06 00000000:00000000 00:00000000 00000000     0        0 0 3",
].join("\n");
const TCP6 = [
  HEAD,
  "   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 0:0 00:0 0 0 0 2001 1",
  "   1: 0000000000000000FFFF00000500D20A:1F90 0000000000000000FFFF00000201D20A:C352 01 0:0 00:0 0 0 0 2002 1",
  "   2: 00000000000000000000000001000000:1F90 00000000000000000000000001000000:C353 01 0:0 00:0 0 0 0 2003 1",
  "   3: 0000000000000000FFFF00000500D20A:1F90 0000000000000000FFFF00000100007F:C354 01 0:0 00:0 0 0 0 2004 1",
].join("\n");

Deno.test("in flight: established connections to a listening port from a peer other than loopback", () => {
  equal(inflightConnections([TCP]), 1);
  equal(inflightConnections([TCP6]), 1);
  equal(inflightConnections([TCP, TCP6]), 2);
});

Deno.test("in flight: nothing listens, nothing counts; garbage lines are skipped", () => {
  equal(inflightConnections([[HEAD, TCP.split("\n")[2]].join("\n")]), 0);
  equal(inflightConnections([""]), 0);
  equal(inflightConnections([`${HEAD}\nnot a row\n  7: zz:zz yy:yy 01`]), 0);
});

/** `drainInflight` over `readings` (the last one repeated) on a clock moved only by its sleeps, and those sleeps. */
async function drainOn(
  readings: (number | undefined)[],
  options: Omit<Parameters<typeof drainInflight>[1], "now" | "sleep">,
): Promise<{ result: Awaited<ReturnType<typeof drainInflight>>; slept: number[] }> {
  const clock = manualClock();
  const read = (): Promise<number | undefined> =>
    Promise.resolve(readings.length > 1 ? readings.shift() : readings[0]);
  const result = await drainInflight(read, { ...options, now: clock.now, sleep: clock.sleep });
  return { result, slept: clock.slept };
}

Deno.test("drain: waits until the last in-flight connection closes, and says how long", async () => {
  deepEqual(await drainOn([2, 1, 1, 0], { boundMs: 5_000 }), {
    result: { drainedMs: 300, inFlight: 0, boundReached: false },
    slept: [100, 100, 100],
  });
});

Deno.test("drain: nothing in flight, or unreadable (container gone), ends at once", async () => {
  for (const reading of [0, undefined]) {
    deepEqual(await drainOn([reading], { boundMs: 5_000 }), {
      result: { drainedMs: 0, inFlight: 0, boundReached: false },
      slept: [],
    });
  }
});

Deno.test("drain: the bound ends it with the connections still open named, never past the bound", async () => {
  deepEqual(await drainOn([3], { boundMs: 250, pollMs: 100 }), {
    result: { drainedMs: 250, inFlight: 3, boundReached: true },
    slept: [100, 100, 50],
  });
});

Deno.test("drain: a bound of 0 reads once and does not wait; an aborted signal ends it", async () => {
  const controller = new AbortController();
  controller.abort();
  for (const options of [{ boundMs: 0 }, { boundMs: 5_000, signal: controller.signal }]) {
    deepEqual(await drainOn([1], options), {
      result: { drainedMs: 0, inFlight: 1, boundReached: true },
      slept: [],
    });
  }
});
