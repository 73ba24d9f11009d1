/**
 * `ContainerSpec`: what Ployz asks Docker to create, as plain JSON, its validation, its digest, and its translation
 * to Engine API create options.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { isIP } from "node:net";
import { DockerError } from "./errors.ts";
import { LABELS, ownerLabels, RESERVED_LABELS } from "./labels.ts";

/** A host port published for a container port. */
export interface PortSpec {
  /** Port inside the container. */
  containerPort: number;
  /** Port on the host; 0 lets Docker pick one. */
  hostPort: number;
  /** Default `tcp`. */
  protocol?: "tcp" | "udp";
  /** Host address to bind; all addresses when absent. */
  hostIp?: string;
}

/**
 * A named volume (created, owned, when absent), an anonymous volume (empty `source`: one per container, removed
 * with it), a bind mount of an existing absolute host path, or a tmpfs.
 */
export interface MountSpec {
  /** A volume, a bind mount or a tmpfs. */
  type: "volume" | "bind" | "tmpfs";
  /** Volume name (empty for an anonymous volume), absolute host path, or empty for a tmpfs. */
  source: string;
  /** Absolute path inside the container. */
  target: string;
  /** Mount read-only. */
  readOnly?: boolean;
  /** tmpfs size limit in bytes. */
  sizeBytes?: number;
  /**
   * A named volume's size from `x-volumes`: a Provisioned Volume the Machine keeps in its Pool and binds into the
   * container, instead of a Docker volume; 0 when `x-volumes` names no size (the Machine's default Volume size).
   */
  provisionedBytes?: number;
  /** tmpfs mode bits. */
  mode?: number;
}

/**
 * A file the container gets from the operator's side (a Compose secret, config or relative bind). Only its digest is
 * in the spec; the content travels with the create request and the Machine keeps it under its own files directory,
 * bind-mounted read-only at `target`.
 */
export interface FileSpec {
  /** Absolute path inside the container. */
  target: string;
  /** `sha256:<hex>` of the content. */
  digest: string;
  /** Owner uid; root when absent. */
  uid?: number;
  /** Owner gid; root when absent. */
  gid?: number;
  /** Mode bits; 0444 when absent. */
  mode?: number;
}

/** The name of a file's copy on a Machine: its digest, owner and mode, so two uses with other owners never clash. */
export function fileCopyName(file: FileSpec): string {
  const hex = file.digest.slice("sha256:".length);
  return `${hex}-${file.uid ?? 0}-${file.gid ?? 0}-${(file.mode ?? 0o444).toString(8)}`;
}

/** A device node of the Machine made available in the container (Compose `devices`). */
export interface DeviceSpec {
  /** Path on the Machine. */
  host: string;
  /** Path inside the container. */
  container: string;
  /** cgroup permissions, `rwm` by default. */
  permissions?: string;
}

/** A request for devices through a driver (Compose `gpus`, `deploy.resources.reservations.devices`). */
export interface DeviceRequestSpec {
  /** Driver name, or empty for the default. */
  driver?: string;
  /** How many devices; -1 for all. Absent when `deviceIds` names them. */
  count?: number;
  /** Device IDs. */
  deviceIds?: string[];
  /** Capability sets, any of which satisfies the request (`[["gpu"]]`). */
  capabilities: string[][];
  /** Driver options. */
  options?: Record<string, string>;
}

/** Limits and kernel settings of the container (Compose `cpus`, `mem_limit`, `ulimits`, …). */
export interface ResourcesSpec {
  /** CPU limit in billionths of a CPU. */
  nanoCpus?: number;
  /** Memory limit in bytes. */
  memoryBytes?: number;
  /** Memory soft limit in bytes. */
  memoryReservationBytes?: number;
  /** Size of `/dev/shm` in bytes. */
  shmSizeBytes?: number;
  /** Most processes in the container. */
  pidsLimit?: number;
  /** Ulimits by name. */
  ulimits?: Record<string, { soft: number; hard: number }>;
}

/** A log driver other than the default `local` (then `ployz logs` cannot read the container's output). */
export interface LogSpec {
  /** Docker log driver. */
  driver: string;
  /** Driver options. */
  options?: Record<string, string>;
}

/** A probe Docker runs; durations in milliseconds. `disabled` turns off the image's own probe. */
export type HealthcheckSpec =
  | { disabled: true }
  | {
    disabled?: false;
    /** `["CMD", ...argv]` or `["CMD-SHELL", "command"]`. */
    test: string[];
    intervalMs?: number;
    timeoutMs?: number;
    retries?: number;
    startPeriodMs?: number;
  };

/** Docker's restart policy. */
export interface RestartSpec {
  /** Docker's restart policy name. */
  policy: "no" | "always" | "unless-stopped" | "on-failure";
  /** For `on-failure`: give up after this many restarts (0: never). */
  maxRetries?: number;
}

/** The network a container joins at creation. */
export interface NetworkAttachment {
  /** The network name. */
  name: string;
  /** DNS names of the container on that network. */
  aliases?: string[];
  /** A static address on that network. */
  ipv4Address?: string;
}

/** The resolver a container asks, and its search domains. Servers are addresses, never names. */
export interface ContainerDns {
  /** Resolver addresses. */
  servers: string[];
  /** Search domains. */
  search?: string[];
  /** Resolver options (`ndots:1`). */
  options?: string[];
}

/** Everything a Ployz container is created from. Plain JSON; keys Docker does not know are never sent. */
export interface ContainerSpec {
  /** The Docker container name. */
  name: string;
  /** Minted by the caller once per intended container; a retry with the same key finds the first one. */
  creationKey: string;
  /** Label `ployz.project`. */
  project: string;
  /** Label `ployz.service`. */
  service: string;
  /** Label `ployz.deployment`. */
  deployment: string;
  /** Label `ployz.slot`. */
  slot: string;
  /** Image reference; it must already be on this Machine. */
  image: string;
  /** Replaces the image's command. */
  cmd?: string[];
  /** Replaces the image's entrypoint. */
  entrypoint?: string[];
  /** Environment; values never leave the Machine in observations. */
  env?: Record<string, string>;
  /** Extra labels; the `ployz.*` ownership keys are reserved. */
  labels?: Record<string, string>;
  /** Published host ports. */
  ports?: PortSpec[];
  /** Volumes and bind mounts. */
  mounts?: MountSpec[];
  /** The probe; the image's own when absent. */
  healthcheck?: HealthcheckSpec;
  /** Default `no`. */
  restart?: RestartSpec;
  /** User (and group) to run as. */
  user?: string;
  /** Working directory. */
  workdir?: string;
  /** Signal sent by a stop; the image's when absent. */
  stopSignal?: string;
  /** Seconds between the stop signal and the kill. */
  stopGraceSeconds?: number;
  /** The network joined at creation; Docker's default bridge when absent. */
  network?: NetworkAttachment;
  /** Resolvers and search domains. */
  dns?: ContainerDns;
  /** Run with every capability and device (Compose `privileged`, `x-pre_deploy.privileged`). */
  privileged?: boolean;
  /** Limits. */
  resources?: ResourcesSpec;
  /** Capabilities added. */
  capAdd?: string[];
  /** Capabilities dropped. */
  capDrop?: string[];
  /** Namespaced kernel parameters. */
  sysctls?: Record<string, string>;
  /** Run an init process as PID 1. */
  init?: boolean;
  /** Container hostname. */
  hostname?: string;
  /** `host:address` lines added to `/etc/hosts`. */
  extraHosts?: string[];
  /** Allocate a TTY. */
  tty?: boolean;
  /** Keep stdin open. */
  openStdin?: boolean;
  /** Mount the root filesystem read-only. */
  readOnlyRootfs?: boolean;
  /** Security options (`no-new-privileges:true`, `seccomp=…`, `apparmor=…`). */
  securityOpt?: string[];
  /** Device nodes. */
  devices?: DeviceSpec[];
  /** Device requests (GPUs). */
  deviceRequests?: DeviceRequestSpec[];
  /** Log driver; the `local` policy when absent. */
  log?: LogSpec;
  /** Files shipped with the create request (secrets, configs, relative binds). */
  files?: FileSpec[];
  /**
   * Digests of the files the container takes in at creation (env-files, bind-mounted files) keyed by path. Docker
   * reads them once, so a changed file means a new container: they are part of the spec digest.
   */
  reads?: Record<string, string>;
  /**
   * Where it may run (`x-machines`, `deploy.placement.constraints`): the Machine re-checks it against its own
   * Labels before creating (Machine-local admission). Not part of the digest: it says where, not what.
   */
  placement?: { machines?: string[]; constraints?: string[] };
}

/** The `local` log driver policy every container gets. */
export interface LogPolicy {
  /** Size of one log file before rotation, in Docker's units (`20m`). */
  maxSize: string;
  /** Files kept per container, the live one included. */
  maxFile: number;
}

/**
 * 5 × 20 MB per container, uncompressed: the Observe Store reads `container.log` and its rotated siblings
 * directly, and uncompressed rotations stay readable without a second code path.
 */
export const DEFAULT_LOG_POLICY: Readonly<LogPolicy> = Object.freeze({ maxSize: "20m", maxFile: 5 });

const NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$/;
const ENV_KEY = /^[^=\0]+$/;
const MS_TO_NS = 1_000_000;

function invalid(spec: { name?: string }, why: string): DockerError {
  return new DockerError("invalid_argument", `Invalid container spec "${spec.name ?? ""}": ${why}`, {
    details: { container: spec.name ?? "" },
  });
}

function nonEmpty(spec: ContainerSpec, field: string, value: unknown): void {
  if (typeof value !== "string" || value.trim() === "") {
    throw invalid(spec, `"${field}" must be a non-empty string`);
  }
}

function port(spec: ContainerSpec, field: string, value: unknown): void {
  if (!Number.isInteger(value) || (value as number) < 1 || (value as number) > 65535) {
    throw invalid(spec, `"${field}" must be a port between 1 and 65535, got ${JSON.stringify(value)}`);
  }
}

function duration(spec: ContainerSpec, field: string, value: unknown): void {
  if (value === undefined) return;
  if (!Number.isInteger(value) || (value as number) < 1) {
    throw invalid(spec, `"${field}" must be a whole number of milliseconds above 0`);
  }
}

/** Refuses a spec Docker would refuse late or misread; the message names the field. */
export function validateSpec(spec: ContainerSpec): void {
  if (typeof spec.name !== "string" || !NAME.test(spec.name)) {
    throw invalid(spec, `"name" must match ${NAME.source}`);
  }
  for (const field of ["creationKey", "project", "service", "deployment", "slot", "image"] as const) {
    nonEmpty(spec, field, spec[field]);
  }
  for (const key of Object.keys(spec.env ?? {})) {
    if (!ENV_KEY.test(key)) throw invalid(spec, `environment key "${key}" is not valid`);
  }
  for (const key of Object.keys(spec.labels ?? {})) {
    if (RESERVED_LABELS.has(key)) throw invalid(spec, `label "${key}" is reserved for Ployz`);
  }
  const published = new Set<string>();
  for (const p of spec.ports ?? []) {
    port(spec, "ports.containerPort", p.containerPort);
    if (p.hostPort !== 0) port(spec, "ports.hostPort", p.hostPort);
    const protocol = p.protocol ?? "tcp";
    if (protocol !== "tcp" && protocol !== "udp") {
      throw invalid(spec, `port protocol "${protocol}" is not tcp or udp`);
    }
    if (p.hostIp !== undefined && isIP(p.hostIp) === 0) {
      throw invalid(spec, `host address "${p.hostIp}" is not an IP`);
    }
    const key = `${p.hostIp ?? ""}:${p.hostPort}/${protocol}`;
    if (p.hostPort !== 0 && published.has(key)) throw invalid(spec, `host port "${key}" is published twice`);
    published.add(key);
  }
  for (const m of spec.mounts ?? []) {
    if (m.type !== "volume" && m.type !== "bind" && m.type !== "tmpfs") {
      throw invalid(spec, `mount type "${String(m.type)}" is unknown`);
    }
    if (!m.target?.startsWith("/")) throw invalid(spec, `mount target "${m.target}" is not an absolute path`);
    if (m.type === "bind" && !m.source?.startsWith("/")) {
      throw invalid(spec, `bind source "${m.source}" is not an absolute path`);
    }
    if (m.type === "bind" && m.source.split("/").includes("..")) {
      throw invalid(spec, `bind source "${m.source}" contains ".."`);
    }
    if (m.type === "volume" && m.source !== "" && !NAME.test(m.source ?? "")) {
      throw invalid(spec, `volume name "${m.source}" is not valid`);
    }
    if (
      m.provisionedBytes !== undefined &&
      (m.type !== "volume" || m.source === "" || !Number.isSafeInteger(m.provisionedBytes) ||
        m.provisionedBytes < 0)
    ) {
      throw invalid(
        spec,
        `mount "${m.target}": a Provisioned Volume is a named volume with a whole size in bytes (0: the Machine's default)`,
      );
    }
  }
  const hc = spec.healthcheck;
  if (hc !== undefined && hc.disabled !== true) {
    if (
      !Array.isArray(hc.test) || hc.test.length < 2 || (hc.test[0] !== "CMD" && hc.test[0] !== "CMD-SHELL")
    ) {
      throw invalid(spec, `healthcheck test must be ["CMD", ...] or ["CMD-SHELL", "command"]`);
    }
    duration(spec, "healthcheck.intervalMs", hc.intervalMs);
    duration(spec, "healthcheck.timeoutMs", hc.timeoutMs);
    duration(spec, "healthcheck.startPeriodMs", hc.startPeriodMs);
    if (hc.retries !== undefined && (!Number.isInteger(hc.retries) || hc.retries < 1)) {
      throw invalid(spec, `"healthcheck.retries" must be a whole number above 0`);
    }
  }
  if (
    spec.stopGraceSeconds !== undefined &&
    (!Number.isInteger(spec.stopGraceSeconds) || spec.stopGraceSeconds < 0)
  ) {
    throw invalid(spec, `"stopGraceSeconds" must be a whole number of seconds`);
  }
  if (spec.network !== undefined) {
    nonEmpty(spec, "network.name", spec.network.name);
    const ip = spec.network.ipv4Address;
    if (ip !== undefined && isIP(ip) !== 4) {
      throw invalid(spec, `network address "${ip}" is not an IPv4 address`);
    }
  }
  for (const server of spec.dns?.servers ?? []) {
    if (isIP(server) === 0) throw invalid(spec, `DNS server "${server}" is not an IP address`);
  }
  for (const file of spec.files ?? []) {
    if (!/^sha256:[0-9a-f]{64}$/.test(file.digest ?? "")) {
      throw invalid(spec, `file digest "${file.digest}" is not valid`);
    }
    if (!file.target?.startsWith("/") || file.target.split("/").includes("..")) {
      throw invalid(spec, `file target "${file.target}" is not an absolute path`);
    }
    for (const id of [file.uid, file.gid]) {
      if (id !== undefined && (!Number.isSafeInteger(id) || id < 0)) {
        throw invalid(spec, `file owner ${id} is not valid`);
      }
    }
    if (file.mode !== undefined && (!Number.isInteger(file.mode) || file.mode < 0 || file.mode > 0o7777)) {
      throw invalid(spec, `file mode ${file.mode} is not valid`);
    }
  }
  if (spec.files !== undefined && !/^[a-z0-9][a-z0-9_-]{0,62}$/.test(spec.project)) {
    throw invalid(spec, `project "${spec.project}" cannot name a files directory`);
  }
  for (const device of spec.devices ?? []) {
    if (!device.host?.startsWith("/") || !device.container?.startsWith("/")) {
      throw invalid(spec, `device "${device.host}:${device.container}" needs absolute paths`);
    }
  }
  const placement = spec.placement;
  if (placement !== undefined) {
    for (const list of [placement.machines, placement.constraints]) {
      if (
        list !== undefined &&
        (!Array.isArray(list) || list.length > 256 ||
          list.some((x) => typeof x !== "string" || x.length > 512))
      ) {
        throw invalid(spec, `"placement" must hold lists of at most 256 names or constraints`);
      }
    }
  }
  const r = spec.resources;
  for (const [field, value] of Object.entries(r ?? {})) {
    if (field === "ulimits") continue;
    if (!Number.isSafeInteger(value) || (value as number) < (field === "pidsLimit" ? -1 : 0)) {
      throw invalid(spec, `"resources.${field}" must be a whole number, got ${JSON.stringify(value)}`);
    }
  }
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) out[key] = canonical(v);
    }
    return out;
  }
  return value;
}

/** Canonical JSON: sorted keys, no undefined members. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(canonical(value));
}

/**
 * `sha256:<hex>` of everything that defines the container, env values and `reads` included; the identity fields
 * (name, creation key, deployment, slot) and its placement are left out, so two slots of one spec share a digest. The image is
 * compared by reference here and by id in observations.
 */
export function specDigest(spec: ContainerSpec): string {
  const { name: _n, creationKey: _k, deployment: _d, slot: _s, placement: _p, ...rest } = spec;
  return `sha256:${createHash("sha256").update(canonicalJson(rest)).digest("hex")}`;
}

/** The spec as kept in the `ployz.spec` label: environment keys kept, values dropped. */
export function specWithoutEnvValues(spec: ContainerSpec): ContainerSpec {
  if (spec.env === undefined) return spec;
  return { ...spec, env: Object.fromEntries(Object.keys(spec.env).map((k) => [k, ""])) };
}

/** Every label a container gets: owner, identity, digest, the value-free spec, then the caller's extras. */
export function containerLabels(
  spec: ContainerSpec,
  machineId: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    ...extra,
    ...spec.labels,
    ...ownerLabels(machineId),
    [LABELS.project]: spec.project,
    [LABELS.service]: spec.service,
    [LABELS.deployment]: spec.deployment,
    [LABELS.slot]: spec.slot,
    [LABELS.creationKey]: spec.creationKey,
    [LABELS.specDigest]: specDigest(spec),
    [LABELS.spec]: canonicalJson(specWithoutEnvValues(spec)),
    [LABELS.image]: spec.image,
  };
}

function portKey(p: PortSpec): string {
  return `${p.containerPort}/${p.protocol ?? "tcp"}`;
}

/**
 * The body of `POST /containers/create` for a validated spec. `dns` is the Machine's default resolver, used when
 * the spec names none; it is the Machine's own fact, so it stays out of the labels and the spec digest.
 */
export function toCreateBody(
  spec: ContainerSpec,
  machineId: string,
  options: {
    log?: LogPolicy;
    extraLabels?: Record<string, string>;
    dns?: ContainerDns;
    filesDir?: string;
    image?: string;
    volumePaths?: Readonly<Record<string, string>>;
  } = {},
): Record<string, unknown> {
  for (const m of spec.mounts ?? []) {
    if (m.provisionedBytes !== undefined && options.volumePaths?.[m.source] === undefined) {
      throw invalid(spec, `Provisioned Volume "${m.source}" has no path in this Machine's Pool`);
    }
  }
  if (spec.files !== undefined && spec.files.length > 0 && options.filesDir === undefined) {
    throw invalid(spec, "it ships files, and this Machine has no files directory");
  }
  // Shipped files are bind mounts of the Machine's copies: where they live is the Machine's own fact.
  const shipped = (spec.files ?? []).map((file) => ({
    Type: "bind" as const,
    Source: `${options.filesDir}/${spec.project}/${fileCopyName(file)}`,
    Target: file.target,
    ReadOnly: true,
    TmpfsOptions: undefined,
  }));
  const dns = spec.dns ?? options.dns;
  const log = options.log ?? DEFAULT_LOG_POLICY;
  const exposed: Record<string, Record<string, never>> = {};
  const bindings: Record<string, { HostIp: string; HostPort: string }[]> = {};
  for (const p of spec.ports ?? []) {
    exposed[portKey(p)] = {};
    (bindings[portKey(p)] ??= []).push({
      HostIp: p.hostIp ?? "",
      HostPort: p.hostPort === 0 ? "" : String(p.hostPort),
    });
  }
  const hc = spec.healthcheck;
  const healthcheck = hc === undefined ? undefined : hc.disabled === true ? { Test: ["NONE"] } : {
    Test: hc.test,
    Interval: hc.intervalMs === undefined ? undefined : hc.intervalMs * MS_TO_NS,
    Timeout: hc.timeoutMs === undefined ? undefined : hc.timeoutMs * MS_TO_NS,
    Retries: hc.retries,
    StartPeriod: hc.startPeriodMs === undefined ? undefined : hc.startPeriodMs * MS_TO_NS,
  };
  const network = spec.network;
  const body: Record<string, unknown> = {
    // An image copied from a peer runs by id; the spec's pinned reference stays in the `ployz.image` label.
    Image: options.image ?? spec.image,
    Cmd: spec.cmd,
    Entrypoint: spec.entrypoint,
    Env: Object.entries(spec.env ?? {}).map(([k, v]) => `${k}=${v}`),
    Labels: containerLabels(spec, machineId, options.extraLabels),
    User: spec.user,
    WorkingDir: spec.workdir,
    Hostname: spec.hostname,
    Tty: spec.tty,
    OpenStdin: spec.openStdin,
    StopSignal: spec.stopSignal,
    StopTimeout: spec.stopGraceSeconds,
    ExposedPorts: exposed,
    Healthcheck: healthcheck,
    HostConfig: {
      PortBindings: bindings,
      // A Provisioned Volume is a bind of its copy in the Machine's Pool, the Machine's own fact like shipped files.
      Mounts: (spec.mounts ?? []).map((m) => ({
        Type: m.provisionedBytes === undefined ? m.type : "bind",
        Source: m.provisionedBytes !== undefined
          ? options.volumePaths?.[m.source]
          : m.type === "tmpfs" || m.source === ""
          ? undefined
          : m.source,
        Target: m.target,
        ReadOnly: m.readOnly === true,
        TmpfsOptions: m.type !== "tmpfs" || (m.sizeBytes === undefined && m.mode === undefined)
          ? undefined
          : { SizeBytes: m.sizeBytes, Mode: m.mode },
      })).concat(shipped),
      NanoCpus: spec.resources?.nanoCpus,
      Memory: spec.resources?.memoryBytes,
      MemoryReservation: spec.resources?.memoryReservationBytes,
      ShmSize: spec.resources?.shmSizeBytes,
      PidsLimit: spec.resources?.pidsLimit,
      Ulimits: spec.resources?.ulimits === undefined
        ? undefined
        : Object.entries(spec.resources.ulimits).map(([Name, l]) => ({ Name, Soft: l.soft, Hard: l.hard })),
      CapAdd: spec.capAdd,
      CapDrop: spec.capDrop,
      Sysctls: spec.sysctls,
      Init: spec.init,
      ExtraHosts: spec.extraHosts,
      ReadonlyRootfs: spec.readOnlyRootfs,
      SecurityOpt: spec.securityOpt,
      Devices: spec.devices?.map((d) => ({
        PathOnHost: d.host,
        PathInContainer: d.container,
        CgroupPermissions: d.permissions ?? "rwm",
      })),
      DeviceRequests: spec.deviceRequests?.map((d) => ({
        Driver: d.driver ?? "",
        Count: d.count ?? (d.deviceIds === undefined ? -1 : 0),
        DeviceIDs: d.deviceIds,
        Capabilities: d.capabilities,
        Options: d.options,
      })),
      RestartPolicy: {
        Name: spec.restart?.policy ?? "no",
        MaximumRetryCount: spec.restart?.policy === "on-failure" ? spec.restart.maxRetries ?? 0 : 0,
      },
      LogConfig: spec.log === undefined || spec.log.driver === "local"
        ? {
          Type: "local",
          Config: {
            "max-size": log.maxSize,
            "max-file": String(log.maxFile),
            compress: "false",
            ...spec.log?.options,
          },
        }
        : { Type: spec.log.driver, Config: spec.log.options ?? {} },
      Privileged: spec.privileged === true ? true : undefined,
      NetworkMode: network?.name,
      Dns: dns?.servers,
      DnsSearch: dns?.search,
      DnsOptions: dns?.options,
    },
    NetworkingConfig: network === undefined ? undefined : {
      EndpointsConfig: {
        [network.name]: {
          Aliases: network.aliases,
          IPAMConfig: network.ipv4Address === undefined ? undefined : { IPv4Address: network.ipv4Address },
        },
      },
    },
  };
  return canonical(body) as Record<string, unknown>;
}

/**
 * The full spec of an owned container read back locally: the `ployz.spec` label, with environment values taken
 * from the container's own environment. `undefined` when the label is absent or unreadable.
 */
export function specFromContainer(
  labels: Record<string, string> | null | undefined,
  env: string[] | null | undefined,
): ContainerSpec | undefined {
  const raw = labels?.[LABELS.spec];
  if (raw === undefined) return undefined;
  let spec: ContainerSpec;
  try {
    spec = JSON.parse(raw) as ContainerSpec;
  } catch {
    return undefined;
  }
  if (spec.env !== undefined) {
    const values = new Map<string, string>();
    for (const entry of env ?? []) {
      const at = entry.indexOf("=");
      if (at > 0) values.set(entry.slice(0, at), entry.slice(at + 1));
    }
    spec.env = Object.fromEntries(Object.keys(spec.env).map((k) => [k, values.get(k) ?? ""]));
  }
  return spec;
}
