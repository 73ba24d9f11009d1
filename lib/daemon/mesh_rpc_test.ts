import { equal } from "node:assert/strict";
import { managementAddress } from "../mesh/mod.ts";
import { meshCaller, meshRpcHandler } from "./mesh_rpc.ts";

const KEY = btoa(String.fromCharCode(...new Uint8Array(32).fill(7)));
const ROWS = [
  { id: "self", name: "m1", subnet: "10.210.0.0/24" },
  { id: "b", name: "m2", subnet: "10.210.1.0/24", "public_key": KEY },
  { id: "c", name: "m3", subnet: "10.210.2.0/24" },
];

Deno.test("only a known Machine's gateway or management address is a mesh caller", () => {
  equal(meshCaller("10.210.1.1", ROWS, "self")?.name, "m2");
  equal(meshCaller("::ffff:10.210.2.1", ROWS, "self")?.name, "m3");
  equal(meshCaller(managementAddress(KEY), ROWS, "self")?.name, "m2");
  equal(meshCaller(`[${managementAddress(KEY).toUpperCase()}]`, ROWS, "self")?.name, "m2");
  // A container on a member Machine is inside its subnet but is not the Machine.
  equal(meshCaller("10.210.1.7", ROWS, "self"), undefined);
  // This Machine's own gateway never calls in over the mesh.
  equal(meshCaller("10.210.0.1", ROWS, "self"), undefined);
  equal(meshCaller("192.0.2.5", ROWS, "self"), undefined);
  equal(meshCaller("10.210.3.1", [...ROWS, { id: "d", subnet: "not a subnet" }], "self"), undefined);
});

Deno.test("the mesh handler refuses strangers and second hops, and passes members through", async () => {
  let served = 0;
  const handle = meshRpcHandler({
    rows: () => ROWS,
    self: () => ({ id: "self", name: "m1" }),
    fetch: () => {
      served++;
      return Response.json({ ok: true });
    },
  });
  const post = (path: string): Request => new Request(`http://10.210.0.1:51000${path}`, { method: "POST" });
  const signal = new AbortController().signal;

  const stranger = await handle(post("/rpc/ployz.machine.status.v1"), "10.210.1.7", signal);
  equal(stranger.status, 401);
  const body = await stranger.json();
  equal(body.error.code, "unauthenticated");
  equal(body.error.details.capability, "ployz.machine.status.v1");

  const hop = await handle(post("/rpc/via/c/ployz.machine.status.v1"), "10.210.1.1", signal);
  equal(hop.status, 404);
  equal((await hop.json()).error.code, "unsupported");

  const member = await handle(post("/rpc/ployz.machine.status.v1"), "10.210.1.1", signal);
  equal(member.status, 200);
  await member.body?.cancel();
  equal(served, 1);
});
