/**
 * The health gate: a container with a healthcheck must report healthy, one without must stay running through the
 * monitor period; a container that exits 0 passes (a one-shot task). Any restart during the gate fails it. The
 * result carries what was observed, so a failure names its evidence.
 *
 * @module
 */

import type { Client } from "./client.ts";
import { inspectRaw } from "./containers.ts";
import type { DockerContainerInspect, DockerHealthConfig } from "./docker_types.ts";
import { type ContainerState, type HealthProbe, type HealthState, observeContainer } from "./observe.ts";
import { describeMs, sleep } from "../../util/mod.ts";

/** What the gate last saw. */
export interface HealthEvidence {
  /** The container's state, or `absent` once removed. */
  state: ContainerState | "absent";
  /** Its health status (`none` without a healthcheck). */
  health: HealthState;
  /** Exit code once stopped. */
  exitCode: number | null;
  /** Whether the kernel killed it for lack of memory. */
  oomKilled: boolean;
  /** Docker's restart count. */
  restartCount: number;
  /** When it last started. */
  startedAt: string | null;
  /** Docker's record of a failed start. */
  lastError: string | null;
  /** The last probes, most recent last. */
  healthLog: HealthProbe[];
}

/** The gate's verdict. */
export type HealthResult =
  | {
    healthy: true;
    via: "healthcheck" | "monitor" | "exited_zero";
    elapsedMs: number;
    evidence: HealthEvidence;
  }
  | {
    healthy: false;
    reason: "unhealthy" | "exited" | "restarted" | "not_running" | "removed" | "timed_out";
    /** One sentence naming the container and the evidence. */
    message: string;
    elapsedMs: number;
    evidence: HealthEvidence;
  };

/** Options of `waitHealthy`. */
export interface HealthOptions {
  /** Give up after this long; default from the container's healthcheck (see `healthDeadlineMs`). */
  deadlineMs?: number;
  /** The container must stay up this long before it passes; default 5 s. */
  monitorMs?: number;
  /** Inspect interval; default 250 ms. */
  pollMs?: number;
  /** Cancels the wait. */
  signal?: AbortSignal;
}

const NS_PER_MS = 1_000_000;

/** start_period + (interval + timeout) × retries + 5 s, with Docker's defaults (0, 30 s, 30 s, 3). */
export function healthDeadlineMs(check: DockerHealthConfig | undefined): number {
  const ms = (ns: number | undefined, fallback: number): number => ns && ns > 0 ? ns / NS_PER_MS : fallback;
  const retries = check?.Retries && check.Retries > 0 ? check.Retries : 3;
  return ms(check?.StartPeriod, 0) + (ms(check?.Interval, 30_000) + ms(check?.Timeout, 30_000)) * retries +
    5_000;
}

function hasHealthcheck(inspect: DockerContainerInspect): boolean {
  const test = inspect.Config?.Healthcheck?.Test;
  return Array.isArray(test) && test.length > 0 && test[0] !== "NONE";
}

/** Waits until the container passes the gate or fails it; Docker being unavailable throws `DockerError`. */
export async function waitHealthy(
  client: Client,
  ref: string,
  options: HealthOptions = {},
): Promise<HealthResult> {
  const started = Date.now();
  const monitorMs = options.monitorMs ?? 5_000;
  const pollMs = options.pollMs ?? 250;
  const absent: HealthEvidence = {
    state: "absent",
    health: "none",
    exitCode: null,
    oomKilled: false,
    restartCount: 0,
    startedAt: null,
    lastError: null,
    healthLog: [],
  };
  const first = await inspectRaw(client, ref, options.signal);
  if (first === undefined) {
    return {
      healthy: false,
      reason: "removed",
      message: `Container "${ref}" does not exist`,
      elapsedMs: 0,
      evidence: absent,
    };
  }
  const name = first.Name.replace(/^\//, "");
  const checked = hasHealthcheck(first);
  const deadlineMs = options.deadlineMs ??
    Math.max(checked ? healthDeadlineMs(first.Config?.Healthcheck) : monitorMs + 5_000, monitorMs);
  const baseline = observeContainer(first, client.machineId, client.network);
  let inspect: DockerContainerInspect | undefined = first;
  for (;;) {
    const elapsedMs = Date.now() - started;
    if (inspect === undefined) {
      return {
        healthy: false,
        reason: "removed",
        message: `Container "${name}" was removed`,
        elapsedMs,
        evidence: absent,
      };
    }
    const o = observeContainer(inspect, client.machineId, client.network);
    const evidence: HealthEvidence = {
      state: o.state,
      health: o.health,
      exitCode: o.exitCode,
      oomKilled: o.oomKilled,
      restartCount: o.restartCount,
      startedAt: o.startedAt,
      lastError: o.lastError,
      healthLog: o.healthLog,
    };
    const fail = (
      reason: Exclude<HealthResult, { healthy: true }>["reason"],
      message: string,
    ): HealthResult => ({
      healthy: false,
      reason,
      message,
      elapsedMs,
      evidence,
    });
    if (
      o.restartCount > baseline.restartCount ||
      (baseline.startedAt !== null && o.startedAt !== baseline.startedAt)
    ) {
      const exit = o.exitCode === null ? "" : `, last exit code ${o.exitCode}`;
      return fail(
        "restarted",
        `Container "${name}" restarted during the health gate (${o.restartCount} restarts${exit}${
          o.oomKilled ? ", out of memory" : ""
        })`,
      );
    }
    if (o.state === "exited" || o.state === "dead") {
      if (o.exitCode === 0 && !o.oomKilled) return { healthy: true, via: "exited_zero", elapsedMs, evidence };
      const oom = o.oomKilled ? " after running out of memory" : "";
      const error = o.lastError === null ? "" : `: ${o.lastError}`;
      return fail("exited", `Container "${name}" exited with code ${o.exitCode ?? "unknown"}${oom}${error}`);
    }
    if (o.state === "created" || o.state === "paused" || o.state === "removing" || o.state === "unknown") {
      const error = o.lastError === null ? "" : `: ${o.lastError}`;
      return fail("not_running", `Container "${name}" is not running (state "${o.state}")${error}`);
    }
    if (o.state === "running") {
      if (checked && o.health === "unhealthy") {
        const last = o.healthLog.at(-1);
        const probe = last === undefined
          ? ""
          : `: last probe exited ${last.exitCode ?? "unknown"}${
            last.output === "" ? "" : ` with "${last.output}"`
          }`;
        return fail("unhealthy", `Container "${name}" is unhealthy${probe}`);
      }
      if (elapsedMs >= monitorMs) {
        if (!checked) return { healthy: true, via: "monitor", elapsedMs, evidence };
        if (o.health === "healthy") return { healthy: true, via: "healthcheck", elapsedMs, evidence };
      }
    }
    if (elapsedMs >= deadlineMs) {
      const what = checked ? `become healthy (health "${o.health}")` : `stay running (state "${o.state}")`;
      return fail("timed_out", `Container "${name}" did not ${what} within ${describeMs(deadlineMs)}`);
    }
    await sleep(Math.max(1, Math.min(pollMs, deadlineMs - elapsedMs)), options.signal);
    options.signal?.throwIfAborted();
    inspect = await inspectRaw(client, first.Id, options.signal);
  }
}
