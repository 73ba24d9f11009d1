import assert from "node:assert/strict";
import { openStore } from "../store/mod.ts";
import { pollUntil, sleep } from "../util/mod.ts";
import type { Ack, Container } from "../store/mod.ts";
import { startCertificateKeeper } from "./certificate_keeper.ts";
import {
  challengeAckPointer,
  challengeAcksToWrite,
  challengeConfirmation,
  type ConfirmationInput,
  confirmStep,
  staleChallengeAcks,
} from "./challenge_acks.ts";
import { INGRESS_PROJECT, INGRESS_SERVICE } from "./ingress_spec.ts";

// Keeper passes run on timers: poll for what they record, bounded.
const SOON = { timeoutMs: 5_000, intervalMs: 10 };

const PEM = Deno.readTextFileSync(new URL("./testdata/app.example.test.pem", import.meta.url));
const KEY = Deno.readTextFileSync(new URL("./testdata/app.example.test.key", import.meta.url));
const MACHINES = [{ id: "id1", name: "m1" }, { id: "id2", name: "m2" }, { id: "id3", name: "m3" }];

function proxy(machine: string, state = "running"): Container {
  return {
    id: `caddy-${machine}`,
    "machine_id": machine,
    project: INGRESS_PROJECT,
    service: INGRESS_SERVICE,
    deployment: "d",
    name: `caddy-${machine}`,
    image: "caddy",
    state,
  };
}
function ack(machine: string, token = "tok"): Ack {
  return { "machine_id": machine, pointer: challengeAckPointer(token), deployment: token };
}
function input(over: Partial<ConfirmationInput>): ConfirmationInput {
  return {
    token: "tok",
    machines: MACHINES,
    down: new Set(),
    containers: MACHINES.map((m) => proxy(m.id)),
    acks: [],
    ...over,
  };
}

Deno.test("challengeConfirmation awaits every Machine not Down that runs an Ingress Proxy", () => {
  assert.deepEqual(challengeConfirmation(input({ acks: [ack("id1")] })), {
    confirmed: ["m1"],
    missing: ["m2", "m3"],
  });
  // Another token's ack, or a leave ack, confirms nothing.
  assert.deepEqual(
    challengeConfirmation(input({ acks: [ack("id2", "other"), { ...ack("id3"), pointer: "leave:tok" }] }))
      .confirmed,
    [],
  );
  // A Down Machine is not awaited; nor is one without a running proxy.
  assert.deepEqual(
    challengeConfirmation(input({
      acks: [ack("id1")],
      down: new Set(["id2"]),
      containers: [proxy("id1"), proxy("id2"), proxy("id3", "exited")],
    })),
    { confirmed: ["m1"], missing: [] },
  );
  // A proxy still starting answers once it loaded the answer: it is awaited; so is one not created yet.
  assert.deepEqual(
    challengeConfirmation(input({ acks: [ack("id1")], containers: [proxy("id1"), proxy("id2", "created")] })),
    { confirmed: ["m1"], missing: ["m2", "m3"] },
  );
  assert.deepEqual(
    challengeConfirmation(input({ acks: [ack("id1"), ack("id2"), ack("id3")] })),
    { confirmed: ["m1", "m2", "m3"], missing: [] },
  );
});

Deno.test("challengeConfirmation awaits a proxy a Deploy has not created yet, on a Machine that accepts ingress", () => {
  const machines = [
    { id: "id1", name: "m1", phase: "participating" },
    { id: "id2", name: "m2", phase: "participating" },
    { id: "id3", name: "m3" },
    { id: "id4", name: "m4", phase: "participating", "accepts_ingress": false },
    { id: "id5", name: "m5", phase: "joining" },
    { id: "id6", name: "m6", phase: "participating" },
  ];
  // m2 and m3 (an older row without a phase) accept ingress and have no proxy yet; m4 refuses ingress, m5 has not
  // joined, m6's proxy was stopped by its operator: none of those can answer, none is awaited.
  assert.deepEqual(
    challengeConfirmation(
      input({ machines, acks: [ack("id1")], containers: [proxy("id1"), proxy("id6", "exited")] }),
    ),
    { confirmed: ["m1"], missing: ["m2", "m3"] },
  );
  assert.deepEqual(
    challengeConfirmation(
      input({
        machines,
        acks: [ack("id1"), ack("id2"), ack("id3")],
        containers: [proxy("id1"), proxy("id6", "exited")],
      }),
    ),
    { confirmed: ["m1", "m2", "m3"], missing: [] },
  );
});

Deno.test("confirmStep validates only when every awaited Machine confirmed, or names the others at the bound", () => {
  const all = { confirmed: ["m1", "m2", "m3"], missing: [] };
  const some = { confirmed: ["m1", "m2"], missing: ["m3"] };
  const none = { confirmed: [], missing: ["m1", "m2"] };
  assert.deepEqual(confirmStep("a.test", all, 0, 10_000), { kind: "validate", ...all });
  assert.deepEqual(confirmStep("a.test", some, 9_999, 10_000), { kind: "wait" });
  assert.deepEqual(confirmStep("a.test", some, 10_000, 10_000), { kind: "validate", ...some });
  assert.deepEqual(confirmStep("a.test", none, 500, 10_000), { kind: "wait" });
  const fail = confirmStep("a.test", none, 10_000, 10_000);
  assert.equal(fail.kind, "fail");
  assert.match(
    fail.kind === "fail" ? fail.message : "",
    /^challenge stage: no Ingress Proxy confirmed serving the answer for "a\.test" within 10 s \(awaited m1, m2\); the CA was not asked/,
  );
  const nobody = confirmStep("a.test", { confirmed: [], missing: [] }, 10_000, 10_000);
  assert.match(nobody.kind === "fail" ? nobody.message : "", /no Machine not Down runs one/);
});

Deno.test("challenge acks follow the tokens the loaded config answers, and only this Machine's", () => {
  const now = new Date("2030-01-01T00:00:00Z");
  const current = [ack("id1", "old"), ack("id1", "kept"), ack("id2", "gone"), {
    "machine_id": "id1",
    pointer: "leave:c1",
    deployment: "c1",
  }];
  assert.deepEqual(
    challengeAcksToWrite("id1", ["kept", "new"], current, now),
    [{ "machine_id": "id1", pointer: "acme:new", deployment: "new", "acked_at": now.toISOString() }],
  );
  assert.deepEqual(staleChallengeAcks("id1", ["kept", "new"], current), ["id1/acme:old"]);
  assert.equal(challengeAcksToWrite("id1", ["x".repeat(256)], [], now)[0].deployment.length, 128);
});

Deno.test("the keeper asks the CA to validate only after every Machine confirmed the answer", async () => {
  const store = openStore({ path: ":memory:", siteId: "id1", clusterId: "c" });
  const lines: string[] = [];
  let confirmed = ["m1"];
  let askedWith: string[] | undefined;
  const keeper = startCertificateKeeper({
    store,
    settings: () => Promise.resolve({ directoryUrl: "https://ca.test/dir", accountPath: "/nonexistent" }),
    down: () => new Set(),
    confirmation: () => ({
      confirmed,
      missing: ["m1", "m2", "m3"].filter((m) => !confirmed.includes(m)),
    }),
    kick: () => {},
    log: (line) => lines.push(line),
    async obtain(_settings, hostname, board) {
      await board.publish(hostname, "tok", "tok.thumb");
      askedWith = [...confirmed];
      await board.withdraw("tok");
      return { pem: PEM, key: KEY };
    },
  });
  try {
    keeper.consider(["app.example.test"]);
    await sleep(300);
    assert.equal(askedWith, undefined, "not validated while m2 and m3 have not confirmed");
    confirmed = ["m1", "m2"];
    await sleep(300);
    assert.equal(askedWith, undefined, "not validated while m3 has not confirmed");
    confirmed = ["m1", "m2", "m3"];
    assert.ok(await pollUntil(() => store.certificates.get("app.example.test") !== undefined, SOON));
    assert.deepEqual(askedWith, ["m1", "m2", "m3"]);
    assert.ok(
      lines.some((l) => /the answer for "app\.example\.test" is served by m1, m2, m3 \(confirmed in/.test(l)),
    );
  } finally {
    await keeper.stop();
    store.close();
  }
});

Deno.test("past the bound the keeper validates with the Machines that confirmed and names the others", async () => {
  const store = openStore({ path: ":memory:", siteId: "id1", clusterId: "c" });
  const lines: string[] = [];
  let answered: string[] = ["m1", "m2"];
  let fail = true;
  const keeper = startCertificateKeeper({
    store,
    settings: () => Promise.resolve({ directoryUrl: "https://ca.test/dir", accountPath: "/nonexistent" }),
    down: () => new Set(),
    confirmation: () => ({
      confirmed: answered,
      missing: ["m1", "m2", "m3"].filter((m) => !answered.includes(m)),
    }),
    kick: () => {},
    confirmMs: 200,
    random: () => 0.5,
    log: (line) => lines.push(line),
    async obtain(_settings, hostname, board) {
      await board.publish(hostname, "tok", "tok.thumb");
      if (hostname === "www.example.test") throw new Error("the CA was asked");
      if (fail) throw new Error("urn:ietf:params:acme:error:connection: connection refused");
      return { pem: PEM, key: KEY };
    },
  });
  try {
    keeper.consider(["app.example.test"]);
    assert.ok(await pollUntil(() => store.certificateErrors.get("app.example.test") !== undefined, SOON));
    assert.match(
      String(store.certificateErrors.get("app.example.test")?.error),
      /connection refused \(validation was asked although m3 did not confirm serving the answer within 0.2 s\)/,
    );
    assert.ok(
      lines.some((l) => /asking the CA to validate "app\.example\.test" though m3 did not confirm/.test(l)),
    );
    assert.ok(await pollUntil(() => !keeper.state().get("app.example.test")?.running, SOON));

    // Nobody confirms: the CA is never asked, and the report names the stage and the Machines.
    answered = [];
    fail = false;
    keeper.consider(["www.example.test"]);
    assert.ok(await pollUntil(() => store.certificateErrors.get("www.example.test") !== undefined, SOON));
    assert.match(
      String(store.certificateErrors.get("www.example.test")?.error),
      /awaited m1, m2, m3\); the CA was not asked to validate/,
    );
  } finally {
    await keeper.stop();
    store.close();
  }
});
