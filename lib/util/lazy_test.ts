import { equal, match, ok, rejects } from "node:assert/strict";
import { CodedError } from "./errors.ts";
import { damagedRelease, importOnFirstUse } from "./lazy.ts";

Deno.test("importOnFirstUse returns the module it loads", async () => {
  const m = await importOnFirstUse("lib/util/time.ts", () => import("./time.ts"));
  equal(typeof m.sleep, "function");
});

Deno.test("a module that cannot be loaded is one internal error naming it", async () => {
  const missing = new URL("./no_such_module.ts", import.meta.url).href;
  await rejects(importOnFirstUse("lib/util/no_such_module.ts", () => import(missing)), (error) => {
    ok(error instanceof CodedError);
    equal(error.code, "internal");
    match(
      error.message,
      /^Cannot load module "lib\/util\/no_such_module\.ts": .*no_such_module\.ts.*reinstall/,
    );
    equal(error.message.split("\n").length, 1);
    return true;
  });
});

Deno.test("damagedRelease is one line: the first line of the error, without its closing period", () => {
  const error = new TypeError(
    'Module not found "file:///r/lib/dns/zone.ts".\n    at file:///r/lib/dns/server.ts:3:1',
  );
  equal(
    damagedRelease('"ployzd dns"', error),
    'Cannot load "ployzd dns": Module not found "file:///r/lib/dns/zone.ts"; this installation is damaged, ' +
      "reinstall the release",
  );
});
