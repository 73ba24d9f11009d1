/**
 * Client side of "any Deploy fills missing or stopped ingress slots" (docs/bets.md, bet 3): for one Machine, start
 * the newest existing Ingress Proxy when none runs, or create and start one when there is none. It never
 * replaces, upgrades or removes one. Creation goes through `ployz.container.ensure.v1` with a creation key
 * derived from the Machine and slot, so a retried or concurrent fill finds the first container. A fill counts as
 * done only once that proxy serves the routes it was filled for ({@link waitIngressServes}).
 *
 * @module
 */

import type { MachineApi } from "../deploy/machine/mod.ts";
import {
  INGRESS_PROJECT,
  INGRESS_SERVICE,
  ingressContainerSpec,
  type IngressSlotOptions,
} from "./ingress_spec.ts";
import { CodedError, sleep } from "../util/mod.ts";

/** What filling one Machine's ingress slot did. */
export interface IngressFill {
  /** `running`: one already ran; `started`: an existing one was started; `created`: a new one was made. */
  action: "running" | "started" | "created";
  /** The container acted on or found. */
  containerId: string;
  /** Its state after the call. */
  state: string;
}

/** The Machine RPC calls a fill needs. */
export type IngressFillApi = Pick<MachineApi, "listContainers" | "ensureContainer" | "startContainer">;

/** How often a fill that lost a creation race looks again, and how long it waits between looks. */
const CONFLICT_LOOKS = 3;
const CONFLICT_PAUSE_MS = 500;

/**
 * Fills the ingress slot of one Machine; RPC errors propagate for the caller's Outcome. Deploys of different
 * Projects through different Entry Machines fill the same slot at once, and the slot's container name is fixed: the
 * fill that loses the creation race is refused `conflict` while Docker still creates the winner's container, so it
 * looks again and finds that container (running, or to start) instead of failing a Deploy whose slot is filled.
 */
export async function fillIngressSlot(
  api: IngressFillApi,
  options: IngressSlotOptions,
): Promise<IngressFill> {
  for (let look = 1;; look++) {
    try {
      return await fillOnce(api, options);
    } catch (error) {
      if (!(error instanceof CodedError) || error.code !== "conflict" || look >= CONFLICT_LOOKS) throw error;
      await sleep(CONFLICT_PAUSE_MS);
    }
  }
}

async function fillOnce(api: IngressFillApi, options: IngressSlotOptions): Promise<IngressFill> {
  const listed = await api.listContainers({ project: INGRESS_PROJECT, service: INGRESS_SERVICE });
  const proxies = listed.containers.filter((c) =>
    c.project === INGRESS_PROJECT && c.service === INGRESS_SERVICE
  );
  const live = proxies.find((c) => c.state === "running" || c.state === "restarting");
  if (live !== undefined) return { action: "running", containerId: live.id, state: live.state };
  const newest =
    [...proxies].sort((a, b) =>
      (b.created_at ?? "").localeCompare(a.created_at ?? "") || b.id.localeCompare(a.id)
    )[0];
  if (newest !== undefined) {
    const started = await api.startContainer({ id: newest.id });
    return { action: "started", containerId: started.container.id, state: started.container.state };
  }
  const ensured = await api.ensureContainer({ spec: ingressContainerSpec(options), start: true });
  return {
    action: ensured.created ? "created" : "started",
    containerId: ensured.container.id,
    state: ensured.container.state,
  };
}

/** How often a fill asks whether its proxy serves yet. */
const SERVES_POLL_MS = 100;

/**
 * Waits until the Machine's serving loop has loaded the filled Ingress Proxy `proxyId` with routes to every Service
 * in `routed` (`project/service`), so the fill counts as done only once that proxy serves what it was filled for.
 * Throws `unavailable` naming what is missing when `patienceMs` passes. A Machine that cannot answer the question
 * (an older daemon) is not waited for.
 */
export async function waitIngressServes(
  api: Pick<MachineApi, "ingressStatus">,
  options: { proxyId: string; routed: readonly string[]; patienceMs: number; machineName: string },
): Promise<{ waitedMs: number }> {
  const started = Date.now();
  if (api.ingressStatus === undefined) return { waitedMs: 0 };
  let last: { "proxy_id": string | null; routed: string[] } = { "proxy_id": null, routed: [] };
  for (;;) {
    try {
      last = await api.ingressStatus({});
    } catch (error) {
      if (error instanceof CodedError && error.code === "unsupported") {
        return { waitedMs: Date.now() - started };
      }
      throw error;
    }
    const missing = options.routed.filter((r) => !last.routed.includes(r));
    if (last.proxy_id === options.proxyId && missing.length === 0) return { waitedMs: Date.now() - started };
    if (Date.now() - started >= options.patienceMs) {
      throw new CodedError(
        "unavailable",
        last.proxy_id !== options.proxyId
          ? `Ingress Proxy "${
            options.proxyId.slice(0, 12)
          }" on Machine "${options.machineName}" loaded no config within ${
            Math.round(options.patienceMs / 1000)
          } s`
          : `Ingress Proxy on Machine "${options.machineName}" does not route ${
            missing.map((m) => `"${m}"`).join(", ")
          } after ${Math.round(options.patienceMs / 1000)} s`,
        { details: { machine: options.machineName, missing } },
      );
    }
    await sleep(SERVES_POLL_MS);
  }
}
