/**
 * "Ingress the Machine already holds starts" (docs/bets.md, bet 10), as a pure decision. On each local container scan
 * the daemon starts the newest local Ingress Proxy when Docker recorded its failed last start and no other local
 * one is running or restarting — only while the Machine participates and its record accepts ingress, only after
 * a scan that inspected every local container with no container created since that scan began, and never one
 * held down by a requested stop or an in-flight stop or stopping mark. It never creates, replaces, moves or
 * removes anything.
 *
 * @module
 */

import { INGRESS_PROJECT, INGRESS_SERVICE } from "./ingress_spec.ts";

/** One local container as the scan saw it. */
export interface ScannedContainer {
  /** Docker id. */
  id: string;
  /** Label `ployz.project`. */
  project: string;
  /** Label `ployz.service`. */
  service: string;
  /** Docker state. */
  state: string;
  /** When Docker created it (ISO 8601), or null. */
  createdAt: string | null;
  /** Docker's `State.Error`: set when its last start failed. */
  lastError: string | null;
}

/** The scan the decision runs on. */
export interface IngressScan {
  /** True when every local container was inspected. */
  complete: boolean;
  /** The containers seen. */
  containers: ScannedContainer[];
  /** True when Docker reported a container created after the scan began. */
  createdSinceStart: boolean;
}

/** The Machine's own record, as far as the decision needs it. */
export interface IngressRecord {
  /** The Machine's phase; only `participating` qualifies. */
  phase: string;
  /** Whether the record accepts ingress; absent means yes. */
  acceptsIngress?: boolean;
}

/** Requested stops, kept in daemon memory. */
export interface IngressHolds {
  /** Ingress Proxies a requested stop holds down until a requested start. */
  held: ReadonlySet<string>;
  /** Containers with a stop or a stopping mark in flight. */
  stopping: ReadonlySet<string>;
}

/** Why the decision did not start anything. */
export type IngressHoldReason =
  | "not_participating"
  | "ingress_not_accepted"
  | "incomplete_scan"
  | "created_since_scan"
  | "no_ingress_proxy"
  | "one_running"
  | "last_start_ok"
  | "held_by_stop"
  | "stop_in_flight";

/** Start this container, or do nothing and say why. */
export type IngressStartDecision =
  | { action: "start"; containerId: string }
  | { action: "none"; reason: IngressHoldReason; containerId?: string };

/** Whether a scanned container is an Ingress Proxy. */
export function isIngressProxy(c: { project: string; service: string }): boolean {
  return c.project === INGRESS_PROJECT && c.service === INGRESS_SERVICE;
}

/** Docker recorded a failed last start: not running, and `State.Error` holds the reason. */
export function lastStartFailed(c: ScannedContainer): boolean {
  return (c.state === "created" || c.state === "exited" || c.state === "dead") &&
    c.lastError !== null && c.lastError.trim() !== "";
}

/** Decides from this Machine's own Docker scan, record and holds alone. */
export function ingressStartDecision(
  scan: IngressScan,
  record: IngressRecord,
  holds: IngressHolds,
): IngressStartDecision {
  if (record.phase !== "participating") return { action: "none", reason: "not_participating" };
  if (record.acceptsIngress === false) return { action: "none", reason: "ingress_not_accepted" };
  if (!scan.complete) return { action: "none", reason: "incomplete_scan" };
  if (scan.createdSinceStart) return { action: "none", reason: "created_since_scan" };
  const proxies = scan.containers.filter(isIngressProxy);
  if (proxies.length === 0) return { action: "none", reason: "no_ingress_proxy" };
  const live = proxies.find((c) => c.state === "running" || c.state === "restarting");
  if (live !== undefined) return { action: "none", reason: "one_running", containerId: live.id };
  const newest =
    [...proxies].sort((a, b) =>
      (b.createdAt ?? "").localeCompare(a.createdAt ?? "") || b.id.localeCompare(a.id)
    )[0];
  if (holds.stopping.has(newest.id)) {
    return { action: "none", reason: "stop_in_flight", containerId: newest.id };
  }
  if (holds.held.has(newest.id)) return { action: "none", reason: "held_by_stop", containerId: newest.id };
  if (!lastStartFailed(newest)) return { action: "none", reason: "last_start_ok", containerId: newest.id };
  return { action: "start", containerId: newest.id };
}
