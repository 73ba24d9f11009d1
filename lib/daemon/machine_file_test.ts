import { deepEqual, equal, match, notEqual, ok, rejects } from "node:assert/strict";
import { join } from "node:path";
import { isMintedId, mintId } from "./ids.ts";
import { ensureKeyPair, keyPath } from "./keys.ts";
import { loadOrCreateMachine, machineFilePath, readMachineFile, writeMachineFile } from "./machine_file.ts";
import { parseSubnet } from "./subnet.ts";
import { tempDir } from "../util/testing/mod.ts";

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  await using tmp = await tempDir("ployz-daemon-");
  const dir = tmp.path;
  await fn(dir);
}

Deno.test("mintId gives 26 lowercase base32 characters, different each time", () => {
  const ids = new Set(Array.from({ length: 1000 }, mintId));
  equal(ids.size, 1000);
  for (const id of ids) ok(isMintedId(id), id);
  ok(!isMintedId("ABCDEFGHIJKLMNOPQRSTUVWXYZ"));
});

Deno.test("parseSubnet accepts an IPv4 /24 and derives the gateway", () => {
  deepEqual(parseSubnet("10.211.7.0/24"), { subnet: "10.211.7.0/24", gateway: "10.211.7.1" });
  for (const bad of ["10.211.7.1/24", "10.211.7.0/16", "10.256.0.0/24", "10.01.0.0/24", "x"]) {
    equal(parseSubnet(bad), undefined, bad);
  }
});

Deno.test("the Machine record is minted once and keeps fields a newer release wrote", async () => {
  await withDir(async (dir) => {
    const first = await loadOrCreateMachine(dir, "host-a");
    equal(first.created, true);
    equal(first.record.phase, "uninitialized");
    const again = await loadOrCreateMachine(dir, "host-b");
    equal(again.created, false);
    equal(again.record.id, first.record.id);
    equal(again.record.name, "host-a");
    await writeMachineFile(dir, { ...again.record, "future_field": { x: 1 } });
    const read = await readMachineFile(dir);
    deepEqual(read?.future_field, { x: 1 });
    const leftovers = [];
    for await (const entry of Deno.readDir(dir)) if (entry.name.endsWith(".tmp")) leftovers.push(entry.name);
    deepEqual(leftovers, []);
    await Deno.writeTextFile(machineFilePath(dir), JSON.stringify({ id: "Nope", name: "a", phase: "x" }));
    await rejects(readMachineFile(dir), /field "id"/);
  });
});

Deno.test("the key pair is generated once, the private key is 0600 and never changes", async () => {
  await withDir(async (dir) => {
    const first = await ensureKeyPair(dir);
    equal(first.generated, true);
    match(first.publicKey, /^[A-Za-z0-9+/]{43}=$/);
    equal((await Deno.stat(keyPath(dir))).mode! & 0o777, 0o600);
    equal((await Deno.stat(join(dir, "keys"))).mode! & 0o777, 0o700);
    const secret = await Deno.readTextFile(keyPath(dir));
    const again = await ensureKeyPair(dir);
    equal(again.generated, false);
    equal(again.publicKey, first.publicKey);
    notEqual(secret.trim(), first.publicKey);
    await Deno.writeTextFile(keyPath(dir), "short");
    const error = await ensureKeyPair(dir).catch((e) => e as Error);
    ok(error instanceof Error);
    ok(!error.message.includes("short"), "a key file's content never enters a message");
  });
});
