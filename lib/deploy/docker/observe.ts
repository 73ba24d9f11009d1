/**
 * Normalized observations of containers and events. Environment values never appear here (keys only), nor the
 * `ployz.spec` label, so an observation can leave the Machine.
 *
 * @module
 */

import type { DockerContainerInspect, DockerEventMessage, DockerHealthLogEntry } from "./docker_types.ts";
import { sanitizeMessage } from "./errors.ts";
import { isOwned, LABELS } from "./labels.ts";

/** Docker's container states, plus `unknown` for anything newer. */
export type ContainerState =
  | "created"
  | "running"
  | "paused"
  | "restarting"
  | "removing"
  | "exited"
  | "dead"
  | "unknown";

/** `none` when the container has no healthcheck. */
export type HealthState = "none" | "starting" | "healthy" | "unhealthy";

/** A published port as Docker holds it. */
export interface ObservedPort {
  /** Port inside the container. */
  containerPort: number;
  /** `tcp` or `udp`. */
  protocol: string;
  /** Host address bound; empty for all. */
  hostIp: string;
  /** Port on the host. */
  hostPort: number;
}

/** One probe result, output bounded and sanitized. */
export interface HealthProbe {
  /** The probe's exit code. */
  exitCode: number | null;
  /** Its output, bounded and sanitized. */
  output: string;
  /** When it finished. */
  endedAt: string | null;
}

/** One container as this Machine's Docker reports it. */
export interface ObservedContainer {
  /** Docker's container id. */
  id: string;
  /** The container name. */
  name: string;
  /** Whether this Machine owns it (labels `ployz.managed=1` and `ployz.machine=<this Machine>`). */
  owned: boolean;
  /** Labels, without `ployz.spec`. */
  labels: Record<string, string>;
  /** The reference it was created from. */
  image: string;
  /** Id of the image it runs. */
  imageId: string;
  /** Docker's state. */
  state: ContainerState;
  /** Health status; `none` without a healthcheck. */
  health: HealthState;
  /** When Docker created it. */
  createdAt: string | null;
  /** When it last started. */
  startedAt: string | null;
  /** When it last stopped. */
  finishedAt: string | null;
  /** Set once the container has stopped (`exited`, `dead`) or while it restarts. */
  exitCode: number | null;
  /** Whether the kernel killed it for lack of memory. */
  oomKilled: boolean;
  /** Docker's restart count. */
  restartCount: number;
  /** Docker's record of the last failed start (`State.Error`), sanitized. */
  lastError: string | null;
  /** Environment keys only. */
  envKeys: string[];
  /** `local` for every container Ployz created. */
  logDriver: string;
  /** The address on the Machine's network, when attached. */
  address: { network: string; ipv4: string | null; ipv6: string | null; aliases: string[] } | null;
  /** Published ports. */
  ports: ObservedPort[];
  /** Most recent probes last, at most five. */
  healthLog: HealthProbe[];
  /** Its main process id in the Machine's process namespace, while it runs; stays on this Machine. */
  pid?: number;
}

const STATES: ReadonlySet<string> = new Set([
  "created",
  "running",
  "paused",
  "restarting",
  "removing",
  "exited",
  "dead",
]);

/** Docker writes `0001-01-01T00:00:00Z` for a time that never happened. */
export function dockerTime(value: string | undefined): string | null {
  if (value === undefined || value === "" || value.startsWith("0001-01-01")) return null;
  return value;
}

function healthState(inspect: DockerContainerInspect): HealthState {
  const status = inspect.State?.Health?.Status;
  if (status === "starting" || status === "healthy" || status === "unhealthy") return status;
  return "none";
}

function probe(entry: DockerHealthLogEntry): HealthProbe {
  return {
    exitCode: typeof entry.ExitCode === "number" ? entry.ExitCode : null,
    output: sanitizeMessage(entry.Output ?? ""),
    endedAt: dockerTime(entry.End),
  };
}

/** Normalizes `GET /containers/{id}/json`. `network` names the Machine's network for `address`. */
export function observeContainer(
  inspect: DockerContainerInspect,
  machineId: string,
  network: string,
): ObservedContainer {
  const labels = { ...inspect.Config?.Labels };
  delete labels[LABELS.spec];
  const rawState = inspect.State?.Status ?? "unknown";
  const state = (STATES.has(rawState) ? rawState : "unknown") as ContainerState;
  const stopped = state === "exited" || state === "dead" || state === "restarting";
  const endpoint = inspect.NetworkSettings?.Networks?.[network];
  const bound = inspect.NetworkSettings?.Ports ?? inspect.HostConfig?.PortBindings ?? {};
  const ports: ObservedPort[] = [];
  for (const [key, hosts] of Object.entries(bound)) {
    const [containerPort, protocol = "tcp"] = key.split("/");
    for (const host of hosts ?? []) {
      const hostPort = Number(host.HostPort);
      if (!Number.isInteger(hostPort) || hostPort === 0) continue;
      ports.push({ containerPort: Number(containerPort), protocol, hostIp: host.HostIp ?? "", hostPort });
    }
  }
  const error = inspect.State?.Error ?? "";
  return {
    id: inspect.Id,
    name: inspect.Name.replace(/^\//, ""),
    owned: isOwned(inspect.Config?.Labels, machineId),
    labels,
    image: labels[LABELS.image] ?? inspect.Config?.Image ?? "",
    imageId: inspect.Image ?? "",
    state,
    health: healthState(inspect),
    createdAt: dockerTime(inspect.Created),
    startedAt: dockerTime(inspect.State?.StartedAt),
    finishedAt: dockerTime(inspect.State?.FinishedAt),
    exitCode: stopped && typeof inspect.State?.ExitCode === "number" ? inspect.State.ExitCode : null,
    oomKilled: inspect.State?.OOMKilled === true,
    restartCount: inspect.RestartCount ?? 0,
    lastError: error === "" ? null : sanitizeMessage(error),
    envKeys: (inspect.Config?.Env ?? []).map((e) => e.split("=", 1)[0]),
    logDriver: inspect.HostConfig?.LogConfig?.Type ?? "",
    address: endpoint === undefined ? null : {
      network,
      ipv4: endpoint.IPAddress || null,
      ipv6: endpoint.GlobalIPv6Address || null,
      aliases: endpoint.Aliases ?? [],
    },
    ports,
    healthLog: (inspect.State?.Health?.Log ?? []).slice(-5).map(probe),
    ...((inspect.State?.Pid ?? 0) > 0 ? { pid: inspect.State?.Pid } : {}),
  };
}

/** The container events Ployz follows. */
export const EVENT_ACTIONS = ["create", "start", "die", "oom", "health_status", "destroy"] as const;

/** One of `EVENT_ACTIONS`. */
export type ContainerEventAction = typeof EVENT_ACTIONS[number];

/** A Docker event about an owned container. */
export interface ContainerEvent {
  /** What happened. */
  action: ContainerEventAction;
  /** Docker's container id. */
  id: string;
  /** The container name. */
  name: string;
  /** Ployz labels of the container (`ployz.*`, without `ployz.spec`). */
  labels: Record<string, string>;
  /** On `die`. */
  exitCode: number | null;
  /** On `health_status`. */
  health: HealthState | null;
  /** Milliseconds since the epoch. */
  at: number;
}

/** Normalizes one `GET /events` message; `undefined` for anything Ployz does not follow. */
export function observeEvent(message: DockerEventMessage): ContainerEvent | undefined {
  if (message.Type !== "container" || message.Actor?.ID === undefined) return undefined;
  const [verb, detail] = (message.Action ?? "").split(": ", 2);
  if (!(EVENT_ACTIONS as readonly string[]).includes(verb)) return undefined;
  const attributes = message.Actor.Attributes ?? {};
  const labels: Record<string, string> = {};
  for (const [key, value] of Object.entries(attributes)) {
    if (key.startsWith("ployz.") && key !== LABELS.spec) labels[key] = value;
  }
  const exit = attributes.exitCode === undefined ? NaN : Number(attributes.exitCode);
  const health = detail === "starting" || detail === "healthy" || detail === "unhealthy" ? detail : null;
  return {
    action: verb as ContainerEventAction,
    id: message.Actor.ID,
    name: attributes.name ?? "",
    labels,
    exitCode: Number.isInteger(exit) ? exit : null,
    health: verb === "health_status" ? health : null,
    at: message.timeNano !== undefined ? Math.floor(message.timeNano / 1e6) : (message.time ?? 0) * 1000,
  };
}
