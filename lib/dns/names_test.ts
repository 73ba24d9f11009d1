import { deepEqual } from "node:assert/strict";
import { parseName } from "./names.ts";

Deno.test("parseName() reads every variant of the name grammar", () => {
  deepEqual(parseName("web.shop.internal."), { kind: "service", key: "web.shop", nearest: false });
  deepEqual(parseName("Web.Shop.Nearest.Internal"), { kind: "service", key: "web.shop", nearest: true });
  deepEqual(parseName("ABC123.id.lookup.internal"), { kind: "id", id: "abc123" });
  deepEqual(parseName("web.shop.M1.machine.internal"), { kind: "machine", key: "web.shop", machineId: "m1" });
  deepEqual(parseName("web.shop.eu.region.internal"), { kind: "none" });
  deepEqual(parseName("web..internal"), { kind: "none" });
  deepEqual(parseName("internal."), { kind: "none" });
  deepEqual(parseName("example.com"), { kind: "forward" });
  deepEqual(parseName("notinternal"), { kind: "forward" });
});
