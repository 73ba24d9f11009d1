import { deepEqual, equal } from "node:assert/strict";
import type { Engine, NetworkInfo, NetworkSpec } from "../deploy/machine/mod.ts";
import { watchMachineNetwork } from "./machine_network.ts";

const SPEC: NetworkSpec = { name: "ployz", subnet: "10.210.3.0/24", gateway: "10.210.3.1" };

/** An engine whose `ensureNetwork` throws the given errors in turn, then answers. */
function engineFailing(errors: Error[]): { engine: Engine; calls: () => number } {
  let calls = 0;
  const engine = {
    ensureNetwork(spec: NetworkSpec): Promise<NetworkInfo> {
      const error = errors[calls++];
      if (error !== undefined) return Promise.reject(error);
      return Promise.resolve({ id: "n1", ...spec, created: false });
    },
  } as unknown as Engine;
  return { engine, calls: () => calls };
}

Deno.test("the Machine network is asked again after Docker failed, and the failure is logged once", async () => {
  const lines: string[] = [];
  const { engine, calls } = engineFailing([new Error("connection refused"), new Error("connection refused")]);
  const problem = await watchMachineNetwork({
    engine,
    spec: SPEC,
    log: (line) => lines.push(line),
    signal: new AbortController().signal,
    retryMs: 1,
  });
  equal(problem, undefined);
  equal(calls(), 3);
  deepEqual(lines, ['network "ployz": connection refused']);
});

Deno.test("stopping the daemon ends the wait between two asks at once", async () => {
  const stop = new AbortController();
  const { engine, calls } = engineFailing([new Error("connection refused")]);
  const started = Date.now();
  const watching = watchMachineNetwork({
    engine,
    spec: SPEC,
    log: () => {},
    signal: stop.signal,
    retryMs: 60_000,
  });
  await Promise.resolve();
  stop.abort();
  equal(await watching, undefined);
  equal(calls(), 1);
  equal(Date.now() - started < 5_000, true, "the 60 s retry pause was cut short");
});
