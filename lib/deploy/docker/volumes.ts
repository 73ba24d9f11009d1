/**
 * Named volumes: created owned when absent, refused when present and not this Machine's. Ployz never removes a
 * volume here; removing data is a separate, explicit operation.
 *
 * @module
 */

import { type Client, request, seg } from "./client.ts";
import type { DockerVolume } from "./docker_types.ts";
import { DockerError } from "./errors.ts";
import { assertOwned, LABELS, ownerLabels } from "./labels.ts";

/** Inspects a volume by exact name; `undefined` when absent. */
export async function inspectVolume(
  client: Client,
  name: string,
  signal?: AbortSignal,
): Promise<DockerVolume | undefined> {
  try {
    return await request(client, { operation: `inspect volume "${name}"`, cls: "inspect", signal }, {
      method: "GET",
      path: `/volumes/${seg(name)}`,
    }) as DockerVolume;
  } catch (error) {
    if (error instanceof DockerError && error.code === "not_found") return undefined;
    throw error;
  }
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
