/**
 * From a normalized Service to the `ContainerSpec` a Machine creates. Every container joins the Machine's
 * `ployz` bridge; its ingress `x-ports` and `x-caddy` ride as serving labels. Fields the Docker adapter does not carry yet are reported as warnings by
 * {@linkcode unsupportedFields}, never dropped silently.
 *
 * @module
 */

import { servingLabels } from "../compose/serving_labels.ts";
import type { NormalizedProject, NormalizedService } from "../compose/types.ts";
import type {
  ContainerSpec,
  HealthcheckSpec,
  MountSpec,
  PortSpec,
  ResourcesSpec,
  RestartSpec,
} from "../docker/spec.ts";
import { containerName, creationKey } from "./keys.ts";

/** The Docker bridge network every Ployz container joins. */
export const NETWORK = "ployz";

function restartSpec(restart: string): RestartSpec {
  const [policy, retries] = restart.split(":", 2);
  if (policy === "on-failure") {
    return retries === undefined ? { policy } : { policy, maxRetries: Number(retries) };
  }
  if (policy === "always" || policy === "unless-stopped") return { policy };
  return { policy: "no" };
}

function healthcheckSpec(service: NormalizedService): HealthcheckSpec | undefined {
  const check = service.healthcheck;
  if (check.kind === "image") return undefined;
  if (check.kind === "disabled") return { disabled: true };
  const positive = (ms: number | null): number | undefined => ms !== null && ms > 0 ? ms : undefined;
  return {
    test: check.test,
    intervalMs: positive(check.intervalMs),
    timeoutMs: positive(check.timeoutMs),
    retries: check.retries !== null && check.retries > 0 ? check.retries : undefined,
    startPeriodMs: positive(check.startPeriodMs),
  };
}

function ports(service: NormalizedService): PortSpec[] | undefined {
  const out: PortSpec[] = [];
  for (const p of service.ports) {
    if (p.kind !== "host") continue;
    const port: PortSpec = {
      containerPort: p.containerPort,
      hostPort: p.publishedPort,
      protocol: p.protocol,
    };
    if (p.hostIp !== null && !p.hostIp.includes("/")) port.hostIp = p.hostIp;
    out.push(port);
  }
  return out.length === 0 ? undefined : out;
}

function mounts(service: NormalizedService, project: NormalizedProject): MountSpec[] | undefined {
  const out: MountSpec[] = [];
  for (const m of service.mounts) {
    if (m.type === "volume") {
      // An anonymous volume (no source) is Docker's own: one per container, removed with it.
      const source = m.source === "" ? "" : project.volumes[m.source]?.dockerName ?? m.source;
      // A size from x-volumes makes it a Provisioned Volume: the Machine makes it in its Pool, not in Docker.
      const provisioned = m.source === "" ? null : project.volumes[m.source]?.sizeBytes ?? null;
      out.push({
        type: "volume",
        source,
        target: m.target,
        readOnly: m.readOnly || undefined,
        ...(provisioned === null ? {} : { provisionedBytes: provisioned }),
      });
    } else if (m.type === "bind") {
      out.push({ type: "bind", source: m.source, target: m.target, readOnly: m.readOnly || undefined });
    } else {
      out.push({
        type: "tmpfs",
        source: "",
        target: m.target,
        readOnly: m.readOnly || undefined,
        sizeBytes: m.sizeBytes ?? undefined,
        mode: m.mode ?? undefined,
      });
    }
  }
  return out.length === 0 ? undefined : out;
}

function resources(service: NormalizedService): ResourcesSpec | undefined {
  const r = service.resources;
  const spec: ResourcesSpec = {
    nanoCpus: r.nanoCpus ?? undefined,
    memoryBytes: r.memoryBytes ?? undefined,
    memoryReservationBytes: r.memoryReservationBytes ?? undefined,
    shmSizeBytes: r.shmSizeBytes ?? undefined,
    pidsLimit: service.pidsLimit ?? undefined,
    ulimits: Object.keys(r.ulimits).length === 0 ? undefined : { ...r.ulimits },
  };
  return Object.values(spec).every((value) => value === undefined) ? undefined : spec;
}

function record(value: Record<string, string>): Record<string, string> | undefined {
  return Object.keys(value).length === 0 ? undefined : { ...value };
}

function nonEmpty<T>(value: T[] | null): T[] | undefined {
  return value === null || value.length === 0 ? undefined : value;
}

/** Where one container goes: its Deployment, slot and (for a Global Service) Machine. */
export interface SlotIdentity {
  /** The Deployment creating it. */
  deploymentId: string;
  /** `1`, `2`, … or `hook`. */
  slot: string;
  /** The Machine, for keys of Global slots; empty otherwise. */
  machineId?: string;
  /** The Machine's bridge network; default {@linkcode NETWORK}. */
  network?: string;
}

/** The spec of slot `slot` of `service`, identity included. */
export function serviceContainerSpec(
  project: NormalizedProject,
  service: NormalizedService,
  identity: SlotIdentity,
): ContainerSpec {
  // Ingress x-ports and x-caddy ride as labels, so every Machine's Ingress Proxy can route to the container.
  const labels = { ...service.labels, ...servingLabels(service) };
  const spec: ContainerSpec = {
    name: containerName(project.name, service.name, identity.slot, identity.deploymentId),
    creationKey: creationKey(identity.deploymentId, service.name, identity.slot, identity.machineId),
    project: project.name,
    service: service.name,
    deployment: identity.deploymentId,
    slot: identity.slot,
    image: service.image,
    cmd: nonEmpty(service.command),
    entrypoint: nonEmpty(service.entrypoint),
    env: Object.keys(service.environment).length === 0 ? undefined : { ...service.environment },
    labels: Object.keys(labels).length === 0 ? undefined : labels,
    ports: ports(service),
    mounts: mounts(service, project),
    healthcheck: healthcheckSpec(service),
    restart: restartSpec(service.restart),
    user: service.user ?? undefined,
    workdir: service.workingDir ?? undefined,
    stopSignal: service.stopSignal ?? undefined,
    stopGraceSeconds: service.stopGracePeriodMs === null
      ? undefined
      : Math.ceil(service.stopGracePeriodMs / 1000),
    network: { name: identity.network ?? NETWORK },
    privileged: service.privileged || undefined,
    resources: resources(service),
    capAdd: nonEmpty(service.capAdd),
    capDrop: nonEmpty(service.capDrop),
    sysctls: record(service.sysctls),
    init: service.init ?? undefined,
    hostname: service.hostname ?? undefined,
    extraHosts: nonEmpty(service.extraHosts),
    tty: service.tty || undefined,
    openStdin: service.stdinOpen || undefined,
    readOnlyRootfs: service.readOnly || undefined,
    securityOpt: nonEmpty(service.securityOpt ?? null),
    devices: nonEmpty(service.devices ?? null),
    deviceRequests: nonEmpty(service.deviceRequests ?? null),
    files: nonEmpty(
      (service.files ?? []).map((file) => ({
        target: file.target,
        digest: file.digest,
        uid: file.uid === null ? undefined : Number(file.uid),
        gid: file.gid === null ? undefined : Number(file.gid),
        mode: file.mode,
      })),
    ),
    log: service.logging.driver === "local" && Object.keys(service.logging.options).length === 0
      ? undefined
      : { driver: service.logging.driver, options: record(service.logging.options) },
    placement: placementOf(service),
  };
  return JSON.parse(JSON.stringify(spec));
}

/** What the Machine re-checks before creating the Service's container; absent when the Service names nothing. */
function placementOf(service: NormalizedService): ContainerSpec["placement"] {
  const constraints = service.constraints ?? [];
  if (service.machines.length === 0 && constraints.length === 0) return undefined;
  return {
    machines: service.machines.length === 0 ? undefined : [...service.machines],
    constraints: constraints.length === 0 ? undefined : [...constraints],
  };
}

/** The spec of a Service's pre-deploy hook container: the Service's container with the hook's command. */
export function hookContainerSpec(
  project: NormalizedProject,
  service: NormalizedService,
  deploymentId: string,
  network?: string,
): ContainerSpec {
  const base = serviceContainerSpec(project, service, { deploymentId, slot: "hook", network });
  const hook = service.preDeploy;
  const env = { ...base.env, ...hook?.environment };
  return JSON.parse(JSON.stringify({
    ...base,
    cmd: hook?.command,
    env: Object.keys(env).length === 0 ? undefined : env,
    // A hook never serves: no serving labels, no host ports, no probe, never restarted.
    labels: Object.keys(service.labels).length === 0 ? undefined : { ...service.labels },
    ports: undefined,
    healthcheck: { disabled: true },
    restart: { policy: "no" },
    // The hook's own setting wins; unset, it runs as the Service's containers do.
    privileged: (hook?.privileged ?? service.privileged) || undefined,
  }));
}

/**
 * What the Preview says about a Service's settings that change how Ployz itself sees its containers: today only
 * a log driver other than `local`, whose output `ployz logs` cannot read. Every other Compose setting is applied.
 */
export function unsupportedFields(project: NormalizedProject, service: NormalizedService): string[] {
  if (service.logging.driver === "local") return [];
  return [
    `Service "${project.name}/${service.name}" logs through the "${service.logging.driver}" driver: ` +
    `"ployz logs" will not see its output`,
  ];
}
