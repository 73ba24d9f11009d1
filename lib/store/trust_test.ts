import assert from "node:assert/strict";
import { join } from "node:path";
import type { Change } from "./change.ts";
import { encodeHlc } from "./hlc.ts";
import { CLUSTER_HEADER } from "./protocol.ts";
import { changeMessage, ChangeSigner, generateSigningSecret, SignatureVerifier } from "./signing.ts";
import { openStore, type Store } from "./store.ts";
import { SyncAgent } from "./sync_agent.ts";
import { createSyncApp } from "./sync_app.ts";
import { sleep } from "../util/mod.ts";
import { streamedBody } from "../util/testing/mod.ts";

const CLUSTER = "cluster-t";

function member(siteId: string, path = ":memory:"): Store {
  return openStore({ path, siteId, clusterId: CLUSTER, signingSecret: generateSigningSecret() });
}

/** Makes `m1` the founder that admitted `m2`, each trusting the other as a join would leave them. */
function pair(m1: Store, m2: Store): void {
  m1.admit("m1", m1.signingKey!);
  m1.admit("m2", m2.signingKey!);
  m2.addAnchors([{ id: "m1", signingKey: m1.signingKey! }]);
}

async function signed(store: Store, changes: Change[]): Promise<Change[]> {
  return await store.outbound(changes);
}

function machineRow(id: string, extra: Record<string, unknown> = {}): Change {
  const body = { id, name: id, "public_key": "A".repeat(43) + "=", subnet: "10.210.9.0/24", ...extra };
  return {
    site: id,
    version: 1,
    table: "machines",
    key: id,
    hlc: encodeHlc({ ms: Date.now(), counter: 0 }),
    owner: id,
    deleted: false,
    body: JSON.stringify(body),
  };
}

Deno.test("changes travel signed and a member's changes are merged by every member", async () => {
  using m1 = member("m1");
  using m2 = member("m2");
  pair(m1, m2);
  const local = m2.machines.put({ id: "m2", name: "two", "signing_key": m2.signingKey });
  assert.equal(local.sig, undefined, "a local write is signed when it leaves, not before");
  const [out] = await signed(m2, [local]);
  assert.match(out.sig ?? "", /^[A-Za-z0-9+/]{86}==$/);
  assert.deepEqual(await m1.receive([out]), { applied: 1, duplicates: 0, rejected: [] });
  assert.equal(m1.machines.get("m2")?.name, "two");
  // The signature is kept, so a relay carries it on.
  assert.equal(m1.changesMissingFrom({}).changes.find((c) => c.site === "m2")?.sig, out.sig);
});

Deno.test("forged, unsigned and unadmitted changes are refused and counted", async () => {
  using m1 = member("m1");
  using m2 = member("m2");
  pair(m1, m2);
  using outsider = member("m9");
  const [real] = await signed(m1, [m1.machines.put({ id: "m1", name: "one" })]);
  await m2.receive([real]);
  // A change claiming m1's site: unsigned, signed by a member that is not m1, signed by an outsider.
  const claim = machineRow("m1", { endpoints: ["203.0.113.9:51820"] });
  claim.version = 2;
  const bySigner = (signer: ChangeSigner): Change => ({
    ...claim,
    sig: signer.signSync(changeMessage(CLUSTER, claim)),
  });
  const m2Signer = new ChangeSigner(generateSigningSecret());
  m1.admit("m3", m2Signer.publicKey);
  const [admission] = await signed(m1, [
    m1.changesMissingFrom({}).changes.find((c) => c.table === "members" && c.key === "m3")!,
  ]);
  await m2.receive([admission]);
  const tampered = { ...real, body: real.body!.replace('"one"', '"evil"') };
  const outsiderRow = (await signed(outsider, [outsider.machines.put({ id: "m9", name: "nine" })]))[0];
  const result = await m2.receive([
    claim,
    bySigner(m2Signer),
    bySigner(new ChangeSigner(generateSigningSecret())),
    { ...tampered, version: 9 },
    outsiderRow,
  ]);
  assert.equal(result.applied, 0, JSON.stringify(result));
  assert.equal(result.rejected.length, 5, JSON.stringify(result));
  assert.match(result.rejected[0].reason, /not signed/);
  assert.match(result.rejected[1].reason, /signature does not match/);
  assert.match(result.rejected[4].reason, /not admitted/);
  assert.equal(m2.machines.get("m1")?.name, "one");
  assert.equal(m2.machines.get("m1")?.endpoints, undefined);
  assert.equal(m2.machines.get("m9"), undefined);
  // Nothing refused reaches the vector or the sites table.
  assert.deepEqual(Object.keys(m2.vector()).sort(), ["m1"]);
  // The synchronous path refuses the same.
  assert.equal(m2.applyChanges([claim, bySigner(m2Signer), outsiderRow]).rejected.length, 3);
});

Deno.test("admissions: keys never change, are never deleted, and a Machine row names its own key", async () => {
  using m1 = member("m1");
  using m2 = member("m2");
  pair(m1, m2);
  const other = generateSigningSecret();
  assert.throws(() => m1.admit("m2", new ChangeSigner(other).publicKey), /another signing key/);
  // A member trying to re-key or un-admit another Machine through a crafted change.
  const rekey = m2.members.put({
    "machine_id": "m1",
    "signing_key": new ChangeSigner(other).publicKey,
  });
  const unadmit = m2.members.delete("m2");
  const lying = m2.machines.put({
    id: "m2",
    name: "two",
    "signing_key": new ChangeSigner(other).publicKey,
  });
  const result = await m1.receive(await signed(m2, [rekey, unadmit, lying]));
  assert.equal(result.applied, 0);
  assert.deepEqual(result.rejected.map((r) => r.reason.replace(/^Refused change m2:\d+: /, "")), [
    'Machine "m1" is admitted with another key',
    "admissions are never deleted",
    "its signing_key is not the key it is signed with",
  ]);
  assert.equal(m1.trustedKey("m1"), m1.signingKey);
});

Deno.test("a joiner trusts its anchors and every Machine they admit, also within one batch", async () => {
  using m1 = member("m1");
  using m2 = member("m2");
  pair(m1, m2);
  using m3 = member("m3");
  using m4 = member("m4");
  m2.admit("m3", m3.signingKey!); // m3 admitted by m2, which the joiner m4 learns of only through m1
  const fromM3 = m3.containers.put({
    id: "c1",
    "machine_id": "m3",
    project: "p",
    service: "s",
    name: "c1",
    image: "i",
  });
  m4.addAnchors([{ id: "m1", signingKey: m1.signingKey! }]);
  // m2's admission and m3's change reach m1 in one batch (through m2) and then the joiner m4.
  const batch = [
    ...(await signed(m2, m2.changesMissingFrom({}).changes)),
    ...(await signed(m3, [fromM3])),
  ];
  assert.equal((await m1.receive(batch.reverse())).rejected.length, 0);
  const everything = await signed(m1, m1.changesMissingFrom({}).changes);
  const result = await m4.receive(everything.reverse());
  assert.deepEqual(result.rejected, []);
  assert.equal(m4.containers.get("c1")?.machine_id, "m3");
  assert.equal(m4.dump(), m1.dump());
});

Deno.test("a container row whose address is not an IP literal is refused on write and on receipt", () => {
  using a = openStore({ path: ":memory:", siteId: "m1", clusterId: CLUSTER });
  using b = openStore({ path: ":memory:", siteId: "m2", clusterId: CLUSTER });
  const row = { id: "c1", "machine_id": "m2", project: "p", service: "s", name: "c1", image: "i" };
  assert.throws(
    () => b.containers.put({ ...row, addresses: ["10.0.0.1:80\n}\nimport /etc/x"] }),
    /IP address/,
  );
  const good = b.containers.put({ ...row, addresses: ["10.210.1.7", "fdcc::1"] });
  const bad = { ...good, version: 2, body: JSON.stringify({ ...row, addresses: ["evil.example {"] }) };
  const result = a.applyChanges([good, bad]);
  assert.equal(result.applied, 1);
  assert.match(result.rejected[0].reason, /addresses\.0: expected an IP address/);
});

Deno.test("a joiner catches up even when a Machine's changes fill pages before its admission", async () => {
  // Sites sort "a2" before "z1": without admissions first, every page of a2's changes would be refused whole.
  using z1 = member("z1");
  using a2 = member("a2");
  using joiner = member("j3");
  await using served = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    createSyncApp(z1).fetch,
  );
  z1.admit("z1", z1.signingKey!);
  z1.admit("a2", a2.signingKey!);
  a2.addAnchors([{ id: "z1", signingKey: z1.signingKey! }]);
  for (let i = 0; i < 30; i++) a2.cluster.put({ name: `a${i}`, value: i });
  await z1.receive(await a2.outbound(a2.changesMissingFrom({}).changes));
  joiner.addAnchors([{ id: "z1", signingKey: z1.signingKey! }]);
  const url = `http://127.0.0.1:${served.addr.port}`;
  const agent = new SyncAgent(joiner, { peers: () => [], pageLimit: 7 });
  for (let round = 0; round < 10 && !joiner.caughtUpWith(z1.vector()); round++) await agent.syncOnce(url);
  assert.ok(joiner.caughtUpWith(z1.vector()), "the joiner caught up");
  assert.equal(joiner.cluster.get("a29")?.value, 29);
});

Deno.test("a change more than 5 minutes ahead is refused and does not move the clock", () => {
  let now = Date.UTC(2026, 0, 1);
  using a = openStore({ path: ":memory:", siteId: "m1", clusterId: CLUSTER, now: () => now });
  using b = openStore({ path: ":memory:", siteId: "m2", clusterId: CLUSTER, now: () => now });
  const poisoned: Change = {
    site: "m2",
    version: 1,
    table: "cluster",
    key: "x",
    hlc: "ffffffffffffffffff",
    owner: "",
    deleted: false,
    body: JSON.stringify({ name: "x", value: 1 }),
  };
  const ahead = { ...poisoned, version: 2, hlc: encodeHlc({ ms: now + 5 * 60_000 + 1000, counter: 0 }) };
  const near = { ...poisoned, version: 3, hlc: encodeHlc({ ms: now + 60_000, counter: 0 }) };
  const result = a.applyChanges([poisoned, ahead, near]);
  assert.equal(result.applied, 1);
  assert.deepEqual(result.rejected.map((r) => r.version), [1, 2]);
  assert.match(result.rejected[1].reason, /301 s ahead of this Machine's \(limit 300 s\)/);
  const next = a.cluster.put({ name: "y", value: 2 });
  assert.match(next.hlc, /^[0-9a-f]{18}$/);
  assert.deepEqual(b.applyChanges([next]), { applied: 1, duplicates: 0, rejected: [] });
  now += 10 * 60_000; // once the receiver's clock passes it, the same change is taken
  assert.equal(a.applyChanges([ahead]).applied, 1);
});

Deno.test("a crash that loses the log's tail never reuses a version a peer holds", async () => {
  const dir = await Deno.makeTempDir({ prefix: "trust_test_" });
  const secret = generateSigningSecret();
  const open = (): Store =>
    openStore({ path: join(dir, "a.db"), siteId: "m1", clusterId: CLUSTER, signingSecret: secret });
  const b = member("m2");
  let a = open();
  try {
    a.admit("m1", a.signingKey!);
    a.admit("m2", b.signingKey!);
    b.addAnchors([{ id: "m1", signingKey: a.signingKey! }]);
    for (let i = 0; i < 3; i++) a.cluster.put({ name: `k${i}`, value: i });
    a.close();
    // What survives the power loss: the file as of the third write.
    const survived = await Deno.readFile(join(dir, "a.db"));
    a = open();
    const lost = [a.cluster.put({ name: "k3", value: 3 }), a.cluster.put({ name: "k4", value: 4 })];
    assert.equal((await b.receive(await a.outbound(lost))).applied, 2);
    a.close();
    for (const suffix of ["-wal", "-shm"]) await Deno.remove(join(dir, `a.db${suffix}`)).catch(() => {});
    await Deno.writeFile(join(dir, "a.db"), survived);
    a = open();
    const after = a.cluster.put({ name: "k3", value: 33 });
    assert.ok(after.version > 4 + 1, `version ${after.version} is above every version that left`);
    // Both directions of anti-entropy: the lost changes come back, the new one goes out; the copies agree.
    const bApp = createSyncApp(b);
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, bApp.fetch);
    try {
      const agent = new SyncAgent(a, { peers: () => [] });
      await agent.syncOnce(`http://127.0.0.1:${server.addr.port}`);
    } finally {
      await server.shutdown();
    }
    assert.equal(a.dump(), b.dump());
    assert.equal(b.cluster.get("k3")?.value, 33);
    assert.equal(b.cluster.get("k4")?.value, 4);
  } finally {
    a.close();
    b.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a push naming too many sites, or a reply past the cap, is refused whole", async () => {
  const store = openStore({ path: ":memory:", siteId: "m1", clusterId: CLUSTER });
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    createSyncApp(store).fetch,
  );
  try {
    const changes = Array.from({ length: 1500 }, (_, i) => ({
      site: `s${i}`,
      version: 1,
      table: "cluster",
      key: `k${i}`,
      hlc: encodeHlc({ ms: Date.now(), counter: 0 }),
      owner: "",
      deleted: false,
      body: JSON.stringify({ name: `k${i}` }),
    }));
    const response = await fetch(`http://127.0.0.1:${server.addr.port}/store/v1/push`, {
      method: "POST",
      headers: { [CLUSTER_HEADER]: CLUSTER, "content-type": "application/json" },
      body: JSON.stringify({ site: "s0", changes }),
    });
    assert.equal(response.status, 400);
    assert.match(await response.text(), /more than 1024 sites/);
    assert.deepEqual(store.vector(), {});
  } finally {
    await server.shutdown();
    store.close();
  }
  // A peer answering with an endless body: the reader stops at the cap instead of buffering it.
  const { body: endlessBody, pulled: sent } = streamedBody(1024 * 1024);
  await using endless = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => new Response(endlessBody, { headers: { [CLUSTER_HEADER]: CLUSTER } }),
  );
  using reader = openStore({ path: ":memory:", siteId: "m2", clusterId: CLUSTER });
  const agent = new SyncAgent(reader, { peers: () => [] });
  await assert.rejects(
    agent.peerVector(`http://127.0.0.1:${endless.addr.port}`),
    /more than 33554432 bytes/,
  );
  assert.ok(sent() < 64 * 1024 * 1024, `read ${sent()} bytes`);
});

Deno.test("the sync app tells its owner of every push it refused changes from", async () => {
  using m1 = member("m1");
  using m2 = member("m2");
  pair(m1, m2);
  const told: [string, number][] = [];
  const app = createSyncApp(m1, { onRejected: (site, rejected) => told.push([site, rejected.length]) });
  await using server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.fetch);
  const unsigned = m2.cluster.put({ name: "x", value: 1 });
  const agent = new SyncAgent(m2, { peers: () => [] });
  const url = `http://127.0.0.1:${server.addr.port}`;
  await agent.syncOnce(url); // signed by m2: nothing refused
  const response = await fetch(`${url}/store/v1/push`, {
    method: "POST",
    headers: { [CLUSTER_HEADER]: CLUSTER, "content-type": "application/json" },
    body: JSON.stringify({ site: "m2", changes: [{ ...unsigned, version: 99, sig: undefined }] }),
  });
  assert.equal((await response.json() as { rejected: unknown[] }).rejected.length, 1);
  assert.deepEqual(told, [["m2", 1]]);
});

Deno.test("an endless request body is refused at the cap, not buffered", async () => {
  using store = openStore({ path: ":memory:", siteId: "m1", clusterId: CLUSTER });
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    createSyncApp(store).fetch,
  );
  const { body, pulled: sent } = streamedBody(1024 * 1024, 256 * 1024 * 1024);
  const response = await fetch(`http://127.0.0.1:${server.addr.port}/store/v1/push`, {
    method: "POST",
    headers: { [CLUSTER_HEADER]: CLUSTER, "content-type": "application/json" },
    body,
  }).catch((error) => error as Error);
  // The server answers 413 and stops reading; the client may see the answer or a reset connection.
  if (response instanceof Response) {
    assert.equal(response.status, 413);
    await response.body?.cancel();
  }
  assert.ok(sent() < 128 * 1024 * 1024, `sent ${sent()} bytes before the refusal`);
});

Deno.test("an anti-entropy round whose peer list throws is reported and the agent keeps going", async () => {
  const store = openStore({ path: ":memory:", siteId: "m1", clusterId: CLUSTER });
  const events: string[] = [];
  let calls = 0;
  const agent = new SyncAgent(store, {
    peers: () => {
      calls += 1;
      throw new Error(`Invalid subnet "x"`);
    },
    antiEntropyMs: 5,
    onEvent: (e) => events.push(e.type),
  });
  const unhandled: unknown[] = [];
  const onUnhandled = (e: PromiseRejectionEvent): void => {
    e.preventDefault();
    unhandled.push(e.reason);
  };
  globalThis.addEventListener("unhandledrejection", onUnhandled);
  try {
    agent.start();
    store.cluster.put({ name: "x", value: 1 });
    await sleep(100);
    await agent.stop();
    assert.deepEqual(unhandled, []);
    assert.ok(calls >= 3, `rounds kept running (${calls})`);
    assert.ok(events.includes("round_failed"));
  } finally {
    globalThis.removeEventListener("unhandledrejection", onUnhandled);
    store.close();
  }
});

Deno.test("the verifier accepts exactly the signer's signature of the exact message, and never throws", async () => {
  const signer = new ChangeSigner(generateSigningSecret());
  const verifier = new SignatureVerifier();
  const message = new TextEncoder().encode("ployz");
  const sig = signer.signSync(message);
  // The native signer and the pure-JavaScript one give the same (deterministic) RFC 8032 signature.
  assert.equal(await signer.sign(message), sig);
  assert.equal(verifier.verifySync(signer.publicKey, sig, message), true);
  assert.equal(verifier.verifySync(signer.publicKey, sig, new TextEncoder().encode("ployZ")), false);
  assert.equal(verifier.verifySync(new ChangeSigner(generateSigningSecret()).publicKey, sig, message), false);
  // Well-formed base64 that is no curve point, and a signature of the right length that is no signature.
  assert.equal(verifier.verifySync("A".repeat(42) + "E=", sig, message), false);
  assert.equal(verifier.verifySync(signer.publicKey, "A".repeat(86) + "==", message), false);
  assert.equal(verifier.verifySync("not a key", sig, message), false);
});
