import assert from "node:assert/strict";
import fc from "fast-check";
import { containerSpec } from "../testing/mod.ts";
import { DockerError } from "./errors.ts";
import { LABELS } from "./labels.ts";
import { type ContainerSpec, specDigest, specFromContainer, toCreateBody, validateSpec } from "./spec.ts";

const base: ContainerSpec = {
  name: "web-1",
  creationKey: "ck-1",
  project: "shop",
  service: "web",
  deployment: "d1",
  slot: "0",
  image: "shop/web:1",
};

function refused(spec: ContainerSpec, pattern: RegExp): void {
  assert.throws(() => validateSpec(spec), (e) => {
    assert.ok(e instanceof DockerError);
    assert.equal(e.code, "invalid_argument");
    assert.match(e.message, pattern);
    assert.doesNotMatch(e.message, /\.$/);
    return true;
  });
}

Deno.test("validateSpec refuses what Docker would refuse late or misread", () => {
  validateSpec(base);
  refused({ ...base, name: "../x" }, /"name" must match/);
  refused({ ...base, creationKey: " " }, /"creationKey" must be a non-empty string/);
  refused({ ...base, labels: { [LABELS.machine]: "m2" } }, /label "ployz.machine" is reserved/);
  refused({ ...base, ports: [{ containerPort: 80, hostPort: 70000 }] }, /between 1 and 65535/);
  refused(
    { ...base, ports: [{ containerPort: 80, hostPort: 8080 }, { containerPort: 81, hostPort: 8080 }] },
    /published twice/,
  );
  refused(
    { ...base, mounts: [{ type: "bind", source: "relative", target: "/data" }] },
    /not an absolute path/,
  );
  refused({ ...base, mounts: [{ type: "bind", source: "/srv/../etc", target: "/data" }] }, /contains "\.\."/);
  refused({ ...base, healthcheck: { test: ["curl", "x"] } }, /healthcheck test must be/);
  refused(
    { ...base, dns: { servers: ["resolver.internal"] } },
    /DNS server "resolver.internal" is not an IP address/,
  );
  refused({ ...base, network: { name: "ployz", ipv4Address: "10.0.0.300" } }, /not an IPv4 address/);
});

Deno.test("the spec digest ignores identity and key order, and covers env and reads", () => {
  const d = specDigest(base);
  assert.match(d, /^sha256:[0-9a-f]{64}$/);
  assert.equal(specDigest({ ...base, name: "web-2", creationKey: "ck-2", deployment: "d2", slot: "1" }), d);
  assert.notEqual(specDigest({ ...base, env: { A: "1" } }), specDigest({ ...base, env: { A: "2" } }));
  assert.notEqual(
    specDigest({ ...base, reads: { "/etc/app.env": "sha256:a" } }),
    specDigest({ ...base, reads: { "/etc/app.env": "sha256:b" } }),
  );
  fc.assert(
    fc.property(
      fc.dictionary(fc.string({ minLength: 1 }).filter((k) => !k.includes("=")), fc.string()),
      (env) => {
        const reversed = Object.fromEntries(Object.entries(env).reverse());
        return specDigest({ ...base, env }) === specDigest({ ...base, env: reversed });
      },
    ),
  );
});

Deno.test("toCreateBody maps the spec to Docker's create options", () => {
  const spec: ContainerSpec = {
    ...base,
    cmd: ["serve"],
    entrypoint: ["/bin/app"],
    env: { TOKEN: "s3cret", MODE: "prod" },
    labels: { team: "a" },
    ports: [{ containerPort: 80, hostPort: 8080 }, {
      containerPort: 53,
      hostPort: 5353,
      protocol: "udp",
      hostIp: "127.0.0.1",
    }],
    mounts: [{ type: "volume", source: "shop-data", target: "/data" }, {
      type: "bind",
      source: "/etc/app",
      target: "/cfg",
      readOnly: true,
    }],
    healthcheck: {
      test: ["CMD-SHELL", "true"],
      intervalMs: 2_000,
      timeoutMs: 1_000,
      retries: 3,
      startPeriodMs: 5_000,
    },
    restart: { policy: "on-failure", maxRetries: 4 },
    user: "1000:1000",
    workdir: "/app",
    stopSignal: "SIGINT",
    stopGraceSeconds: 20,
    network: { name: "ployz", aliases: ["web.shop.internal"] },
    dns: { servers: ["10.210.0.1"], search: ["shop.internal"] },
  };
  const body = toCreateBody(spec, "m1", { extraLabels: { extra: "x" } });
  const host = body.HostConfig as Record<string, unknown>;
  assert.equal(body.Image, "shop/web:1");
  assert.deepEqual(body.Cmd, ["serve"]);
  assert.deepEqual(body.Entrypoint, ["/bin/app"]);
  assert.deepEqual(body.Env, ["TOKEN=s3cret", "MODE=prod"]);
  assert.deepEqual(body.ExposedPorts, { "80/tcp": {}, "53/udp": {} });
  assert.deepEqual(host.PortBindings, {
    "80/tcp": [{ HostIp: "", HostPort: "8080" }],
    "53/udp": [{ HostIp: "127.0.0.1", HostPort: "5353" }],
  });
  assert.deepEqual(host.Mounts, [
    { Type: "volume", Source: "shop-data", Target: "/data", ReadOnly: false },
    { Type: "bind", Source: "/etc/app", Target: "/cfg", ReadOnly: true },
  ]);
  assert.deepEqual(body.Healthcheck, {
    Test: ["CMD-SHELL", "true"],
    Interval: 2e9,
    Timeout: 1e9,
    Retries: 3,
    StartPeriod: 5e9,
  });
  assert.deepEqual(host.RestartPolicy, { Name: "on-failure", MaximumRetryCount: 4 });
  assert.deepEqual(host.LogConfig, {
    Type: "local",
    Config: { "max-size": "20m", "max-file": "5", compress: "false" },
  });
  assert.equal(host.NetworkMode, "ployz");
  assert.deepEqual(host.Dns, ["10.210.0.1"]);
  assert.deepEqual(host.DnsSearch, ["shop.internal"]);
  assert.deepEqual(body.NetworkingConfig, { EndpointsConfig: { ployz: { Aliases: ["web.shop.internal"] } } });
  assert.equal(body.User, "1000:1000");
  assert.equal(body.WorkingDir, "/app");
  assert.equal(body.StopSignal, "SIGINT");
  assert.equal(body.StopTimeout, 20);
  const labels = body.Labels as Record<string, string>;
  assert.equal(labels[LABELS.managed], "1");
  assert.equal(labels[LABELS.machine], "m1");
  assert.equal(labels[LABELS.specDigest], specDigest(spec));
  assert.equal(labels.extra, "x");
  assert.equal(labels.team, "a");
  assert.ok(!labels[LABELS.spec].includes("s3cret"), "the spec label carries no env value");
  assert.deepEqual(toCreateBody({ ...base, healthcheck: { disabled: true } }, "m1").Healthcheck, {
    Test: ["NONE"],
  });
});

Deno.test("specFromContainer restores env values from the container's environment", () => {
  const spec: ContainerSpec = { ...base, env: { TOKEN: "a=b=c", EMPTY: "" } };
  const labels = toCreateBody(spec, "m1").Labels as Record<string, string>;
  assert.deepEqual(specFromContainer(labels, ["PATH=/bin", "TOKEN=a=b=c", "EMPTY="]), spec);
  assert.equal(specFromContainer({}, []), undefined);
});

Deno.test("toCreateBody applies the Machine's resolver outside the labels, unless the spec names its own", () => {
  const spec = containerSpec({ deployment: "d1" });
  const dns = { servers: ["10.210.3.1"], search: ["shop.internal"], options: ["ndots:1"] };
  const host = (b: Record<string, unknown>) => b.HostConfig as Record<string, unknown>;
  const plain = toCreateBody(spec, "m1");
  const served = toCreateBody(spec, "m1", { dns });
  assert.equal(host(plain).Dns, undefined);
  assert.deepEqual(host(served).Dns, ["10.210.3.1"]);
  assert.deepEqual(host(served).DnsSearch, ["shop.internal"]);
  assert.deepEqual(host(served).DnsOptions, ["ndots:1"]);
  assert.deepEqual(served.Labels, plain.Labels, "the resolver is not part of the spec digest or labels");
  const own = toCreateBody({ ...spec, dns: { servers: ["192.0.2.53"] } }, "m1", { dns });
  assert.deepEqual(host(own).Dns, ["192.0.2.53"]);
});

Deno.test("toCreateBody() binds a Provisioned Volume's copy in the Pool and never makes it a Docker volume", () => {
  const spec: ContainerSpec = {
    ...base,
    mounts: [{ type: "volume", source: "shop_data", target: "/data", provisionedBytes: 64 * 2 ** 20 }],
  };
  validateSpec(spec);
  const host = toCreateBody(spec, "m1", {
    volumePaths: { "shop_data": "/var/lib/ployz/pool/volumes/shop_data" },
  })
    .HostConfig as Record<string, unknown>;
  assert.deepEqual(host.Mounts, [
    { Type: "bind", Source: "/var/lib/ployz/pool/volumes/shop_data", Target: "/data", ReadOnly: false },
  ]);
  // Without the Pool's path it is refused rather than made a Docker volume.
  assert.throws(() => toCreateBody(spec, "m1"), (e: DockerError) => e.message.includes("shop_data"));
  for (const bad of [-1, 1.5]) {
    assert.throws(() => validateSpec({ ...spec, mounts: [{ ...spec.mounts![0], provisionedBytes: bad }] }));
  }
  // 0: x-volumes named no size; the Machine's default Volume size applies.
  validateSpec({ ...spec, mounts: [{ ...spec.mounts![0], provisionedBytes: 0 }] });
  assert.throws(() =>
    validateSpec({ ...spec, mounts: [{ type: "tmpfs", source: "", target: "/t", provisionedBytes: 1 }] })
  );
});
