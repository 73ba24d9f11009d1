/**
 * Named volumes: created owned when absent, refused when present and not this Machine's. A Deploy never removes a
 * volume; only an explicit removal the operator confirmed as Data Loss does ({@link removeVolume}).
 *
 * @module
 */

import { type Client, inspectOrAbsent, request, seg } from "./client.ts";
import type { DockerVolume } from "./docker_types.ts";
import { DockerError } from "./errors.ts";
import { assertOwned, LABELS, ownerLabels } from "./labels.ts";

/** Inspects a volume by exact name; `undefined` when absent. */
export function inspectVolume(
  client: Client,
  name: string,
  signal?: AbortSignal,
): Promise<DockerVolume | undefined> {
  return inspectOrAbsent<DockerVolume>(client, `volume "${name}"`, `/volumes/${seg(name)}`, signal);
}

/** Makes sure an owned volume `name` exists for `project`; returns whether it was created now. */
export async function ensureVolume(
  client: Client,
  name: string,
  project: string,
  signal?: AbortSignal,
): Promise<{ name: string; created: boolean }> {
  const found = await inspectVolume(client, name, signal);
  if (found !== undefined) {
    assertOwned("mount", "volume", name, found.Labels, client.machineId);
    return { name, created: false };
  }
  await request(client, { operation: `create volume "${name}"`, cls: "create", signal }, {
    method: "POST",
    path: "/volumes/create",
    body: {
      Name: name,
      Driver: "local",
      Labels: { ...client.extraLabels, ...ownerLabels(client.machineId), [LABELS.project]: project },
    },
  });
  // Docker answers a create of an existing name with that volume: check it is the one just made.
  const made = await inspectVolume(client, name, signal);
  assertOwned("mount", "volume", name, made?.Labels, client.machineId);
  return { name, created: true };
}

/**
 * Removes an owned volume; `false` when it was already gone. Docker refuses (`conflict`) while a container uses it;
 * a volume Ployz on this Machine does not own is refused.
 */
export async function removeVolume(
  client: Client,
  name: string,
  signal?: AbortSignal,
  project?: string,
): Promise<boolean> {
  const found = await inspectVolume(client, name, signal);
  if (found === undefined) return false;
  assertOwned("remove", "volume", name, found.Labels, client.machineId);
  const labelled = found.Labels?.[LABELS.project];
  if (project !== undefined && labelled !== project) {
    throw new DockerError(
      "conflict",
      `Volume "${name}" belongs to Project "${labelled ?? "(none)"}", not "${project}": not removed`,
      { details: { volume: name, expected: project, found: labelled ?? "" } },
    );
  }
  try {
    await request(client, { operation: `remove volume "${name}"`, cls: "remove", signal }, {
      method: "DELETE",
      path: `/volumes/${seg(name)}`,
    });
  } catch (error) {
    if (error instanceof DockerError && error.code === "not_found") return false;
    throw error;
  }
  return true;
}
