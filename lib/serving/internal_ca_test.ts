import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { openStore, type Store } from "../store/mod.ts";
import { pollUntil } from "../util/mod.ts";
import {
  addInternalCertificate,
  CertificateError,
  clusterRootView,
  listCertificates,
} from "./certificate_admin.ts";
import { startCertificateKeeper } from "./certificate_keeper.ts";
import { certificateTasks, issuedByRoot, usableCertificate } from "./certificates.ts";
import {
  ensureClusterRoot,
  INTERNAL_ROOT_SETTING,
  issueInternalCertificate,
  readClusterRoot,
} from "./internal_ca.ts";

// Self-signed test material made with openssl (see certificates_test.ts); a certificate no Cluster root signed.
const dir = new URL("./testdata/", import.meta.url);
const OTHER_PEM = Deno.readTextFileSync(new URL("app.example.test.pem", dir));
const OTHER_KEY = Deno.readTextFileSync(new URL("app.example.test.key", dir));

function withStore(fn: (store: Store) => Promise<void>): () => Promise<void> {
  return async () => {
    const store = openStore({ path: ":memory:", siteId: "m1", clusterId: "c" });
    try {
      await fn(store);
    } finally {
      store.close();
    }
  };
}

Deno.test(
  "one Cluster root per store: made once (also by two tasks at once), a self-signed CA whose key matches",
  withStore(async (store) => {
    assert.equal(readClusterRoot(store.cluster.get(INTERNAL_ROOT_SETTING), new Date()).ok, false);
    const [a, b] = await Promise.all([ensureClusterRoot(store), ensureClusterRoot(store)]);
    assert.equal(a.fingerprint, b.fingerprint);
    assert.equal((await ensureClusterRoot(store)).fingerprint, a.fingerprint);
    const cert = new X509Certificate(a.pem);
    assert.ok(cert.ca);
    assert.match(cert.subject, /CN=ployz internal root [0-9a-f]{8}/);
    assert.equal(a.createdBy, "m1");
    assert.ok(a.notAfter.getTime() > Date.now() + 9 * 365 * 24 * 3600_000);
  }),
);

Deno.test(
  "an internal leaf covers its name, matches its key and is signed by the Cluster root",
  withStore(async (store) => {
    const leaf = await issueInternalCertificate(store, "app.internal");
    const read = usableCertificate({ name: "app.internal", pem: leaf.pem, key: leaf.key }, new Date());
    assert.ok(read.ok, read.ok ? "" : read.reason);
    assert.ok(issuedByRoot(leaf.pem, leaf.root.pem));
    assert.ok(!issuedByRoot(OTHER_PEM, leaf.root.pem));
    assert.ok(!issuedByRoot("garbage", leaf.root.pem));
    const x509 = new X509Certificate(leaf.pem);
    assert.equal(x509.ca, false);
    assert.equal(x509.checkHost("other.internal"), undefined);
    assert.match(read.cert.issuer, /ployz internal root/);
    // 90 days, valid from a little before now.
    const life = read.cert.notAfter.getTime() - Date.now();
    assert.ok(life > 89 * 24 * 3600_000 && life <= 90 * 24 * 3600_000, String(life));
    assert.ok(read.cert.notBefore.getTime() < Date.now() - 30 * 60_000);
    const second = await issueInternalCertificate(store, "app.internal");
    assert.notEqual(new X509Certificate(second.pem).serialNumber, x509.serialNumber);
  }),
);

Deno.test("a root row from another Machine is untrusted: garbage, a non-CA, a foreign key are refused", async () => {
  const store = openStore({ path: ":memory:", siteId: "m1", clusterId: "c" });
  try {
    const now = new Date();
    const leaf = await issueInternalCertificate(store, "app.internal");
    const reason = (value: unknown): string => {
      const read = readClusterRoot({ name: INTERNAL_ROOT_SETTING, value }, now);
      assert.ok(!read.ok);
      return read.reason;
    };
    assert.match(reason(undefined), /holds no certificate and key/);
    assert.match(reason({ pem: 1, key: "k" }), /holds no certificate and key/);
    assert.match(reason({ pem: "x".repeat(70_000), key: "k" }), /holds no certificate and key/);
    assert.match(reason({ pem: "garbage", key: "garbage" }), /unreadable Cluster root/);
    assert.match(reason({ pem: leaf.pem, key: leaf.key }), /not a self-signed CA certificate/);
    assert.match(reason({ pem: leaf.root.pem, key: leaf.key }), /key does not match/);
    // Any self-signed CA certificate with its key can sign: the row's shape, not its maker, is checked.
    const selfSigned = readClusterRoot({
      name: INTERNAL_ROOT_SETTING,
      value: { pem: OTHER_PEM, key: OTHER_KEY },
    }, now);
    assert.equal(selfSigned.ok, true);
    const expired = readClusterRoot(
      { name: INTERNAL_ROOT_SETTING, value: { pem: leaf.root.pem, key: leaf.root.key } },
      new Date(Date.now() + 11 * 365 * 24 * 3600_000),
    );
    assert.ok(!expired.ok && /expired at/.test(expired.reason));
  } finally {
    store.close();
  }
});

Deno.test("certificateTasks: internal names are issued by the root, and again when another root signed them", async () => {
  const store = openStore({ path: ":memory:", siteId: "m1", clusterId: "c" });
  try {
    const now = new Date();
    const leaf = await issueInternalCertificate(store, "app.internal");
    const row = { name: "app.internal", pem: leaf.pem, key: leaf.key, source: "internal" };
    const tasks = (rows: Record<string, unknown>[], hostnames: string[], rootPem?: string) =>
      certificateTasks({ hostnames, rows: rows as never, now, rootPem }).map((t) =>
        `${t.hostname} ${t.kind} ${t.issuer}: ${t.reason}`
      );
    assert.deepEqual(tasks([], ["app.internal"]), ["app.internal issue internal: no certificate"]);
    assert.deepEqual(tasks([row], ["app.internal"], leaf.root.pem), []);
    // A root not known here yet is no reason to issue again.
    assert.deepEqual(tasks([row], ["app.internal"]), []);
    // `ployz cert renew` works for an internal name as for an ACME one.
    const asked = { ...row, "renewed_at": "2020-01-01T00:00:00Z", "renew_requested_at": now.toISOString() };
    assert.deepEqual(tasks([asked], ["app.internal"], leaf.root.pem), [
      "app.internal renew internal: renewal asked for",
    ]);
    const elsewhere = openStore({ path: ":memory:", siteId: "m2", clusterId: "c" });
    const other = await issueInternalCertificate(elsewhere, "app.internal");
    elsewhere.close();
    assert.deepEqual(tasks([row], ["app.internal"], other.root.pem), [
      "app.internal renew internal: not signed by the Cluster's internal root",
    ]);
    // An opted-in name keeps the certificate it had until the root's arrives; an operator's is never touched.
    const opted = { name: "app.example.test", pem: OTHER_PEM, key: OTHER_KEY, source: "internal" };
    assert.deepEqual(tasks([opted], ["app.example.test"], leaf.root.pem), [
      "app.example.test renew internal: not signed by the Cluster's internal root",
    ]);
    const operator = { name: "db.internal", pem: OTHER_PEM, key: OTHER_KEY, source: "operator" };
    assert.deepEqual(tasks([operator], ["db.internal"], leaf.root.pem), []);
  } finally {
    store.close();
  }
});

Deno.test(
  "cert add --internal issues at once and cert root shows the root, never a key; bad names are refused",
  withStore(async (store) => {
    assert.throws(
      () => clusterRootView(store),
      (e) =>
        e instanceof CertificateError && e.code === "not_found" && /no internal root yet/.test(e.message),
    );
    const view = await addInternalCertificate(store, "intra.example.test");
    assert.equal(view.source, "internal");
    assert.equal(view.servable, true);
    assert.match(view.issuer ?? "", /ployz internal root/);
    const root = clusterRootView(store);
    assert.match(root.pem, /^-----BEGIN CERTIFICATE-----/);
    assert.equal(root.fingerprint, new X509Certificate(root.pem).fingerprint256);
    assert.ok(issuedByRoot(String(store.certificates.get("intra.example.test")?.pem), root.pem));
    for (const shown of [JSON.stringify(root), JSON.stringify(listCertificates(store))]) {
      assert.doesNotMatch(shown, /PRIVATE KEY/);
    }
    for (const bad of ["*.example.test", "Not A Name", "localhost"]) {
      await assert.rejects(
        addInternalCertificate(store, bad),
        (e) =>
          e instanceof CertificateError && e.code === "invalid_argument" &&
          /Invalid hostname/.test(e.message),
      );
    }
  }),
);

Deno.test(
  "the keeper issues a .internal name from the Cluster root without asking any CA",
  withStore(async (store) => {
    const lines: string[] = [];
    const keeper = startCertificateKeeper({
      store,
      settings: () => Promise.reject(new Error("no CA settings are read")),
      down: () => new Set(),
      confirmation: () => ({ confirmed: [], missing: [] }),
      kick: () => {},
      log: (line) => lines.push(line),
      obtain: () => Promise.reject(new Error("no CA is asked")),
    });
    try {
      keeper.consider(["db.shop.internal"]);
      const row = await pollUntil(() => store.certificates.get("db.shop.internal"), {
        timeoutMs: 10_000,
        intervalMs: 10,
      });
      assert.equal(row?.source, "internal");
      assert.equal(row?.renewed_by, "m1");
      const root = clusterRootView(store);
      assert.ok(issuedByRoot(String(row?.pem), root.pem));
      assert.match(
        lines.join("\n"),
        /certificates: issued "db\.shop\.internal" from the Cluster's internal root/,
      );
      assert.doesNotMatch(lines.join("\n"), /obtained|cannot/);
    } finally {
      await keeper.stop();
    }
  }),
);
