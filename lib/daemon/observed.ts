/**
 * An observation of an owned container, shaped for the wire and for the replicated `containers` row. Both carry
 * environment names only; values stay in Docker on this Machine.
 *
 * @module
 */

import { type HealthResult, LABELS, type ObservedContainer } from "../deploy/machine/mod.ts";
import type { HealthEvidenceWire, ObservedContainerWire, WaitHealthyResponse } from "../rpc/mod.ts";
import type { Container } from "../store/mod.ts";

/** The wire observation of a container (`ployz.container.*` answers). */
export function toWire(o: ObservedContainer): ObservedContainerWire {
  const label = (key: string): string => o.labels[key] ?? "";
  const address = o.address?.ipv4;
  return {
    id: o.id,
    name: o.name,
    project: label(LABELS.project),
    service: label(LABELS.service),
    deployment: label(LABELS.deployment),
    slot: label(LABELS.slot),
    "creation_key": label(LABELS.creationKey),
    "spec_digest": label(LABELS.specDigest),
    image: o.image,
    "image_id": o.imageId,
    state: o.state,
    health: o.health,
    "started_at": o.startedAt,
    "exit_code": o.exitCode,
    "start_error": o.lastError,
    addresses: address ? [address] : [],
    ports: o.ports.map((p) => ({
      "container_port": p.containerPort,
      protocol: p.protocol,
      "host_ip": p.hostIp,
      "host_port": p.hostPort,
    })),
    "env_names": o.envKeys,
    "created_at": o.createdAt,
  };
}

/** The replicated row this Machine publishes for one of its containers. */
export function toRow(o: ObservedContainer, machineId: string): Container {
  const wire = toWire(o);
  return {
    ...wire,
    "machine_id": machineId,
    // Labels without `ployz.spec` (observations drop it); environment values are never labels.
    labels: o.labels,
  };
}

/** The health gate's verdict, snake_case at the edge. */
export function healthToWire(result: HealthResult): WaitHealthyResponse {
  const e = result.evidence;
  const evidence: HealthEvidenceWire = {
    state: e.state,
    health: e.health,
    "exit_code": e.exitCode,
    "oom_killed": e.oomKilled,
    "restart_count": e.restartCount,
    "started_at": e.startedAt,
    "last_error": e.lastError,
    "health_log": e.healthLog.map((p) => ({
      "exit_code": p.exitCode,
      output: p.output,
      "ended_at": p.endedAt,
    })),
  };
  if (result.healthy) {
    return { passed: true, via: result.via, "elapsed_ms": result.elapsedMs, evidence };
  }
  return {
    passed: false,
    reason: result.reason,
    message: result.message,
    "elapsed_ms": result.elapsedMs,
    evidence,
  };
}
