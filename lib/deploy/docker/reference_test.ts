import assert from "node:assert/strict";
import { digestFor, parseImageRef, pinRef, registryHost, registryKey, repositoryOf } from "./reference.ts";
import { foldPullLine, registryFailureCode } from "./images.ts";

const D = `sha256:${"a".repeat(64)}`;

Deno.test("parseImageRef() reads host, path, tag and digest the way Docker does", () => {
  const cases: [string, string, string | undefined, string | undefined][] = [
    ["nginx", "docker.io/library/nginx", undefined, undefined],
    ["nginx:1.27", "docker.io/library/nginx", "1.27", undefined],
    ["bitnami/redis:7", "docker.io/bitnami/redis", "7", undefined],
    ["reg.example:5000/team/app:v2", "reg.example:5000/team/app", "v2", undefined],
    ["localhost/app", "localhost/app", undefined, undefined],
    [`192.0.2.1:5000/shop/web:1@${D}`, "192.0.2.1:5000/shop/web", "1", D],
    [`index.docker.io/nginx@${D}`, "docker.io/library/nginx", undefined, D],
  ];
  for (const [text, repo, tag, digest] of cases) {
    const ref = parseImageRef(text);
    assert.ok(typeof ref !== "string", `${text}: ${ref}`);
    assert.equal(repositoryOf(ref), repo, text);
    assert.equal(ref.tag, tag, text);
    assert.equal(ref.digest, digest, text);
  }
});

Deno.test("parseImageRef() says why a reference is malformed", () => {
  for (
    const [text, why] of [
      ["", /empty/],
      ["Nginx", /lowercase/],
      ["nginx:", /tag ""/],
      ["nginx@sha256:abc", /64 lowercase hex/],
      ["a//b", /lowercase/],
      ["reg.example:port/app", /registry host/],
      [" nginx", /spaces/],
      [`${"a".repeat(256)}`, /longer than 255/],
    ] as const
  ) {
    const result = parseImageRef(text);
    assert.equal(typeof result, "string", text);
    assert.match(result as string, why, text);
  }
});

Deno.test("pinRef() keeps the tag for people and adds the digest; digestFor() reads the image's own repository", () => {
  const ref = parseImageRef("reg.example:5000/app:1");
  assert.ok(typeof ref !== "string");
  assert.equal(pinRef(ref, D), `reg.example:5000/app:1@${D}`);
  const other = `sha256:${"b".repeat(64)}`;
  assert.equal(digestFor(ref, [`reg.example:5000/other@${other}`, `reg.example:5000/app@${D}`]), D);
  assert.equal(digestFor(ref, [`reg.example:5000/other@${other}`]), undefined);
  const hub = parseImageRef("nginx:1");
  assert.ok(typeof hub !== "string");
  assert.equal(digestFor(hub, [`nginx@${D}`]), D);
  assert.equal(registryKey(hub), "https://index.docker.io/v1/");
  assert.equal(registryHost("https://index.docker.io/v1/"), "docker.io");
  assert.equal(registryHost("https://reg.example:5000"), "reg.example:5000");
});

Deno.test("foldPullLine() counts layers and bytes; registryFailureCode() reads the registry's refusal", () => {
  const state = new Map();
  foldPullLine(state, { status: "Pulling from shop/web", id: "1" });
  foldPullLine(state, { status: "Already exists", id: "aaaaaaaaaaaa" });
  foldPullLine(state, {
    status: "Downloading",
    id: "bbbbbbbbbbbb",
    progressDetail: { current: 10, total: 40 },
  });
  let p = foldPullLine(state, {
    status: "Downloading",
    id: "bbbbbbbbbbbb",
    progressDetail: { current: 30, total: 40 },
  });
  assert.deepEqual(p, { layers: 2, layersDone: 1, bytes: 30, bytesTotal: 40 });
  p = foldPullLine(state, { status: "Pull complete", id: "bbbbbbbbbbbb" });
  assert.deepEqual(p, { layers: 2, layersDone: 2, bytes: 40, bytesTotal: 40 });

  assert.equal(registryFailureCode("unauthorized: authentication required"), "unauthenticated");
  assert.equal(
    registryFailureCode("Head https://r/v2/x/manifests/1: no basic auth credentials"),
    "unauthenticated",
  );
  assert.equal(registryFailureCode("manifest unknown: manifest unknown"), "not_found");
  assert.equal(
    registryFailureCode('Get "https://r/v2/": dial tcp r:5000: connect: connection refused'),
    "unavailable",
  );
  assert.equal(registryFailureCode("x509: certificate signed by unknown authority"), "unavailable");
  assert.equal(registryFailureCode("unexpected status code 401"), "unauthenticated");
  // A port that contains 401 is an address, not a status.
  assert.equal(
    registryFailureCode(
      'Get "http://192.0.2.1:25401/v2/x/blobs/sha256:f4": dial tcp 192.0.2.1:25401: connect: connection refused',
    ),
    "unavailable",
  );
  assert.equal(registryFailureCode('Get "http://10.0.0.1:401/v2/": connection refused'), "unavailable");
});
