/**
 * Deployment ids, creation keys and container names. A creation key is a pure function of (Deployment, Service,
 * slot[, Machine]), so a Deploy re-run after a crash under the same Deployment finds the containers its first run
 * created instead of creating second ones.
 *
 * @module
 */

import { createHash } from "node:crypto";

/** A new Deployment id: 32 random hex digits. */
export function newDeploymentId(): string {
  return crypto.randomUUID().replaceAll("-", "");
}

/** The deterministic creation key of one intended container. */
export function creationKey(deploymentId: string, service: string, slot: string, machineId = ""): string {
  const material = [deploymentId, service, slot, machineId].join("\n");
  return createHash("sha256").update(material).digest("hex").slice(0, 32);
}

/** `<project>-<service>-<slot>-<first 8 of the Deployment id>`. */
export function containerName(project: string, service: string, slot: string, deploymentId: string): string {
  return `${project}-${service}-${slot}-${deploymentId.slice(0, 8)}`;
}
