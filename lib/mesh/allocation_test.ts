import assert from "node:assert/strict";
import fc from "fast-check";
import { chooseSubnet } from "./allocation.ts";
import { networksOverlap, parseIpv4Network } from "./cidr.ts";
import { MeshError } from "./errors.ts";

Deno.test("chooseSubnet() picks the lowest free /24", () => {
  assert.equal(chooseSubnet({ observed: [], history: [] }).subnet, "10.210.0.0/24");
  const choice = chooseSubnet({
    observed: [{ subnet: "10.210.0.0/24" }, { subnet: "10.210.2.0/24" }],
    history: [{ subnet: "10.210.1.0/24" }],
  });
  assert.deepEqual(choice, { subnet: "10.210.3.0/24", gateway: "10.210.3.1", unreadable: [] });
});

Deno.test("chooseSubnet() avoids history not yet visible in the observation", () => {
  const history = [{ subnet: "10.210.0.0/24", machine_name: "a" }];
  assert.equal(chooseSubnet({ observed: [], history }).subnet, "10.210.1.0/24");
});

Deno.test("chooseSubnet() avoids wider claims and reports unreadable ones", () => {
  const choice = chooseSubnet({ observed: [{ subnet: "10.210.0.0/23" }, { subnet: "bogus" }], history: [] });
  assert.equal(choice.subnet, "10.210.2.0/24");
  assert.deepEqual(choice.unreadable, ["bogus"]);
});

Deno.test("chooseSubnet() refuses with conflict when the network is full", () => {
  assert.throws(
    () =>
      chooseSubnet({
        network: "10.9.0.0/23",
        observed: [{ subnet: "10.9.0.0/24" }],
        history: [{ subnet: "10.9.1.0/24" }],
      }),
    (e) =>
      e instanceof MeshError && e.code === "conflict" &&
      /1 observed, 1 in allocation history/.test(e.message),
  );
});

Deno.test("chooseSubnet() never overlaps a claim it was given", () => {
  const claim = fc.integer({ min: 0, max: 255 }).map((i) => ({ subnet: `10.210.${i}.0/24` }));
  fc.assert(
    fc.property(
      fc.array(claim, { maxLength: 60 }),
      fc.array(claim, { maxLength: 60 }),
      (observed, history) => {
        const picked = parseIpv4Network(chooseSubnet({ observed, history }).subnet);
        for (const c of [...observed, ...history]) {
          assert.equal(networksOverlap(picked, parseIpv4Network(c.subnet)), false);
        }
      },
    ),
  );
});
