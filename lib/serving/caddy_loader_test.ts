import { deepEqual, equal, match } from "node:assert/strict";
import { type CaddyAdmin, CaddyAdminError } from "./caddy_admin.ts";
import { loadCaddy } from "./caddy_loader.ts";
import type { CaddyProjection } from "./caddy_projection.ts";

const PROJECTION: CaddyProjection = {
  base: ":80 {\n}",
  fragments: [{ service: "shop/web", text: "# good" }, { service: "shop/bad", text: "# bad" }],
  problems: [],
  upstreams: [],
  pointers: {},
  tls: [],
  httpsHostnames: [],
  answered: [],
};

/** An admin that adapts any Caddyfile, except that a text holding `# bad` meets `refuse`. */
function fakeAdmin(refuse: CaddyAdminError): CaddyAdmin {
  let loaded: unknown;
  return {
    adapt(caddyfile: string): Promise<Record<string, unknown>> {
      if (caddyfile.includes("# bad")) return Promise.reject(refuse);
      return Promise.resolve({ apps: { caddyfile } });
    },
    load(config: Record<string, unknown>): Promise<void> {
      loaded = config;
      return Promise.resolve();
    },
    config: () => Promise.resolve(loaded),
    close(): void {},
  };
}

Deno.test("a fragment Caddy refuses to adapt is skipped and reported; the rest loads", async () => {
  const report = await loadCaddy(
    fakeAdmin(new CaddyAdminError("Caddy admin refused POST /adapt: 400", 400)),
    PROJECTION,
  );
  equal(report.loaded, true, report.error ?? "");
  deepEqual(report.skipped, [{
    service: "shop/bad",
    message: "x-caddy: Caddy admin refused POST /adapt: 400",
  }]);
  match(String((report.config?.apps as { caddyfile: string }).caddyfile), /# good/);
});

Deno.test("a silent admin socket while a fragment adapts fails the load instead of skipping the fragment", async () => {
  const silent = new CaddyAdminError("Caddy admin did not answer POST /adapt: connection refused", 0);
  const report = await loadCaddy(fakeAdmin(silent), PROJECTION, { attempts: 2, backoffMs: 1 });
  equal(report.loaded, false);
  equal(report.attempts, 2);
  deepEqual(report.skipped, []);
  equal(report.error, silent.message);
});
