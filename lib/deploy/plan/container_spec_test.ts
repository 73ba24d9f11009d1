import assert from "node:assert/strict";
import type { NormalizedProject } from "../compose/types.ts";
import { toCreateBody } from "../docker/spec.ts";
import { hookContainerSpec, serviceContainerSpec, unsupportedFields } from "./container_spec.ts";
import { service } from "./test_fake.ts";

function project(services: NormalizedProject["services"]): NormalizedProject {
  return { name: "shop", context: null, services, volumes: {} };
}

Deno.test("x-pre_deploy.privileged reaches the hook container; unset, the hook inherits the Service's", () => {
  const hook = { command: ["migrate"], environment: {}, privileged: true, timeoutMs: null };
  const web = service("web", { preDeploy: hook });
  const p = project({ web });
  const spec = hookContainerSpec(p, web, "d1");
  assert.equal(spec.privileged, true);
  assert.equal((toCreateBody(spec, "m1").HostConfig as Record<string, unknown>).Privileged, true);
  // The Service itself is not privileged: only its hook is.
  assert.equal(serviceContainerSpec(p, web, { deploymentId: "d1", slot: "1" }).privileged, undefined);
  const inherits = service("web", { privileged: true, preDeploy: { ...hook, privileged: null } });
  assert.equal(hookContainerSpec(project({ web: inherits }), inherits, "d1").privileged, true);
  const off = service("web", { privileged: true, preDeploy: { ...hook, privileged: false } });
  assert.equal(hookContainerSpec(project({ web: off }), off, "d1").privileged, undefined);
  assert.ok(!unsupportedFields(project({ web: inherits }), inherits).some((w) => /privileged/.test(w)));
});

Deno.test("the Preview warns only about a log driver ployz logs cannot read", () => {
  const local = service("web");
  assert.deepEqual(unsupportedFields(project({ web: local }), local), []);
  const none = service("web", {
    logging: { driver: "none", options: {} },
    privileged: true,
    capAdd: ["NET_ADMIN"],
  });
  const warnings = unsupportedFields(project({ web: none }), none);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /"none" driver: "ployz logs" will not see its output/);
});
