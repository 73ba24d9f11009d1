/**
 * Ownership labels. Every object Ployz creates carries `ployz.managed=1` and `ployz.machine=<machine id>`;
 * containers also carry their identity (project, service, deployment, slot, creation key) and spec digest.
 * Every mutation checks these on a fresh inspect first and refuses what this Machine does not own.
 *
 * @module
 */

import { DockerError } from "./errors.ts";

/** The label keys, by role. */
export interface LabelKeys {
  /** `1` on everything Ployz created. */
  readonly managed: "ployz.managed";
  /** The id of the Machine that owns the object. */
  readonly machine: "ployz.machine";
  /** The Project a container belongs to. */
  readonly project: "ployz.project";
  /** The Service a container runs. */
  readonly service: "ployz.service";
  /** The Deployment that created the container. */
  readonly deployment: "ployz.deployment";
  /** The container's slot within its Service. */
  readonly slot: "ployz.slot";
  /** The key minted for the intended container; a retried create finds it by this label. */
  readonly creationKey: "ployz.creation_key";
  /** `specDigest` of the spec the container was created from. */
  readonly specDigest: "ployz.spec_digest";
  /** The container spec without environment values, so the full spec can be read back locally. */
  readonly spec: "ployz.spec";
  /** The image reference the spec names, pinned to its digest when it came from a registry. */
  readonly image: "ployz.image";
}

/** Label keys Ployz writes. */
export const LABELS: LabelKeys = Object.freeze({
  /** `1` on everything Ployz created. */
  managed: "ployz.managed",
  /** The id of the Machine that owns the object. */
  machine: "ployz.machine",
  /** The Project a container belongs to. */
  project: "ployz.project",
  /** The Service a container runs. */
  service: "ployz.service",
  /** The Deployment that created the container. */
  deployment: "ployz.deployment",
  /** The container's slot within its Service. */
  slot: "ployz.slot",
  /** The key minted for the intended container; a retried create finds it by this label. */
  creationKey: "ployz.creation_key",
  /** `specDigest` of the spec the container was created from. */
  specDigest: "ployz.spec_digest",
  /** The container spec without environment values, so the full spec can be read back locally. */
  spec: "ployz.spec",
  /** The image reference the spec names, pinned to its digest when it came from a registry. */
  image: "ployz.image",
});

/** Keys a caller may not set through a spec's own labels. */
export const RESERVED_LABELS: ReadonlySet<string> = new Set(Object.values(LABELS));

/** The two labels every owned object carries. */
export function ownerLabels(machineId: string): Record<string, string> {
  return { [LABELS.managed]: "1", [LABELS.machine]: machineId };
}

/** The kinds of Docker object Ployz owns. */
export type ObjectKind = "container" | "network" | "volume";

/** Why an object is not this Machine's, or `undefined` when it is. */
export function ownershipProblem(
  labels: Record<string, string> | null | undefined,
  machineId: string,
): { label: string; expected: string; found: string } | undefined {
  const managed = labels?.[LABELS.managed];
  if (managed !== "1") return { label: LABELS.managed, expected: "1", found: managed ?? "" };
  const machine = labels?.[LABELS.machine];
  if (machine !== machineId) return { label: LABELS.machine, expected: machineId, found: machine ?? "" };
  return undefined;
}

/** Whether this Machine owns an object with these labels. */
export function isOwned(labels: Record<string, string> | null | undefined, machineId: string): boolean {
  return ownershipProblem(labels, machineId) === undefined;
}

/**
 * Throws `conflict` unless this Machine owns the object. `action` reads as a verb (`stop`), `name` is the object's
 * Docker name; the message says which label is missing or whose it is.
 */
export function assertOwned(
  action: string,
  kind: ObjectKind,
  name: string,
  labels: Record<string, string> | null | undefined,
  machineId: string,
): void {
  const found = ownershipProblem(labels, machineId);
  if (found === undefined) return;
  // A foreign label value is someone else's text: bound it before it enters a message.
  const problem = { ...found, found: found.found.length > 64 ? `${found.found.slice(0, 63)}…` : found.found };
  const why = problem.found === ""
    ? `Ployz does not own it (label "${problem.label}" is missing)`
    : problem.label === LABELS.machine
    ? `it belongs to Machine "${problem.found}", not this Machine "${machineId}" (label "${problem.label}")`
    : `Ployz does not own it (label "${problem.label}" is "${problem.found}", expected "${problem.expected}")`;
  throw new DockerError("conflict", `Refusing to ${action} ${kind} "${name}": ${why}`, {
    details: { [kind]: name, label: problem.label, expected: problem.expected, found: problem.found },
  });
}
