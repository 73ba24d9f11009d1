/**
 * `machine rm --gone` on the Machine that is asked: the checks before a gone Machine is marked retired (it is not
 * this Machine, it is quiet and does not answer a probe now, its Data Loss is confirmed), and the mark itself, a
 * name-keyed `retired_machines` row every Machine's readers honour. The judgement of "gone" is gone_evidence.ts.
 *
 * @module
 */

import type { ListMachinesResponse, RetireMachineRequest, RetireMachineResponse } from "../rpc/mod.ts";
import { RpcError } from "../rpc/mod.ts";
import type { Store } from "../store/mod.ts";
import { type GoneVerdict, goneVerdict, type ProbeResult } from "./gone_evidence.ts";
import type { LocalMachine } from "./machine_file.ts";
import { messageOf } from "../util/mod.ts";

/** How long a probe of a Machine about to be retired as gone may take. */
const GONE_PROBE_MS = 3_000;

/** What retiring reads from the Machine that is asked. */
export interface RetireContext {
  store: Store;
  /** This Machine's record. */
  self: LocalMachine;
  /** The membership as this Machine sees it now. */
  membership(): Promise<ListMachinesResponse>;
  /**
   * Probes another Machine's RPC over the mesh, bounded by `signal`: any answer at all proves its daemon alive.
   * Resolves false when there is no address to probe it at.
   */
  probePeer(machineId: string, signal: AbortSignal): Promise<boolean>;
  /** How long the Machine must have been quiet (the membership's store-up window). */
  quietMs: number;
  log(line: string): void;
}

/**
 * Marks a gone Machine retired. Refused for this Machine itself, for one this Machine heard from within the quiet
 * window or that answers a probe now (it can leave by itself), and, when its rows show containers or volumes,
 * unless the request confirms the Data Loss with its name.
 */
export async function retireGoneMachine(
  ctx: RetireContext,
  req: RetireMachineRequest,
): Promise<RetireMachineResponse> {
  const { store, self } = ctx;
  const row = store.machines.get(req.machine_id);
  if (row === undefined) {
    throw new RpcError("not_found", `Machine "${req.machine_id}" has no row on "${self.name}"`, {
      details: { "machine_id": req.machine_id },
    });
  }
  if (row.id === self.id) {
    throw new RpcError(
      "conflict",
      `Machine "${self.name}" cannot retire itself: run "ployz machine rm ${self.name}" to have it leave`,
      { details: { "machine_id": row.id } },
    );
  }
  const verdict = await observeGone(ctx, row.id);
  if (!verdict.gone) {
    throw new RpcError(
      "conflict",
      `Refusing to retire Machine "${row.name}" as gone: ${verdict.observed}; a Machine that answers leaves ` +
        `by itself: "ployz machine rm ${row.name}" (nothing was changed)`,
      {
        details: {
          "machine_id": row.id,
          observed: verdict.observed,
          ...(verdict.acceptAfter === undefined ? {} : { "accept_after": verdict.acceptAfter }),
        },
      },
    );
  }
  const containers = store.containers.list({ "machine_id": row.id }).map((c) => c.name).sort();
  const volumes = store.volumes.list({ "machine_id": row.id }).map((v) => v.name).sort();
  if ((containers.length > 0 || volumes.length > 0) && req.confirm_data_loss !== row.name) {
    const named = [...containers.map((c) => `container ${c}`), ...volumes.map((v) => `volume ${v}`)];
    throw new RpcError(
      "conflict",
      `Machine "${row.name}" held ${named.length} thing(s) the Cluster loses with it (${
        named.slice(0, 8).join(", ")
      }${named.length > 8 ? ", …" : ""}): confirm the Data Loss with its name`,
      { details: { "machine_name": row.name, containers, volumes } },
    );
  }
  store.retiredMachines.put({
    "machine_id": row.id,
    name: row.name,
    ...(row.subnet === undefined ? {} : { subnet: row.subnet }),
    "retired_by": self.id,
    "retired_at": new Date().toISOString(),
  });
  ctx.log(`retired Machine "${row.name}" (${row.id}), gone (${verdict.observed}): its rows leave every view`);
  return {
    "machine_id": row.id,
    name: row.name,
    observed: verdict.observed,
    ...(row.subnet === undefined ? {} : { subnet: row.subnet }),
    containers,
    volumes,
    "retired_by": self.id,
  };
}

// What this Machine sees of a Machine about to be retired: a bounded probe over the mesh, and how long it has been
// quiet.
async function observeGone(ctx: RetireContext, machineId: string): Promise<GoneVerdict> {
  const started = performance.now();
  const deadline = AbortSignal.timeout(GONE_PROBE_MS);
  let probe: ProbeResult;
  try {
    const answered = await ctx.probePeer(machineId, deadline);
    const ms = Math.round(performance.now() - started);
    probe = answered ? { answered: true, ms } : { answered: false, ms, reason: `no address to probe it at` };
  } catch (error) {
    const ms = Math.round(performance.now() - started);
    const why = deadline.aborted
      ? `no answer within ${GONE_PROBE_MS / 1_000} s`
      : `${messageOf(error).slice(0, 200)} after ${ms} ms`;
    probe = { answered: false, ms, reason: why };
  }
  // Read after the probe, so a packet that arrived meanwhile counts.
  const seen = (await ctx.membership()).machines.find((m) => m.id === machineId);
  const heard = [seen?.last_received_at, seen?.last_store_traffic_at]
    .map((t) => t === undefined ? NaN : Date.parse(t))
    .filter((t) => Number.isFinite(t));
  return goneVerdict(ctx.self.name, {
    now: Date.now(),
    ...(heard.length === 0 ? {} : { lastHeard: Math.max(...heard) }),
    quietMs: ctx.quietMs,
  }, probe);
}
