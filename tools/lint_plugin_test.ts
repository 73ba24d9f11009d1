import { deepEqual, equal } from "node:assert/strict";
import plugin from "./lint_plugin.ts";

const SOURCE = `
import { a } from "../deploy/docker/engine.ts";
import type { B } from "../store/store.ts";
import { ok } from "../store/mod.ts";
import { own } from "./own.ts";
import dns from "dns-packet";
export { c } from "../mesh/keys.ts";
export type { D } from "../mesh/mod.ts";
export * from "../observe/log_store.ts";
export * as all from "../observe/mod.ts";
const lazy = await import("../installer/run_attempt.ts");
const fine = await import("../installer/mod.ts");
const dynamic = await import(someName);
`;

function reported(filename: string, source: string): string[] {
  return Deno.lint.runPlugin(plugin, filename, source).map((d) => d.message);
}

Deno.test("area-boundary refuses every way of naming another area's internals and allows its mod.ts", () => {
  deepEqual(reported("/repo/lib/daemon/x.ts", SOURCE), [
    `Import "../deploy/docker/engine.ts" reaches into lib/deploy: import "lib/deploy/mod.ts" instead`,
    `Import "../store/store.ts" reaches into lib/store: import "lib/store/mod.ts" instead`,
    `Import "../mesh/keys.ts" reaches into lib/mesh: import "lib/mesh/mod.ts" instead`,
    `Import "../observe/log_store.ts" reaches into lib/observe: import "lib/observe/mod.ts" instead`,
    `Import "../installer/run_attempt.ts" reaches into lib/installer: import "lib/installer/mod.ts" instead`,
  ]);
});

Deno.test("area-boundary holds for cmd/, tests/ and tools/ too, and lets an area name its own files", () => {
  equal(reported("/repo/cmd/ployzd/serve.ts", `import { x } from "../../lib/daemon/daemon.ts";`).length, 1);
  equal(reported("/repo/tests/a_test.ts", `export { x } from "../lib/rpc/client.ts";`).length, 1);
  equal(reported("/repo/tools/bench/b.ts", `await import("../../lib/lab/up.ts");`).length, 1);
  deepEqual(reported("/repo/lib/deploy/plan/plan.ts", `import { x } from "../docker/engine.ts";`), []);
  deepEqual(reported("/repo/tests/a_test.ts", `import { x } from "./support/spawn.ts";`), []);
});

Deno.test("area-boundary lets a module through a sub-area's own mod.ts, a narrower door, and no deeper", () => {
  deepEqual(reported("/repo/lib/daemon/x.ts", `import { x } from "../deploy/machine/mod.ts";`), []);
  deepEqual(reported("/repo/lib/daemon/x.ts", `import("../installer/machine/mod.ts");`), []);
  deepEqual(reported("/repo/lib/daemon/x.ts", `import { x } from "../deploy/machine/x/mod.ts";`), [
    `Import "../deploy/machine/x/mod.ts" reaches into lib/deploy: import "lib/deploy/mod.ts" instead`,
  ]);
});

Deno.test("area-boundary keeps lib/util a leaf: it imports no other area, even through its mod.ts", () => {
  deepEqual(reported("/repo/lib/util/x.ts", `import { a } from "../store/mod.ts";`), [
    `Import "../store/mod.ts" reaches into lib/store: lib/util imports no other area`,
  ]);
  deepEqual(reported("/repo/lib/store/x.ts", `import { sleep } from "../util/mod.ts";`), []);
});

Deno.test("zod-namespace refuses zod's z and default exports and allows the namespace and named imports", () => {
  const refused = `Import zod as import * as z from 'zod': its "z" and default exports keep all of zod, ` +
    `every locale included, in the bundles`;
  deepEqual(reported("/repo/lib/rpc/x.ts", `import { z } from "zod";`), [refused]);
  deepEqual(reported("/repo/lib/rpc/x.ts", `import type { z } from "zod";`), [refused]);
  deepEqual(reported("/repo/lib/rpc/x.ts", `import zod from "zod";`), [refused]);
  deepEqual(reported("/repo/lib/rpc/x.ts", `import * as z from "zod";`), []);
  deepEqual(reported("/repo/lib/rpc/x.ts", `import type * as z from "zod";`), []);
  deepEqual(reported("/repo/lib/rpc/x.ts", `import { object, string } from "zod";`), []);
  deepEqual(reported("/repo/lib/rpc/x.ts", `import { z } from "./zod.ts";`), []);
});
