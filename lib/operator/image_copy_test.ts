import { deepEqual, equal, rejects } from "node:assert/strict";
import type { FanOutTarget, MachineClient } from "../rpc/mod.ts";
import { copyImage, pickMachine } from "./image_copy.ts";
import type { OperatorError } from "./errors.ts";

function machine(id: string, name: string, log: string[]): FanOutTarget<MachineClient> {
  return {
    id,
    name,
    client: {
      requireCapability: () => Promise.resolve(),
      pullImageFromPeer: (req: { ref: string; from_machine_id: string; timeout_ms: number }) => {
        log.push(`${name} pulls ${req.ref} from ${req.from_machine_id} within ${req.timeout_ms}`);
        return Promise.resolve({ transferred: true, bytes: 10, "duration_ms": 5 });
      },
    } as unknown as MachineClient,
  };
}

Deno.test("copyImage asks the target to pull from the source by id, and reports what it answered", async () => {
  const log: string[] = [];
  const targets = [machine("aaaa1111", "m1", log), machine("bbbb2222", "m2", log)];
  const copied = await copyImage(targets, { ref: "img:1", from: "m1", to: "bbbb", timeoutMs: 1000 });
  deepEqual(log, ["m2 pulls img:1 from aaaa1111 within 1000"]);
  deepEqual([copied.source.name, copied.target.name, copied.answer.bytes], ["m1", "m2", 10]);
});

Deno.test("copyImage refuses the same Machine twice, a name two Machines share, an unreachable target", async () => {
  const targets = [
    machine("aaaa1111", "m1", []),
    machine("bbbb2222", "twin", []),
    machine("cccc3333", "twin", []),
  ];
  await rejects(
    copyImage(targets, { ref: "i", from: "m1", to: "aaaa", timeoutMs: 1 }),
    /name the same Machine/,
  );
  await rejects(
    copyImage(targets, { ref: "i", from: "m1", to: "twin", timeoutMs: 1 }),
    (e: OperatorError) => {
      equal(e.code, "ambiguous");
      return true;
    },
  );
  const omitted = [...targets, { id: "dddd4444", name: "far", omitted: "no route" }];
  await rejects(
    copyImage(omitted, { ref: "i", from: "m1", to: "far", timeoutMs: 1 }),
    /Cannot reach Machine "far": no route/,
  );
  equal(pickMachine(targets, "cccc3333", "--to").name, "twin", "an id wins over a shared name");
});
