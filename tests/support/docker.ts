// Tests against the real dockerd: the socket and the test image, a scope per test whose objects carry
// `ployz.test=<id>` and are removed by that label afterwards, and free ports and subnets for test networks.
import Docker from "dockerode";
import {
  type ContainerSpec,
  type Engine,
  type EngineOptions,
  LABELS,
  openEngine,
} from "../../lib/deploy/mod.ts";
import { DOCKER_SOCKET, needs } from "./needs.ts";

export { DOCKER_SOCKET, isSocket } from "./needs.ts";

/** `DOCKER_HOST` for {@link DOCKER_SOCKET}, for the docker CLI. */
export const DOCKER_ENV: Record<string, string> = { DOCKER_HOST: `unix://${DOCKER_SOCKET}` };

/** The image every test container runs; it is on the test machine and never pulled. */
export const IMAGE = "ployz-test/busybox:1";

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

/** Removes every container, network and volume carrying `label` (`key=value`). */
export async function removeByLabel(raw: Docker, label: string): Promise<void> {
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

/** Registers a test that needs Docker, run inside a fresh {@link Scope}. */
export function dockerTest(name: string, fn: (scope: Scope) => Promise<void>): void {
  Deno.test(needs(["docker"], {
    name,
    async fn(): Promise<void> {
      const id = `${RUN}-${++counter}`;
      const machineId = `test-machine-${id}`;
      const raw = new Docker({ socketPath: DOCKER_SOCKET });
      const base: EngineOptions = {
        socketPath: DOCKER_SOCKET,
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
  }));
}

/** Where the engine keeps container data (its log files among them): `PLOYZ_DOCKER_ROOT`, else what it reports. */
export async function dockerRootOf(raw: Docker): Promise<string> {
  return Deno.env.get("PLOYZ_DOCKER_ROOT") ?? String((await raw.info()).DockerRootDir);
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

/** A random /24 under `prefix` (e.g. `10.214`), for a Machine subnet unlikely to collide with another test's. */
export function randomSubnet(prefix: string): string {
  return `${prefix}.${1 + Math.floor(Math.random() * 254)}.0/24`;
}

/** `docker run` options labelling a container as Ployz's own, on Machine `machineId`, of Service `project/service`. */
export function ownedLabelArgs(machineId: string, project: string, service: string): string[] {
  const labels = {
    [LABELS.managed]: "1",
    [LABELS.machine]: machineId,
    [LABELS.project]: project,
    [LABELS.service]: service,
  };
  return Object.entries(labels).flatMap(([key, value]) => ["--label", `${key}=${value}`]);
}
