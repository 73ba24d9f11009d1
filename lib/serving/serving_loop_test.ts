import { equal, rejects } from "node:assert/strict";
import type { Engine } from "../deploy/machine/mod.ts";
import { openStore } from "../store/mod.ts";
import type { CaddyAdmin } from "./caddy_admin.ts";
import { startServingLoop } from "./serving_loop.ts";

// With the sanitizers on, a timer or watch left behind by a loop that failed to start fails this test.
Deno.test("a serving loop whose first pass fails is not started and leaves nothing running", async () => {
  const runDir = await Deno.makeTempDir();
  const store = openStore({ path: ":memory:", siteId: "m1", clusterId: "c-test" });
  store.liveContainers = () => {
    throw new Error("the store cannot be read");
  };
  let closed = 0;
  const admin: CaddyAdmin = {
    adapt: () => Promise.reject(new Error("not used")),
    load: () => Promise.reject(new Error("not used")),
    config: () => Promise.reject(new Error("not used")),
    close: () => void closed++,
  };
  try {
    await rejects(
      startServingLoop({
        store,
        engine: {} as Engine,
        runDir,
        dnsListen: ["127.0.0.1"],
        dnsUpstreams: [],
        admin: () => admin,
        tickMs: 50,
        debounceMs: 10,
      }),
      /the store cannot be read/,
    );
    equal(closed, 1, "the Caddy admin client is closed");
  } finally {
    store.close();
    await Deno.remove(runDir, { recursive: true });
  }
});
