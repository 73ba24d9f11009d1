/**
 * Client side of "any Deploy fills missing or stopped ingress slots" (docs/bets.md, bet 3): for one Machine, start
 * the newest existing Ingress Proxy when none runs, or create and start one when there is none. It never
 * replaces, upgrades or removes one. Creation goes through `ployz.container.ensure.v1` with a creation key
 * derived from the Machine and slot, so a retried or concurrent fill finds the first container.
 *
 * @module
 */

import type { MachineApi } from "../deploy/mod.ts";
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
