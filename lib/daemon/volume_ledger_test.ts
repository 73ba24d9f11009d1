import assert from "node:assert/strict";
import { join } from "node:path";
import { VolumeError } from "../volume/mod.ts";
import {
  readDefaultSizeFile,
  readLedgerFile,
  writeDefaultSizeFile,
  writeLedgerFile,
} from "./volume_ledger.ts";

Deno.test("ledger and default size: absent is empty, written is read back 0600, unreadable is a VolumeError", async () => {
  const dir = await Deno.makeTempDir();
  try {
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
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
