import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { openStore } from "../store/mod.ts";
import { pollUntil, sleep } from "../util/mod.ts";
import type { Certificate, Container } from "../store/mod.ts";
import { canonical } from "./caddy_loader.ts";
import { listCertificates, requestRenewal } from "./certificate_admin.ts";
import { projectCaddy } from "./caddy_projection.ts";
import { startCertificateKeeper } from "./certificate_keeper.ts";
import {
  certificateAsker,
  certificateTasks,
  hostnameProblem,
  renewalDue,
  retryPauseMs,
  usableCertificate,
} from "./certificates.ts";
import { servingLabels } from "./labels.ts";

// Keeper passes run on timers: poll for what they record, bounded.
const SOON = { timeoutMs: 5_000, intervalMs: 10 };

// Self-signed test material (P-256, 100 years) made with openssl; used nowhere else.
const dir = new URL("./testdata/", import.meta.url);
const PEM = Deno.readTextFileSync(new URL("app.example.test.pem", dir));
const KEY = Deno.readTextFileSync(new URL("app.example.test.key", dir));
const OTHER_KEY = Deno.readTextFileSync(new URL("other.key", dir));
const OTHER_PEM = Deno.readTextFileSync(new URL("other.pem", dir));
const APP2_PEM = Deno.readTextFileSync(new URL("app2.pem", dir));
const APP2_KEY = Deno.readTextFileSync(new URL("app2.key", dir));
const NOW = new Date("2030-01-01T00:00:00Z");
const APP: Certificate = { name: "app.example.test", pem: PEM, key: KEY, source: "acme" };

function web(protocol: "http" | "https", hostname = "app.example.test"): Container {
  return {
    id: "c1",
    "machine_id": "m1",
    project: "shop",
    service: "web",
    deployment: "A",
    name: "c1",
    image: "i",
    state: "running",
    health: "healthy",
    addresses: ["10.210.1.5"],
    labels: servingLabels({
      ports: [{
        kind: "ingress",
        hostname,
        loadBalancerPort: protocol === "https" ? 443 : 80,
        containerPort: 8080,
        protocol,
      }],
      caddy: null,
    }),
  };
}

Deno.test("hostnameProblem refuses wildcards with the reason and names that are not DNS hostnames", () => {
  assert.equal(hostnameProblem("app.example.test"), null);
  assert.match(hostnameProblem("*.example.test") ?? "", /wildcard .*DNS-01/);
  assert.match(hostnameProblem("localhost") ?? "", /not a valid DNS hostname/);
  assert.match(hostnameProblem("a_b.example.test") ?? "", /not a valid DNS hostname/);
  assert.match(hostnameProblem("10.0.0.1") ?? "", /not a valid DNS hostname/);
  assert.match(hostnameProblem(`${"a".repeat(64)}.test`) ?? "", /not a valid DNS hostname/);
});

Deno.test("usableCertificate reads a row; a missing key, a foreign key, another name, garbage are refused", () => {
  const read = usableCertificate(APP, NOW);
  assert.ok(read.ok);
  assert.equal(read.cert.serial, new X509Certificate(PEM).serialNumber.toLowerCase());
  assert.match(read.cert.issuer, /CN=app\.example\.test/);
  assert.deepEqual(usableCertificate(undefined, NOW), { ok: false, reason: "no certificate" });
  assert.deepEqual(usableCertificate({ ...APP, key: undefined }, NOW), {
    ok: false,
    reason: "no certificate",
  });
  const foreign = usableCertificate({ ...APP, key: OTHER_KEY }, NOW);
  assert.ok(!foreign.ok && /does not match/.test(foreign.reason));
  const renamed = usableCertificate({ ...APP, name: "other.example.test" }, NOW);
  assert.ok(!renamed.ok && /does not cover "other\.example\.test"/.test(renamed.reason));
  const garbage = usableCertificate({ ...APP, pem: "-----BEGIN CERTIFICATE-----\nAAAA\n" }, NOW);
  assert.ok(!garbage.ok && /unreadable certificate/.test(garbage.reason));
  const late = usableCertificate(APP, new Date("2200-01-01T00:00:00Z"));
  assert.ok(!late.ok && /expired/.test(late.reason));
});

Deno.test("certificateTasks: issue without a usable row, renew when due or asked, never for operator or .internal", () => {
  const read = usableCertificate(APP, NOW);
  assert.ok(read.ok);
  const due = renewalDue(read.cert);
  assert.equal(read.cert.notAfter.getTime() - due.getTime(), 30 * 24 * 3600_000);
  const hostnames = ["app.example.test", "new.example.test", "*.example.test"];
  assert.deepEqual(
    certificateTasks({ hostnames, rows: [APP], now: NOW }).map((t) => `${t.kind} ${t.hostname}`),
    ["issue new.example.test"],
  );
  const late = new Date(due.getTime() + 1000);
  assert.deepEqual(
    certificateTasks({ hostnames: ["app.example.test"], rows: [APP], now: late }).map((t) => t.kind),
    ["renew"],
  );
  const asked = { ...APP, "renew_requested_at": NOW.toISOString(), "renewed_at": "2029-01-01T00:00:00Z" };
  assert.deepEqual(
    certificateTasks({ hostnames: ["app.example.test"], rows: [asked], now: NOW })[0].reason,
    [
      "renewal asked for",
    ][0],
  );
  const done = { ...asked, "renewed_at": "2030-02-01T00:00:00Z" };
  assert.deepEqual(certificateTasks({ hostnames: ["app.example.test"], rows: [done], now: NOW }), []);
  // A .internal name is never sent to a CA: the Cluster's internal root issues it.
  assert.deepEqual(
    certificateTasks({ hostnames: ["db.shop.internal"], rows: [], now: NOW }).map((t) => [t.kind, t.issuer]),
    [["issue", "internal"]],
  );
  const inside = projectCaddy([web("https", "db.shop.internal")], [], { machineId: "m1" });
  assert.match(inside.problems[0].message, /waits for its certificate from the Cluster's internal root/);
  const operator = { name: "op.example.test", source: "operator" };
  assert.deepEqual(certificateTasks({ hostnames: ["op.example.test"], rows: [operator], now: NOW }), []);
});

Deno.test("the asker is the smallest Machine id not Down; retry pauses double with jitter up to an hour", () => {
  assert.equal(certificateAsker(["m3", "m1", "m2"], new Set()), "m1");
  assert.equal(certificateAsker(["m3", "m1", "m2"], new Set(["m1"])), "m2");
  assert.equal(certificateAsker([], new Set()), undefined);
  assert.equal(retryPauseMs(1, 0.5), 30_000);
  assert.equal(retryPauseMs(2, 0.5), 60_000);
  assert.equal(retryPauseMs(1, 0), 22_500);
  assert.equal(retryPauseMs(1, 0.999), 37_485);
  assert.equal(retryPauseMs(30, 0.5), 3600_000);
});

Deno.test("Caddy: an https route with a certificate is served on 443, port 80 redirects, answers on every site", () => {
  const read = usableCertificate(APP, NOW);
  assert.ok(read.ok);
  const challenges = [
    { token: "tok-1_A", "key_authorization": "tok-1_A.thumb", hostname: "app.example.test" },
    { token: "bad token", "key_authorization": "x.y", hostname: "app.example.test" },
    { token: "tok2", "key_authorization": 'x" }\nrespond "owned', hostname: "app.example.test" },
    { token: "old", "key_authorization": "old.t", hostname: "a", "expires_at": "2029-01-01T00:00:00Z" },
  ];
  const waiting = projectCaddy([web("https")], [], { machineId: "m1", challenges, now: NOW });
  assert.deepEqual(waiting.problems.map((p) => p.message), [
    'ingress "app.example.test" is https and waits for its certificate',
  ]);
  assert.deepEqual(waiting.httpsHostnames, ["app.example.test"]);
  assert.deepEqual(waiting.answered, ["tok-1_A"]);
  assert.deepEqual(waiting.tls, []);
  assert.match(
    waiting.base,
    /http:\/\/ \{\n.*\n\trespond \/\.well-known\/acme-challenge\/tok-1_A "tok-1_A\.thumb" 200/,
  );
  assert.doesNotMatch(waiting.base, /owned|bad token|old\.t/);

  const certificates = new Map([["app.example.test", read.cert]]);
  const served = projectCaddy([web("https")], [], { machineId: "m1", challenges, certificates, now: NOW });
  assert.deepEqual(served.problems, []);
  assert.deepEqual(served.tls.map((c) => c.hostname), ["app.example.test"]);
  assert.match(
    served.base,
    /http:\/\/app\.example\.test \{\n\t@https not path \/\.well-known\/acme-challenge\/\*\n\trespond \/\.well-known\/acme-challenge\/tok-1_A "tok-1_A\.thumb" 200\n\tredir @https https:\/\/\{host\}\{uri\} 308\n\}/,
  );
  assert.match(served.base, /https:\/\/app\.example\.test \{\n\treverse_proxy 10\.210\.1\.5:8080/);
  assert.doesNotMatch(served.base, /BEGIN/, "no key or certificate in the Caddyfile");

  const wild = projectCaddy([web("https", "*.example.test")], [], { machineId: "m1" });
  assert.match(wild.problems[0].message, /wildcard "\*\.example\.test" needs a DNS-01 challenge/);
  assert.deepEqual(wild.httpsHostnames, []);
  assert.ok(canonical(served.tls).length > 0);
});

Deno.test("the keeper on the asker obtains, publishes answers as rows, withdraws them, keeps the old cert on failure", async () => {
  const store = openStore({ path: ":memory:", siteId: "m1", clusterId: "c" });
  const lines: string[] = [];
  const seen: string[] = [];
  let fail: string | undefined;
  let issued = PEM;
  const keeper = startCertificateKeeper({
    store,
    settings: () => Promise.resolve({ directoryUrl: "https://ca.test/dir", accountPath: "/nonexistent" }),
    down: () => new Set(),
    confirmation: (token) => ({
      confirmed: store.acmeChallenges.get(token) !== undefined ? ["m1"] : [],
      missing: [],
    }),
    kick: () => {},
    random: () => 0.5,
    log: (line) => lines.push(line),
    async obtain(_settings, hostname, board) {
      await board.publish(hostname, "tok", "tok.thumb");
      seen.push(store.acmeChallenges.get("tok")?.key_authorization ?? "missing");
      await board.withdraw("tok");
      if (fail !== undefined) throw new Error(fail);
      return { pem: issued, key: KEY };
    },
  });
  try {
    keeper.consider(["app.example.test"]);
    assert.ok(await pollUntil(() => store.certificates.get("app.example.test")?.pem !== undefined, SOON));
    const row = store.certificates.get("app.example.test");
    assert.equal(row?.renewed_by, "m1");
    assert.equal(row?.source, "acme");
    assert.deepEqual(seen, ["tok.thumb"]);
    assert.equal(store.acmeChallenges.get("tok"), undefined, "the answer is withdrawn");
    assert.ok(await pollUntil(() => !keeper.state().get("app.example.test")?.running, SOON));

    // A forced renewal that the CA refuses keeps the certificate and records the CA's text.
    const askedAt = new Date(Date.parse(String(row?.renewed_at)) + 1).toISOString();
    store.certificates.put({ ...row!, "renew_requested_at": askedAt });
    fail = "Error creating new order :: too many certificates already issued";
    issued = OTHER_PEM;
    keeper.consider(["app.example.test"]);
    assert.ok(await pollUntil(() => store.certificateErrors.get("app.example.test") !== undefined, SOON));
    const after = store.certificates.get("app.example.test");
    assert.equal(after?.pem, PEM, "the old certificate stays");
    assert.match(String(store.certificateErrors.get("app.example.test")?.error), /too many certificates/);
    assert.match(String(listCertificates(store)[0].last_error), /too many certificates already issued/);
    assert.ok(await pollUntil(() => !keeper.state().get("app.example.test")?.running, SOON));
    const state = keeper.state().get("app.example.test");
    assert.equal(state?.failures, 1);
    assert.ok((state?.retryAtMs ?? 0) > Date.now() + 20_000, "backs off before the next attempt");
    keeper.consider(["app.example.test"]);
    assert.equal(keeper.state().get("app.example.test")?.running, false, "no attempt inside the pause");
    // A new request from the operator is acted on at once, pause or not.
    const asked = store.certificates.get("app.example.test")!;
    await sleep(5);
    store.certificates.put({ ...asked, "renew_requested_at": new Date().toISOString() });
    fail = undefined;
    issued = PEM;
    keeper.consider(["app.example.test"]);
    assert.equal(keeper.state().get("app.example.test")?.running, true, "the new request skips the pause");
    assert.ok(await pollUntil(() => store.certificateErrors.get("app.example.test") === undefined, SOON));
    assert.equal(listCertificates(store)[0].last_error, undefined);
    assert.equal(store.certificates.get("app.example.test")?.renewed_by, "m1");
    assert.ok(lines.some((l) => /cannot renew "app\.example\.test": .*too many/.test(l)));
    assert.ok(!lines.some((l) => l.includes("PRIVATE KEY")), "no key in the log");
  } finally {
    await keeper.stop();
    store.close();
  }
});

Deno.test("a Machine that is not the asker starts nothing", async () => {
  const store = openStore({ path: ":memory:", siteId: "m1", clusterId: "c" });
  let asked = 0;
  const keeper = startCertificateKeeper({
    store,
    settings: () => Promise.reject(new Error("unused")),
    // Its own view counts it Down (it is cut off), so another Machine asks.
    down: () => new Set(["m1"]),
    confirmation: () => ({ confirmed: ["m1"], missing: [] }),
    kick: () => {},
    obtain: () => {
      asked++;
      return Promise.reject(new Error("unused"));
    },
  });
  keeper.consider(["app.example.test"]);
  await keeper.stop();
  store.close();
  assert.equal(asked, 0);
});

Deno.test("two Machines that both obtained a name converge on one winner and both serve it", () => {
  const a = openStore({ path: ":memory:", siteId: "m1", clusterId: "c" });
  const b = openStore({ path: ":memory:", siteId: "m2", clusterId: "c" });
  try {
    // Each believed the other Down (a partition) and wrote its own certificate for the same name.
    const fromA = a.certificates.put({ ...APP, "renewed_by": "m1" });
    const fromB = b.certificates.put({
      name: APP.name,
      pem: APP2_PEM,
      key: APP2_KEY,
      source: "acme",
      "renewed_by": "m2",
    });
    b.applyChanges([fromA]);
    a.applyChanges([fromB]);
    const served = [a, b].map((store) => {
      const certificates = new Map();
      for (const row of store.certificates.list()) {
        const read = usableCertificate(row, NOW);
        if (read.ok) certificates.set(read.cert.hostname, read.cert);
      }
      return projectCaddy([web("https")], [], { machineId: store.siteId, certificates, now: NOW }).tls;
    });
    assert.equal(served[0].length, 1);
    assert.equal(served[0][0].serial, served[1][0].serial, "one winner, served by both");
    assert.equal(a.certificates.get(APP.name)?.renewed_by, b.certificates.get(APP.name)?.renewed_by);
  } finally {
    a.close();
    b.close();
  }
});

Deno.test("a renewal request for a name whose first issuance failed asks for the next attempt now", () => {
  const store = openStore({ path: ":memory:", siteId: "m1", clusterId: "c" });
  try {
    assert.throws(() => requestRenewal(store, "new.example.test"), /No certificate for "new\.example\.test"/);
    store.certificateErrors.put({
      hostname: "new.example.test",
      error: "DNS problem",
      at: NOW.toISOString(),
    });
    const view = requestRenewal(store, "new.example.test", NOW);
    assert.equal(view.servable, false);
    assert.equal(view.last_error, "DNS problem");
    const tasks = certificateTasks({
      hostnames: ["new.example.test"],
      rows: store.certificates.list(),
      now: NOW,
    });
    assert.deepEqual(tasks, [{
      hostname: "new.example.test",
      kind: "issue",
      issuer: "acme",
      reason: "no certificate",
      askedAtMs: NOW.getTime(),
    }]);
  } finally {
    store.close();
  }
});
