/**
 * The checks a container route makes against this Machine's own record before it acts: the Machine participates,
 * the spec is well formed, and the record admits a new container (docs/bets.md, bet 10: Machine-local admission).
 *
 * @module
 */

import { type ContainerSpec, DockerError, placementRefusal, validateSpec } from "../deploy/machine/mod.ts";
import { RpcError } from "../rpc/mod.ts";
import { isIngressProxy } from "../serving/mod.ts";
import { type LocalMachine, recordLabels } from "./machine_file.ts";

/** Refuses `action` with `conflict` while the Machine is not participating in a Cluster. */
export function requireParticipating(record: LocalMachine, action: string): void {
  if (record.phase === "participating") return;
  throw new RpcError(
    "conflict",
    `Cannot ${action} on Machine "${record.name}": it is not initialized (phase "${record.phase}")`,
    { details: { "machine_id": record.id, phase: record.phase } },
  );
}

/** The request's spec, validated; a field of the wrong JSON type is `invalid_argument` naming the container. */
export function asSpec(document: object): ContainerSpec {
  const spec = document as ContainerSpec;
  try {
    validateSpec(spec);
  } catch (error) {
    if (error instanceof DockerError) throw error;
    // A field of the wrong JSON type reaches validation as a TypeError.
    throw new RpcError(
      "invalid_argument",
      `Invalid container spec "${String(spec.name)}": a field has the wrong type`,
      {
        details: { container: String(spec.name) },
      },
    );
  }
  return spec;
}

/**
 * Refuses a new container this Machine's record does not admit, naming the failed check: an Ingress Proxy needs
 * ingress acceptance, any other container workload acceptance, and the spec's placement must hold on this
 * Machine's own name, id and Labels (docs/bets.md, bet 10: Machine-local admission). Existing containers are
 * never touched by a change to these.
 */
export function admit(record: LocalMachine, spec: ContainerSpec): void {
  const refuse = (check: string, message: string): never => {
    throw new RpcError(
      "conflict",
      `Machine "${record.name}" refuses to create "${spec.name}": ${message}`,
      { details: { check, "machine_id": record.id, container: spec.name } },
    );
  };
  if (isIngressProxy({ project: spec.project, service: spec.service })) {
    if (record.accepts_ingress === false) refuse("accepts_ingress", "it does not accept ingress");
    return;
  }
  if (record.accepts_workloads === false) {
    refuse("accepts_workloads", "it does not accept workloads (drained or set with machine accept)");
  }
  if (spec.placement !== undefined) {
    const why = placementRefusal(spec.placement, {
      id: record.id,
      name: record.name,
      labels: recordLabels(record),
    });
    if (why !== undefined) refuse("placement", why);
  }
}
