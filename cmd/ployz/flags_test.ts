import assert from "node:assert/strict";
import { UsageError } from "../../lib/cli/mod.ts";
import { sharedOptions, stringFlag, timeoutMs } from "./flags.ts";
import { megabytes, mib } from "./units.ts";

Deno.test("stringFlag is a string option's text, and undefined for anything else", () => {
  const values = { machine: "m1", json: true, tag: ["a", "b"] };
  assert.equal(stringFlag(values, "machine"), "m1");
  assert.equal(stringFlag(values, "json"), undefined);
  assert.equal(stringFlag(values, "tag"), undefined);
  assert.equal(stringFlag(values, "absent"), undefined);
});

Deno.test("sharedOptions gives each shared option its one definition, in the order named", () => {
  const options = sharedOptions("request-key", "yes", "json");
  assert.deepEqual(Object.keys(options), ["request-key", "yes", "json"]);
  assert.deepEqual(options.yes, { type: "boolean", short: "y" });
  assert.deepEqual(options.json, { type: "boolean" });
  assert.deepEqual(sharedOptions(), {});
});

Deno.test("timeoutMs reads --timeout in seconds up to an hour, or the command's default", () => {
  assert.equal(timeoutMs({}, 60), 60_000);
  assert.equal(timeoutMs({ timeout: "1.5" }, 60), 1_500);
  assert.equal(timeoutMs({ timeout: "3600" }, 60), 3_600_000);
  for (const bad of ["0", "-1", "3601", "soon", ""]) {
    assert.throws(
      () => timeoutMs({ timeout: bad }, 60),
      (e: unknown) =>
        e instanceof UsageError &&
        e.message === `Invalid --timeout "${bad}": expected seconds above 0, at most 3600`,
    );
  }
  assert.throws(() => timeoutMs({ timeout: true }, 60), UsageError);
});

Deno.test("sizes print one way: decimal MB and binary MiB with one decimal", () => {
  assert.equal(megabytes(12_345_678), "12.3 MB");
  assert.equal(mib(3 * 2 ** 20), "3.0MiB");
  assert.equal(mib(undefined), "-");
});
