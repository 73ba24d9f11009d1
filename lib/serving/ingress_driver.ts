/**
 * Runs {@link ingressStartDecision} on each full local scan: a timer (default 30 s), Docker events of Ingress
 * Proxies, and {@link IngressDriver.scan} on demand. Starting is the only effect, and only of the container the
 * decision names; before starting, the driver re-checks the holds (a stop that raced the scan wins) and
 * reattaches the Machine's network when Docker dropped it after the failed start.
 *
 * @module
 */

import type { Engine, ObservedContainer } from "../deploy/machine/mod.ts";
import { LABELS } from "../deploy/machine/mod.ts";
import {
  type IngressHolds,
  type IngressRecord,
  type IngressStartDecision,
  ingressStartDecision,
  isIngressProxy,
  type ScannedContainer,
} from "./ingress_start.ts";
import { sleep } from "../util/mod.ts";

/** Requested stops and in-flight stops of Ingress Proxies, in daemon memory only (a restart forgets them). */
export class IngressHoldBook implements IngressHolds {
  /** Held down by a requested stop. */
  readonly held: Set<string> = new Set();
  /** A stop or stopping mark in flight. */
  readonly stopping: Set<string> = new Set();

  /** A requested stop: hold the container down until a requested start. */
  requestStop(id: string): void {
    this.held.add(id);
  }

  /** A requested start releases the hold. */
  requestStart(id: string): void {
    this.held.delete(id);
  }

  /** Marks a stop in flight; call the returned function when it ends. */
  beginStop(id: string): () => void {
    this.stopping.add(id);
    return () => this.stopping.delete(id);
  }
}

/** Options of {@link startIngressDriver}. */
export interface IngressDriverOptions {
  /** This Machine's Docker. */
  engine: Engine;
  /** The Machine's record as it is now. */
  record: () => IngressRecord;
  /** Requested and in-flight stops. */
  holds: IngressHoldBook;
  /** Rescan period; default {@link ingressRescanMsFromEnv} (30 s). 0 disables the timer. */
  rescanMs?: number;
  /** Follow Docker events; default true. */
  followEvents?: boolean;
  /** The Machine's bridge network; default `ployz`. */
  network?: string;
  /** One line per notable event. */
  log?: (line: string) => void;
}

/** A running driver. */
export interface IngressDriver {
  /** Runs one scan and its decision now (after any running one). */
  scan(): Promise<IngressStartDecision>;
  /** Stops the timer and the event follower. */
  stop(): Promise<void>;
}

/** The rescan period (docs/bets.md, bet 10): 30 s. */
export const DEFAULT_INGRESS_RESCAN_MS = 30_000;

/** `PLOYZ_INGRESS_RESCAN_SECONDS` (above 0) in milliseconds, else {@link DEFAULT_INGRESS_RESCAN_MS}; for tests. */
export function ingressRescanMsFromEnv(
  env: (name: string) => string | undefined = (n) => Deno.env.get(n),
): number {
  const seconds = Number(env("PLOYZ_INGRESS_RESCAN_SECONDS") ?? NaN);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : DEFAULT_INGRESS_RESCAN_MS;
}

/** A scanned container in the decision's shape. */
export function toScanned(o: ObservedContainer): ScannedContainer {
  return {
    id: o.id,
    project: o.labels[LABELS.project] ?? "",
    service: o.labels[LABELS.service] ?? "",
    state: o.state,
    createdAt: o.createdAt,
    lastError: o.lastError,
  };
}

/** Starts the driver: a first scan at once, then the timer and events. */
export function startIngressDriver(options: IngressDriverOptions): IngressDriver {
  const { engine, holds } = options;
  const log = options.log ?? (() => {});
  const controller = new AbortController();
  let tail: Promise<IngressStartDecision> = Promise.resolve({ action: "none", reason: "incomplete_scan" });
  let createdDuringScan = false;
  let scanning = false;

  async function scanOnce(): Promise<IngressStartDecision> {
    createdDuringScan = false;
    scanning = true;
    let decision: IngressStartDecision;
    let observed: ObservedContainer[] = [];
    try {
      const scan = await engine.rescan(controller.signal);
      observed = scan.containers;
      const createdAfter = scan.containers.some((c) =>
        c.createdAt !== null && Date.parse(c.createdAt) >= scan.startedAtMs
      );
      decision = ingressStartDecision(
        {
          complete: true,
          containers: scan.containers.map(toScanned),
          createdSinceStart: createdDuringScan || createdAfter,
        },
        options.record(),
        holds,
      );
    } catch (error) {
      log(`ingress: scan failed: ${(error as Error).message}`);
      decision = { action: "none", reason: "incomplete_scan" };
    } finally {
      scanning = false;
    }
    if (decision.action !== "start") return decision;
    const id = decision.containerId;
    // A stop requested while the scan ran wins over it.
    if (holds.held.has(id) || holds.stopping.has(id)) {
      return {
        action: "none",
        reason: holds.stopping.has(id) ? "stop_in_flight" : "held_by_stop",
        containerId: id,
      };
    }
    const target = observed.find((c) => c.id === id);
    try {
      if (target !== undefined && target.address === null) {
        await engine.connectNetwork(id, { network: options.network ?? "ployz" }, controller.signal)
          .catch((error) =>
            log(`ingress: cannot reattach network to "${target.name}": ${(error as Error).message}`)
          );
      }
      await engine.startContainer(id, controller.signal);
      log(`ingress: started Ingress Proxy "${target?.name ?? id}" after its failed start`);
    } catch (error) {
      log(`ingress: cannot start Ingress Proxy "${target?.name ?? id}": ${(error as Error).message}`);
    }
    return decision;
  }

  function scan(): Promise<IngressStartDecision> {
    tail = tail.then(scanOnce, scanOnce);
    return tail;
  }

  async function follow(): Promise<void> {
    while (!controller.signal.aborted) {
      try {
        for await (const event of engine.events(controller.signal)) {
          if (event.action === "create" && scanning) createdDuringScan = true;
          const labels = event.labels;
          if (
            isIngressProxy({ project: labels[LABELS.project] ?? "", service: labels[LABELS.service] ?? "" })
          ) {
            void scan();
          }
        }
      } catch (error) {
        if (controller.signal.aborted) return;
        log(`ingress: events: ${(error as Error).message}`);
        await sleep(2_000);
      }
    }
  }

  const following = options.followEvents === false ? Promise.resolve() : follow();
  const rescanMs = options.rescanMs ?? ingressRescanMsFromEnv();
  const timer = rescanMs > 0 ? setInterval(() => void scan(), rescanMs) : undefined;
  void scan();
  return {
    scan,
    async stop(): Promise<void> {
      if (timer !== undefined) clearInterval(timer);
      controller.abort();
      await following;
      await tail.catch(() => {});
    },
  };
}
