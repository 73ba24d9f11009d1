import assert from "node:assert/strict";
import plugin from "./lint_plugin.ts";

function messages(filename: string, source: string): string[] {
  return Deno.lint.runPlugin(plugin, filename, source).map((d) => d.message);
}

Deno.test("area-boundary lets every area import lib/util through its mod.ts", () => {
  assert.deepEqual(messages("/repo/lib/daemon/x.ts", 'import { sleep } from "../util/mod.ts";'), []);
  assert.equal(messages("/repo/lib/daemon/x.ts", 'import { sleep } from "../util/time.ts";').length, 1);
});

Deno.test("area-boundary refuses any import of another area from lib/util", () => {
  const found = messages("/repo/lib/util/x.ts", 'import { StoreError } from "../store/mod.ts";');
  assert.deepEqual(found, [
    'Import "../store/mod.ts" reaches into lib/store: lib/util imports no other area',
  ]);
  assert.deepEqual(messages("/repo/lib/util/x.ts", 'import { sleep } from "./time.ts";'), []);
});
