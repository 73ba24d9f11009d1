/**
 * One pass of the serving loop: from the rows and Docker as they are now, the retire and removal decisions, dns.json,
 * the local Ingress Proxy's config, this Machine's acks, and the stops and removals that are due. A pass keeps
 * nothing of its own; what passes remember between them (stopping marks, first-seen times, what the proxy loaded)
 * is the loop's {@link PassMemory}.
 *
 * @module
 */

import type { Engine } from "../deploy/machine/mod.ts";
import type { Container, Removal, ServingPointer, Store } from "../store/mod.ts";
import type { CaddyAdmin } from "./caddy_admin.ts";
import type { CaddyLoadReport } from "./caddy_loader.ts";
import { projectCaddy, type ServingProblem } from "./caddy_projection.ts";
import type { CertificateKeeper } from "./certificate_keeper.ts";
import { type UsableCertificate, usableCertificate } from "./certificates.ts";
import { projectDns } from "./dns_projection.ts";
import type { DnsSpecWriter } from "./dns_writer.ts";
import {
  type LoadedIngress,
  loadLocalProxy,
  localProxy,
  NOTHING_LOADED,
  proxyStarting,
  routedServices,
} from "./ingress_load.ts";
import { heldLeaving, LEAVE_HOLD_MS } from "./leaving.ts";
import { type RemovalDecision, removalDecision } from "./removal.ts";
import { DEFAULT_RETIRE_AFTER_MS, type RetireDecision, retireDecision } from "./retire.ts";
import { escaped, servedChanges, type ServedSets } from "./served_log.ts";
import {
  type PassContext,
  removeCovered,
  removeMarkVolumes,
  stopRetired,
  writeChallengeAcks,
  writeServingAcks,
} from "./serving_actions.ts";

/** What one pass did. */
export interface ServingPass {
  /** dns.json holds this pass's projection. */
  dnsWritten: boolean;
  /** The local proxy's state: `absent` (no running Ingress Proxy here), `loaded`, `unchanged` or `failed`. */
  caddy: "absent" | "loaded" | "unchanged" | "failed";
  /** The load report when a load ran. */
  caddyReport?: CaddyLoadReport;
  /** Projection problems (skipped routes and fragments). */
  problems: ServingProblem[];
  /** Acks written. */
  acks: number;
  /** The retire decision. */
  retire: RetireDecision;
  /** When each row held serving here stops being held, so a pass then lets it leave (`leaving.ts`). */
  held: { dueAtMs: number }[];
  /** Containers stopped by this pass. */
  stopped: string[];
  /** The removal decision (removal marks this Machine honours for its own containers). */
  removal: RemovalDecision;
  /** Containers removed by this pass. */
  removed: string[];
  /** Errors met. */
  errors: string[];
}

/** What every pass of one loop acts with, fixed for the loop's life. */
export interface PassHost {
  store: Store;
  engine: Engine;
  /** This Machine's id (the store's site id). */
  machineId: string;
  admin: CaddyAdmin;
  writer: DnsSpecWriter;
  dnsListen: string[];
  /** Explicit DNS upstreams; undefined: the host's resolv.conf. */
  dnsUpstreams?: string[];
  /** Machines this Machine observes as Down. */
  down(): ReadonlySet<string>;
  retireAfterMs?: number;
  removeProvisioned?: (volume: string, project: string) => Promise<boolean>;
  keeper?: CertificateKeeper;
  /** Aborts when the loop stops. */
  signal: AbortSignal;
  log: (line: string) => void;
}

/**
 * What passes remember between them, in this loop's memory only (a daemon restart forgets it): a retired container
 * is marked stopping and excluded from both projections at once, then stopped on a later pass once the local
 * proxy's loaded config no longer dials it.
 */
export class PassMemory {
  /** Retired containers this loop is stopping. */
  readonly marks = new Set<string>();
  /** When each container was first seen superseded. */
  readonly firstSeen = new Map<string, number>();
  /** When each container was first seen covered by a removal mark. */
  readonly removalFirstSeen = new Map<string, number>();
  /**
   * Volumes of a removal mark this daemon already removed or tried: each is tried once per daemon run, never on a
   * timer; a refusal is logged and `rm --status` still lists the mark.
   */
  readonly volumesTried = new Set<string>();
  /** What the local proxy was last confirmed to have loaded. */
  loaded: LoadedIngress = NOTHING_LOADED;
  /** When this loop first saw each row marked leaving, for the bound of a hold. */
  readonly leaveFirstSeen = new Map<string, number>();
  /** Rows held at the last pass, so each hold is logged once. */
  held = new Set<string>();
  /** What each routed Service's sites proxied to at the last load, for the log. */
  served: ServedSets = new Map();
}

/** The rows a pass works from and what it decided about them. */
interface PassView {
  containers: Container[];
  pointers: ServingPointer[];
  removals: Removal[];
  retire: RetireDecision;
  removal: RemovalDecision;
  /** Covered by a removal mark or retired: out of both projections at once. */
  leaving: Set<string>;
  /** Marked leaving, but still serving here until their replacement can (`leaving.ts`). */
  holding: Set<string>;
}

/** Runs one pass; its failures are in the answer's `errors` (and logged), except a store or Docker abort. */
export async function runPass(host: PassHost, memory: PassMemory): Promise<ServingPass> {
  const { store, machineId } = host;
  const errors: string[] = [];
  const view = decide(host, memory);
  const { containers, pointers, removals, retire, removal, leaving, holding } = view;
  const context = { stopping: leaving, holding };
  logHolds(host, memory, containers, holding);
  const dnsWritten = await writeDns(host, view, errors);
  const now = new Date();
  const projection = projectCaddy(containers, pointers, {
    machineId,
    ...context,
    certificates: usableCertificates(store, now),
    challenges: store.acmeChallenges.list(),
    now,
  });
  const load = await loadLocalProxy(host.admin, memory.loaded, {
    proxy: localProxy(containers, machineId),
    projection,
    routed: routedServices(containers, pointers, context),
  }, host);
  memory.loaded = load.loaded;
  if (load.caddy === "loaded") {
    const served = servedChanges(memory.served, containers, pointers, context);
    memory.served = served.next;
    for (const line of served.lines) host.log(line);
  }
  if (load.error !== undefined) errors.push(load.error);
  const { dials, answered } = memory.loaded;
  const ctx: PassContext = {
    store,
    engine: host.engine,
    machineId,
    signal: host.signal,
    log: host.log,
    errors,
  };
  const acks = dnsWritten && load.caddy !== "failed" && !proxyStarting(containers, machineId)
    ? writeServingAcks(ctx, pointers, removals, containers, holding)
    : 0;
  // Challenge acks follow what the local proxy confirmed loaded; without a proxy this Machine answers none.
  if (load.caddy !== "failed") writeChallengeAcks(ctx, [...answered]);
  const stopped = await stopRetired(ctx, retire, containers, dials);
  const removed = await removeCovered(ctx, removal, containers, dials);
  await removeMarkVolumes(ctx, removals, memory.volumesTried, host.removeProvisioned);
  for (const e of errors) host.log(`serving: ${e}`);
  if (load.caddy === "loaded" || load.caddy === "unchanged") host.keeper?.consider(projection.httpsHostnames);
  return {
    dnsWritten,
    caddy: load.caddy,
    caddyReport: load.report,
    problems: projection.problems,
    acks,
    retire,
    held: [...holding].map((id) => ({ dueAtMs: (memory.leaveFirstSeen.get(id) ?? 0) + LEAVE_HOLD_MS })),
    stopped,
    removal,
    removed,
    errors,
  };
}

/** The rows as they are now, the retire and removal decisions over them, and which containers are leaving. */
function decide(host: PassHost, memory: PassMemory): PassView {
  const { store, machineId } = host;
  // A retired Machine's rows are no upstream, no name and no one to wait for.
  const containers = store.liveContainers();
  const pointers = store.servingPointers.list();
  // Both decisions judge the same moment: the same acks, live Machines and Down set.
  const now = {
    machineId,
    nowMs: Date.now(),
    containers,
    acks: store.acks.list(),
    machines: store.liveMachines().map((m) => m.id),
    down: host.down(),
  };
  const retire = retireDecision({
    ...now,
    pointers,
    firstSeen: memory.firstSeen,
    retireAfterMs: host.retireAfterMs,
  });
  for (const item of retire.retire) memory.marks.add(item.containerId);
  const removals = store.removals.list();
  const removal = removalDecision({
    ...now,
    removals,
    firstSeen: memory.removalFirstSeen,
    boundMs: host.retireAfterMs ?? DEFAULT_RETIRE_AFTER_MS,
  });
  const live = new Set(
    containers.filter((r) => r.state === "running" || r.state === "restarting").map((r) => r.id),
  );
  for (const id of [...memory.marks]) if (!live.has(id)) memory.marks.delete(id);
  const leaving = new Set([...memory.marks, ...removal.leaving]);
  const holding = heldLeaving({
    containers,
    pointers,
    stopping: leaving,
    firstSeen: memory.leaveFirstSeen,
    nowMs: now.nowMs,
  });
  return { containers, pointers, removals, retire, removal, leaving, holding };
}

/** Logs each hold once, when it begins. */
function logHolds(host: PassHost, memory: PassMemory, containers: Container[], holding: Set<string>): void {
  for (const id of holding) {
    if (memory.held.has(id)) continue;
    const row = containers.find((r) => r.id === id);
    const service = JSON.stringify(`${row?.project}/${row?.service}`);
    host.log(
      `serving: holding "${
        escaped(row?.name ?? id)
      }" of ${service}: it leaves once another container of its ` +
        `Service, starting now, passes health here (at most ${LEAVE_HOLD_MS / 1000} s)`,
    );
  }
  memory.held = holding;
}

/** Writes dns.json from the view (single writer); false, with the error noted, when it could not. */
async function writeDns(host: PassHost, view: PassView, errors: string[]): Promise<boolean> {
  try {
    return await host.writer.write(projectDns(view.containers, view.pointers, {
      machineId: host.machineId,
      listen: host.dnsListen,
      upstreams: host.dnsUpstreams,
      stopping: view.leaving,
      holding: view.holding,
      now: new Date(),
    }));
  } catch (error) {
    errors.push(`cannot write "${host.writer.path}": ${(error as Error).message}`);
    return false;
  }
}

/** The certificates in the store usable now, by hostname. */
function usableCertificates(store: Store, now: Date): Map<string, UsableCertificate> {
  const certificates = new Map<string, UsableCertificate>();
  for (const row of store.certificates.list()) {
    const read = usableCertificate(row, now);
    if (read.ok) certificates.set(read.cert.hostname, read.cert);
  }
  return certificates;
}
