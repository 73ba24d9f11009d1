import { deepEqual } from "node:assert/strict";
import { DEFAULT_LAYOUT, layoutEnv, layoutFromEnv } from "./layout.ts";

Deno.test("layoutEnv carries a layout to a child that reads it back; relocatedOnly leaves out the default roots", () => {
  const layout = { ...DEFAULT_LAYOUT, dataDir: "/tmp/m1/data", runDir: "/tmp/m1/run" };
  const env = layoutEnv(layout);
  deepEqual(Object.keys(env), [
    "PLOYZ_DATA_DIR",
    "PLOYZ_RUN_DIR",
    "PLOYZ_DOCKER_SOCKET",
    "PLOYZ_DOCKER_ROOT",
  ]);
  deepEqual(layoutFromEnv((key) => env[key]), layout);
  deepEqual(layoutEnv(layout, { relocatedOnly: true }), {
    PLOYZ_DATA_DIR: "/tmp/m1/data",
    PLOYZ_RUN_DIR: "/tmp/m1/run",
  });
  deepEqual(layoutEnv(DEFAULT_LAYOUT, { relocatedOnly: true }), {});
});
