/**
 * Shared setup of the tests that run against a real dockerd: the socket from `PLOYZ_DOCKER_SOCKET`, ignored when
 * it is absent unless `CI` is set (then they fail), and a scope per test whose objects carry `ployz.test=<id>` and
 * are removed by that label afterwards.
 *
 * @module
 */

import Docker from "dockerode";
import { type Engine, type EngineOptions, openEngine } from "./engine.ts";
import type { ContainerSpec } from "./spec.ts";
import { pollUntil } from "../../util/mod.ts";

/** The Docker socket the tests use. */
export const SOCKET: string = Deno.env.get("PLOYZ_DOCKER_SOCKET") ?? "/var/run/docker.sock";

/** The image every test container runs; it is on the test machine and never pulled. */
export const IMAGE = "ployz-test/busybox:1";

function socketPresent(): boolean {
  try {
    return Deno.statSync(SOCKET).isSocket === true;
  } catch {
    return false;
  }
}

const RUN = crypto.randomUUID().slice(0, 8);
let counter = 0;

/** One test's objects: an Engine labelling everything with the scope's id, and raw dockerode for the rest. */
export interface Scope {
  id: string;
  machineId: string;
  engine: Engine;
  /** dockerode itself, for objects Ployz must not own. */
  // deno-lint-ignore no-explicit-any
  raw: any;
  /** Opens another Engine with the same test label (another Machine id, other deadlines). */
  engineFor(options: Partial<EngineOptions>): Engine;
  /** A valid spec named and keyed within the scope. */
  spec(suffix: string, overrides?: Partial<ContainerSpec>): ContainerSpec;
}

async function removeByLabel(raw: Scope["raw"], label: string): Promise<void> {
  const filters = { label: [label] };
  for (const c of await raw.listContainers({ all: true, filters })) {
    await raw.getContainer(c.Id).remove({ force: true, v: true }).catch(() => {});
  }
  for (const n of await raw.listNetworks({ filters })) {
    await raw.getNetwork(n.Id).remove().catch(() => {});
  }
  const volumes = await raw.listVolumes({ filters });
  for (const v of volumes.Volumes ?? []) {
    await raw.getVolume(v.Name).remove().catch(() => {});
  }
}

/** Registers a test that needs Docker. */
export function dockerTest(name: string, fn: (scope: Scope) => Promise<void>): void {
  Deno.test({
    name,
    ignore: !socketPresent() && Deno.env.get("CI") === undefined,
    async fn(): Promise<void> {
      if (!socketPresent()) throw new Error(`Docker socket "${SOCKET}" is absent and CI is set`);
      const id = `${RUN}-${++counter}`;
      const machineId = `test-machine-${id}`;
      const raw = new Docker({ socketPath: SOCKET });
      const base: EngineOptions = {
        socketPath: SOCKET,
        machineId,
        network: `ployz-test-${id}`,
        extraLabels: { "ployz.test": id },
      };
      const scope: Scope = {
        id,
        machineId,
        raw,
        engine: openEngine(base),
        engineFor: (options) => openEngine({ ...base, ...options }),
        spec: (suffix, overrides = {}) => ({
          name: `ployz-test-${id}-${suffix}`,
          creationKey: `ck-${id}-${suffix}`,
          project: "proj",
          service: suffix,
          deployment: `dep-${id}`,
          slot: "0",
          image: IMAGE,
          cmd: ["sleep", "300"],
          stopGraceSeconds: 1,
          ...overrides,
        }),
      };
      try {
        await fn(scope);
      } finally {
        await removeByLabel(raw, `ployz.test=${id}`);
      }
    },
  });
}

/** A host port nothing listens on right now. */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** A random /24 in 10.200.0.0/13 for a test network. */
export function testSubnet(): { subnet: string; gateway: string } {
  const a = 200 + Math.floor(Math.random() * 8);
  const b = Math.floor(Math.random() * 256);
  return { subnet: `10.${a}.${b}.0/24`, gateway: `10.${a}.${b}.1` };
}

/** Polls `check` until it returns a value or `ms` passes. */
export async function eventually<T>(ms: number, check: () => Promise<T | undefined>): Promise<T> {
  const value = await pollUntil(check, { timeoutMs: ms, intervalMs: 100 });
  if (value === undefined) throw new Error(`Condition not met within ${ms} ms`);
  return value;
}
