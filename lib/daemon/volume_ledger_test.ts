import assert from "node:assert/strict";
import { join } from "node:path";
import { RpcError } from "../rpc/mod.ts";
import { VolumeError } from "../volume/mod.ts";
import {
  assertLedgerProject,
  readDefaultSizeFile,
  readLedgerFile,
  writeDefaultSizeFile,
  writeLedgerFile,
} from "./volume_ledger.ts";
import { tempDir } from "../util/testing/mod.ts";

Deno.test("ledger and default size: absent is empty, written is read back 0600, unreadable is a VolumeError", async () => {
  await using tmp = await tempDir();
  const dir = tmp.path;
  const ledger = join(dir, "volumes.json");
  const defaults = join(dir, "volume_defaults.json");
  assert.deepEqual(await readLedgerFile(ledger), {});
  assert.equal(await readDefaultSizeFile(defaults), undefined);
  await writeLedgerFile(ledger, { "p_data": { project: "p", sizeBytes: 1024, epoch: 2 } });
  await writeDefaultSizeFile(defaults, 4096);
  assert.deepEqual(await readLedgerFile(ledger), { "p_data": { project: "p", sizeBytes: 1024, epoch: 2 } });
  assert.equal(await readDefaultSizeFile(defaults), 4096);
  assert.equal((await Deno.stat(ledger)).mode! & 0o777, 0o600);
  assert.equal((await Deno.stat(defaults)).mode! & 0o777, 0o600);
  await Deno.writeTextFile(defaults, JSON.stringify({ "default_size_bytes": -1 }));
  assert.equal(
    await readDefaultSizeFile(defaults),
    undefined,
    "a size that is not a positive integer is none",
  );
  await Deno.writeTextFile(defaults, "{not json");
  await assert.rejects(
    readDefaultSizeFile(defaults),
    (e) => e instanceof VolumeError && e.code === "internal",
  );
  await Deno.writeTextFile(ledger, "{not json");
  await assert.rejects(readLedgerFile(ledger), (e) => e instanceof VolumeError && e.code === "internal");
});

Deno.test("a removal of one Project never removes a Volume the ledger records for another", () => {
  const ledger = {
    "shop_data": { project: "shop" },
    "shop_x_data": { project: "shop_x" },
    "shop_m": { floor: 3 },
  };
  assertLedgerProject(ledger, "shop_data", "shop");
  // Named under "shop_" but created here for Project "shop_x": the prefix alone would let "shop" remove it.
  assert.throws(
    () => assertLedgerProject(ledger, "shop_x_data", "shop"),
    (e) =>
      e instanceof RpcError && e.code === "conflict" &&
      e.message === 'Volume "shop_x_data" belongs to Project "shop_x", not "shop": not removed',
  );
  // A copy the ledger names no Project for (a received Mirror) or does not know rests on the name prefix.
  assertLedgerProject(ledger, "shop_m", "shop");
  assertLedgerProject(ledger, "shop_new", "shop");
});
