import { deepEqual, equal, match } from "node:assert/strict";
import type { Container } from "../store/mod.ts";
import type { CaddyAdmin } from "./caddy_admin.ts";
import type { CaddyProjection } from "./caddy_projection.ts";
import { INGRESS_PROJECT, INGRESS_SERVICE } from "./ingress_spec.ts";
import { loadLocalProxy, localProxy, NOTHING_LOADED, proxyStarting } from "./ingress_load.ts";

function proxyRow(machine: string, state: string, id = `proxy-${machine}-${state}`): Container {
  return {
    id,
    "machine_id": machine,
    project: INGRESS_PROJECT,
    service: INGRESS_SERVICE,
    deployment: "d",
    name: id,
    image: "caddy",
    state,
    "started_at": "2026-01-01T00:00:00Z",
  };
}
const web: Container = {
  id: "web-1",
  "machine_id": "m1",
  project: "shop",
  service: "web",
  deployment: "d",
  name: "web-1",
  image: "i",
  state: "running",
};

function projection(upstream: string): CaddyProjection {
  return {
    base: `:80 {\n  reverse_proxy ${upstream}\n}\n`,
    fragments: [],
    problems: [],
    upstreams: [upstream],
    pointers: {},
    tls: [],
    answered: ["token-1"],
    httpsHostnames: [],
  } as CaddyProjection;
}

/** A Caddy admin that adapts a Caddyfile to one dial per `reverse_proxy` line and keeps what it was loaded with. */
function fakeAdmin(
  options: { readBack?: (loaded: unknown) => unknown } = {},
): CaddyAdmin & { loads: number } {
  let loaded: unknown = {};
  const admin = {
    loads: 0,
    adapt(caddyfile: string): Promise<Record<string, unknown>> {
      const dials = [...caddyfile.matchAll(/reverse_proxy (\S+)/g)].map(([, dial]) => ({ dial }));
      return Promise.resolve({ apps: { http: { upstreams: dials } } });
    },
    load(config: Record<string, unknown>): Promise<void> {
      admin.loads++;
      loaded = config;
      return Promise.resolve();
    },
    config(): Promise<unknown> {
      return Promise.resolve(options.readBack?.(loaded) ?? loaded);
    },
    close(): void {},
  };
  return admin;
}

const quiet = { signal: new AbortController().signal, log: () => {} };

Deno.test("localProxy and proxyStarting: only this Machine's Ingress Proxy counts, a running one first", () => {
  equal(localProxy([web, proxyRow("m2", "running")], "m1"), undefined);
  equal(localProxy([web, proxyRow("m1", "exited"), proxyRow("m1", "running")], "m1")?.state, "running");
  equal(proxyStarting([web, proxyRow("m1", "created")], "m1"), true);
  equal(proxyStarting([web, proxyRow("m1", "restarting")], "m1"), true);
  equal(proxyStarting([proxyRow("m1", "created"), proxyRow("m1", "running")], "m1"), false);
  equal(proxyStarting([proxyRow("m2", "created"), proxyRow("m1", "exited")], "m1"), false);
});

Deno.test("loadLocalProxy: no proxy here forgets what was loaded", async () => {
  const admin = fakeAdmin();
  const before = {
    key: "k",
    dials: ["10.0.0.2:80"],
    answered: new Set(["t"]),
    ingress: { proxyId: "p", routed: [] },
  };
  const load = await loadLocalProxy(admin, before, {
    proxy: undefined,
    projection: projection("a:1"),
    routed: [],
  }, quiet);
  equal(load.caddy, "absent");
  equal(load.loaded, NOTHING_LOADED);
  equal(admin.loads, 0);
});

Deno.test("loadLocalProxy: loads once, then the same proxy and projection load nothing", async () => {
  const admin = fakeAdmin();
  const proxy = proxyRow("m1", "running");
  const pass = { proxy, projection: projection("10.0.0.2:80"), routed: ["shop/web"] };
  const first = await loadLocalProxy(admin, NOTHING_LOADED, pass, quiet);
  equal(first.caddy, "loaded");
  deepEqual(first.loaded.dials, ["10.0.0.2:80"]);
  deepEqual([...first.loaded.answered], ["token-1"]);
  deepEqual(first.loaded.ingress, { proxyId: proxy.id, routed: ["shop/web"] });
  const again = await loadLocalProxy(admin, first.loaded, pass, quiet);
  equal(again.caddy, "unchanged");
  equal(again.loaded, first.loaded);
  equal(admin.loads, 1);
  // A restarted proxy (a new start time) holds nothing: the same projection is loaded again.
  const restarted = { ...pass, proxy: { ...proxy, "started_at": "2026-01-01T00:05:00Z" } };
  equal((await loadLocalProxy(admin, first.loaded, restarted, quiet)).caddy, "loaded");
  equal(admin.loads, 2);
});

Deno.test("loadLocalProxy: a failed load keeps the dials confirmed before and loads again next pass", async () => {
  const proxy = proxyRow("m1", "running");
  const good = await loadLocalProxy(fakeAdmin(), NOTHING_LOADED, {
    proxy,
    projection: projection("10.0.0.2:80"),
    routed: [],
  }, quiet);
  // Caddy reads back something else than it was sent; an aborted pass tries once.
  const stopped = new AbortController();
  stopped.abort();
  const failed = await loadLocalProxy(
    fakeAdmin({ readBack: () => ({ other: true }) }),
    good.loaded,
    { proxy, projection: projection("10.0.0.3:80"), routed: [] },
    { signal: stopped.signal, log: () => {} },
  );
  equal(failed.caddy, "failed");
  match(failed.error ?? "", /^Caddy load failed after 1 attempts: Caddy's loaded config differs/);
  deepEqual(failed.loaded.dials, ["10.0.0.2:80"]);
  equal(failed.loaded.key, undefined);
});
