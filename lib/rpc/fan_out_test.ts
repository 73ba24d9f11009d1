import { deepEqual, equal, match } from "node:assert/strict";
import { fanOut, type FanOutTarget } from "./fan_out.ts";
import { RpcError } from "./errors.ts";

type Client = (signal: AbortSignal) => Promise<string>;

Deno.test("fanOut puts every Machine in exactly one list, in target order", async () => {
  const targets: FanOutTarget<Client>[] = [
    { id: "a", name: "m1", client: () => Promise.resolve("from m1") },
    {
      id: "b",
      name: "m2",
      client: () => Promise.reject(new RpcError("unavailable", "Observe Store is down")),
    },
    { id: "c", name: "m3", omitted: "no route" },
    { id: "d", name: "m4", client: () => Promise.resolve("from m4") },
    { id: "e", name: "m5", client: () => Promise.reject(new Error("boom")) },
  ];
  const result = await fanOut(targets, (client, _m, signal) => client(signal));
  deepEqual(result.successes.map((s) => [s.machine.name, s.value]), [["m1", "from m1"], ["m4", "from m4"]]);
  deepEqual(result.failures.map((f) => [f.machine.name, f.code, f.message]), [
    ["m2", "unavailable", "Observe Store is down"],
    ["m5", "internal", "boom"],
  ]);
  deepEqual(result.omissions, [{ machine: { id: "c", name: "m3" }, reason: "no route" }]);
});

Deno.test("fanOut bounds a Machine that never answers, even one that ignores its signal", async () => {
  let aborted = false;
  const hung = new Promise<string>(() => {});
  const targets: FanOutTarget<Client>[] = [
    {
      id: "a",
      name: "slow",
      client: (signal) => {
        signal.addEventListener("abort", () => aborted = true);
        return hung;
      },
    },
    { id: "b", name: "fast", client: () => Promise.resolve("ok") },
  ];
  const started = Date.now();
  const result = await fanOut(targets, (client, _m, signal) => client(signal), { deadlineMs: 100 });
  equal(result.successes.length, 1);
  equal(result.failures.length, 1);
  equal(result.failures[0].code, "unavailable");
  match(result.failures[0].message, /Machine "slow" did not answer within 100 ms/);
  equal(aborted, true, "the call's signal is aborted at the deadline");
  equal(Date.now() - started < 5000, true);
});

Deno.test("fanOut with no targets is an empty result, not an error", async () => {
  const result = await fanOut<Client, string>([], (client, _m, signal) => client(signal));
  deepEqual(result, { successes: [], failures: [], omissions: [] });
});

Deno.test("fanOut tells each outcome as it arrives, before the slowest Machine answers", async () => {
  let release!: () => void;
  const slow = new Promise<string>((resolve) => release = () => resolve("from m1"));
  const targets: FanOutTarget<Client>[] = [
    { id: "a", name: "m1", client: () => slow },
    { id: "b", name: "m2", client: () => Promise.resolve("from m2") },
    { id: "c", name: "m3", client: () => Promise.reject(new RpcError("unavailable", "gone")) },
    { id: "d", name: "m4", omitted: "no route" },
  ];
  const told: string[] = [];
  const done = fanOut(targets, (client, _m, signal) => client(signal), {
    onOutcome: (o) => {
      told.push(`${o.machine.name}:${o.kind}`);
      if (told.length === 3) release();
      if (o.kind === "success" && o.machine.name === "m2") throw new Error("a listener that throws");
    },
  });
  const result = await done;
  deepEqual(told, ["m4:omission", "m2:success", "m3:failure", "m1:success"]);
  deepEqual(result.successes.map((s) => s.machine.name), ["m1", "m2"]);
});
