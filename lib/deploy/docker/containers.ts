/**
 * Container lifecycle. Every mutation inspects its target first (container-scoped, by id or name), refuses what
 * this Machine does not own, and then acts on the inspected id, so a name that changes hands in between cannot
 * redirect it.
 *
 * @module
 */

import { type Client, inspectOrAbsent, request, seg } from "./client.ts";
import type { DockerContainerInspect, DockerContainerSummary } from "./docker_types.ts";
import { DockerError } from "./errors.ts";
import { assertOwned, isOwned, LABELS, ownershipProblem } from "./labels.ts";
import { findNetwork } from "./network.ts";
import { observeContainer, type ObservedContainer } from "./observe.ts";
import {
  type ContainerDns,
  type ContainerSpec,
  specDigest,
  specFromContainer,
  toCreateBody,
  validateSpec,
} from "./spec.ts";
import { ensureVolume } from "./volumes.ts";
import { imageExists } from "./images.ts";

/** Machine-local settings of a creation that are not part of the spec, so not of its digest. */
export interface CreateOptions {
  /** The resolver a container gets when its spec names none (the Machine Gateway and its Project's domain). */
  dns?: ContainerDns;
  /** Where the Machine keeps the files containers are shipped (`<filesDir>/<project>/<copy>`). */
  filesDir?: string;
  /**
   * The image Docker runs, when it cannot find the spec's pinned reference by name (an image id, for an image
   * copied from a peer: `docker load` keeps no registry digest). The spec's reference is kept in `ployz.image`.
   */
  image?: string;
  /** The host path of each Provisioned Volume the spec mounts, by volume name (its copy in the Pool). */
  volumePaths?: Readonly<Record<string, string>>;
  /**
   * The caller has just listed no container with the spec's creation key and found the image: both lookups, and
   * the look-up by name, are skipped (three Docker calls). A container holding the name anyway is Docker's
   * conflict on create, and still comes back as `existing` (or refused, when another spec or owner holds it).
   */
  checked?: boolean;
  /** The caller has just passed the spec through {@linkcode checkNetwork}: the create does not ask again. */
  networkChecked?: boolean;
}

/**
 * Refuses a spec whose network does not exist or is not this Machine's: what a create checks before it attaches a
 * container to it. A spec without a network passes.
 */
export async function checkNetwork(client: Client, spec: ContainerSpec, signal?: AbortSignal): Promise<void> {
  if (spec.network === undefined) return;
  const network = await findNetwork(client, spec.network.name, signal);
  if (network === undefined) {
    throw new DockerError(
      "not_found",
      `Cannot create container "${spec.name}": network "${spec.network.name}" does not exist`,
      {
        details: { container: spec.name, network: spec.network.name },
      },
    );
  }
  assertOwned("attach a container to", "network", spec.network.name, network.Labels, client.machineId);
}

/** What `createContainer` found or made. */
export interface CreatedContainer {
  /** Docker's container id. */
  id: string;
  /** The container name. */
  name: string;
  /** `false` when a container with the spec's creation key already existed and was returned instead. */
  created: boolean;
  /** The `ployz.spec_digest` label of the container. */
  specDigest: string;
}

/** Label filters for `listOwned`; every given field must match. */
export interface OwnedFilter {
  /** Label `ployz.project`. */
  project?: string;
  /** Label `ployz.service`. */
  service?: string;
  /** Label `ployz.deployment`. */
  deployment?: string;
  /** Label `ployz.slot`. */
  slot?: string;
  /** Label `ployz.creation_key`. */
  creationKey?: string;
}

/** Inspects one container by id or exact name; `undefined` when absent. */
export function inspectRaw(
  client: Client,
  ref: string,
  signal?: AbortSignal,
): Promise<DockerContainerInspect | undefined> {
  return inspectOrAbsent<DockerContainerInspect>(
    client,
    `container "${ref}"`,
    `/containers/${seg(ref)}/json`,
    signal,
  );
}

function displayName(inspect: DockerContainerInspect): string {
  return inspect.Name.replace(/^\//, "");
}

/** Inspects `ref` and throws unless it exists and this Machine owns it. */
export async function ownedTarget(
  client: Client,
  action: string,
  ref: string,
  signal?: AbortSignal,
): Promise<DockerContainerInspect> {
  const inspect = await inspectRaw(client, ref, signal);
  if (inspect === undefined) {
    throw new DockerError("not_found", `Cannot ${action} container "${ref}": no such container`, {
      details: { container: ref },
    });
  }
  assertOwned(action, "container", displayName(inspect), inspect.Config?.Labels, client.machineId);
  return inspect;
}

function ownerFilter(client: Client, filter: OwnedFilter): string[] {
  const labels = [`${LABELS.managed}=1`, `${LABELS.machine}=${client.machineId}`];
  const pairs: [string, string | undefined][] = [
    [LABELS.project, filter.project],
    [LABELS.service, filter.service],
    [LABELS.deployment, filter.deployment],
    [LABELS.slot, filter.slot],
    [LABELS.creationKey, filter.creationKey],
  ];
  for (const [key, value] of pairs) if (value !== undefined) labels.push(`${key}=${value}`);
  return labels;
}

/** Lists owned containers (running or not) matching `filter`, through Docker's label filter. */
export async function listOwnedSummaries(
  client: Client,
  filter: OwnedFilter,
  signal?: AbortSignal,
): Promise<DockerContainerSummary[]> {
  const rows = await request(client, { operation: "list owned containers", cls: "list", signal }, {
    method: "GET",
    path: "/containers/json",
    query: { all: true, filters: { label: ownerFilter(client, filter) } },
  }) as DockerContainerSummary[];
  // The filter already did this; checking again costs nothing and keeps the rule in one place.
  return rows.filter((row) => isOwned(row.Labels, client.machineId));
}

/** Inspects every owned container matching `filter`; one removed meanwhile is left out. */
export async function listOwned(
  client: Client,
  filter: OwnedFilter = {},
  signal?: AbortSignal,
): Promise<ObservedContainer[]> {
  const rows = await listOwnedSummaries(client, filter, signal);
  const out: ObservedContainer[] = [];
  const queue = [...rows];
  async function worker(): Promise<void> {
    for (let row = queue.shift(); row !== undefined; row = queue.shift()) {
      const inspect = await inspectRaw(client, row.Id, signal);
      if (inspect !== undefined && isOwned(inspect.Config?.Labels, client.machineId)) {
        out.push(observeContainer(inspect, client.machineId, client.network));
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(8, rows.length) }, worker));
  return out.sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
}

/** Observes one container (owned or not, `owned` says); `undefined` when absent. */
export async function inspectContainer(
  client: Client,
  ref: string,
  signal?: AbortSignal,
): Promise<ObservedContainer | undefined> {
  const inspect = await inspectRaw(client, ref, signal);
  return inspect === undefined ? undefined : observeContainer(inspect, client.machineId, client.network);
}

/** The full spec of an owned container, environment values included. Stays on this Machine. */
export async function readSpec(client: Client, ref: string, signal?: AbortSignal): Promise<ContainerSpec> {
  const inspect = await ownedTarget(client, "read the spec of", ref, signal);
  const spec = specFromContainer(inspect.Config?.Labels, inspect.Config?.Env);
  if (spec === undefined) {
    throw new DockerError(
      "not_found",
      `Cannot read the spec of container "${
        displayName(inspect)
      }": label "${LABELS.spec}" is missing or unreadable`,
      {
        details: { container: displayName(inspect), label: LABELS.spec },
      },
    );
  }
  return spec;
}

function existing(client: Client, spec: ContainerSpec, inspect: DockerContainerInspect): CreatedContainer {
  const name = displayName(inspect);
  const labels = inspect.Config?.Labels;
  const problem = ownershipProblem(labels, client.machineId);
  if (problem !== undefined) {
    const holder = problem.label === LABELS.machine
      ? `a container of Machine "${problem.found}" (label "${problem.label}")`
      : `a container Ployz does not own (label "${problem.label}" is ${
        problem.found === "" ? "missing" : `"${problem.found}"`
      })`;
    throw new DockerError(
      "conflict",
      `Cannot create container "${spec.name}": the name is taken by ${holder}`,
      {
        details: { container: name, label: problem.label, expected: problem.expected, found: problem.found },
      },
    );
  }
  const key = labels?.[LABELS.creationKey] ?? "";
  if (key !== spec.creationKey) {
    throw new DockerError(
      "conflict",
      `Cannot create container "${spec.name}": the name is taken by another Ployz container (creation key "${key}")`,
      { details: { container: name, label: LABELS.creationKey, expected: spec.creationKey, found: key } },
    );
  }
  const digest = labels?.[LABELS.specDigest] ?? "";
  const wanted = specDigest(spec);
  if (digest !== wanted) {
    throw new DockerError(
      "conflict",
      `Cannot create container "${spec.name}": creation key "${spec.creationKey}" already names container "${name}" with another spec`,
      { details: { container: name, label: LABELS.specDigest, expected: wanted, found: digest } },
    );
  }
  return { id: inspect.Id, name, created: false, specDigest: digest };
}

/**
 * Creates the container a spec describes, or returns the one its creation key already names (a retry). Refuses a
 * name held by a container Ployz does not own, a missing image, and a network or volume this Machine does not own.
 */
export async function createContainer(
  client: Client,
  spec: ContainerSpec,
  signal?: AbortSignal,
  options: CreateOptions = {},
): Promise<CreatedContainer> {
  validateSpec(spec);
  const [prior] = options.checked === true
    ? []
    : await listOwnedSummaries(client, { creationKey: spec.creationKey }, signal);
  if (prior !== undefined) {
    const inspect = await inspectRaw(client, prior.Id, signal);
    if (inspect !== undefined) return existing(client, spec, inspect);
  }
  if (options.checked !== true) {
    // Checked just before: a name taken since is Docker's conflict on create, answered below the same way.
    const byName = await inspectRaw(client, spec.name, signal);
    if (byName !== undefined) return existing(client, spec, byName);
  }
  if (options.checked !== true && !await imageExists(client, options.image ?? spec.image, signal)) {
    throw new DockerError(
      "not_found",
      `Cannot create container "${spec.name}": image "${spec.image}" is not on this Machine`,
      {
        details: { container: spec.name, image: spec.image },
      },
    );
  }
  if (options.networkChecked !== true) await checkNetwork(client, spec, signal);
  for (const mount of spec.mounts ?? []) {
    if (mount.type === "volume" && mount.source !== "" && mount.provisionedBytes === undefined) {
      await ensureVolume(client, mount.source, spec.project, signal);
    }
  }
  try {
    const made = await request(client, {
      operation: `create container "${spec.name}"`,
      cls: "create",
      signal,
    }, {
      method: "POST",
      path: "/containers/create",
      query: { name: spec.name },
      body: toCreateBody(spec, client.machineId, {
        log: client.log,
        extraLabels: client.extraLabels,
        dns: options.dns,
        filesDir: options.filesDir,
        image: options.image,
        volumePaths: options.volumePaths,
      }),
    }) as { Id: string };
    return { id: made.Id, name: spec.name, created: true, specDigest: specDigest(spec) };
  } catch (error) {
    if (error instanceof DockerError && error.code === "conflict") {
      const now = await inspectRaw(client, spec.name, signal);
      if (now !== undefined) return existing(client, spec, now);
    }
    throw error;
  }
}

/**
 * Starts an owned container; one already running is left as it is. `created` says `ref` is the id of a container
 * this Machine created a moment ago (its own, by construction): it is started without being inspected first.
 */
export async function startContainer(
  client: Client,
  ref: string,
  signal?: AbortSignal,
  created?: { name: string },
): Promise<void> {
  const target = created === undefined ? await ownedTarget(client, "start", ref, signal) : undefined;
  const name = created?.name ?? displayName(target!);
  await request(client, { operation: `start container "${name}"`, cls: "start", signal }, {
    method: "POST",
    path: `/containers/${seg(target?.Id ?? ref)}/start`,
    alsoOk: [304],
  });
}

/**
 * Stops an owned container: its stop signal, then a kill after `graceSeconds` (default: the container's own stop
 * timeout, else 10 s). One already stopped is left as it is.
 */
export async function stopContainer(
  client: Client,
  ref: string,
  options: { graceSeconds?: number; signal?: AbortSignal } = {},
): Promise<void> {
  const target = await ownedTarget(client, "stop", ref, options.signal);
  const grace = options.graceSeconds ?? target.Config?.StopTimeout ?? 10;
  if (!Number.isInteger(grace) || grace < 0) {
    throw new DockerError("invalid_argument", `Invalid stop grace for container "${ref}": ${grace}`);
  }
  await request(client, {
    operation: `stop container "${displayName(target)}"`,
    cls: "stop",
    graceSeconds: grace,
    signal: options.signal,
  }, { method: "POST", path: `/containers/${seg(target.Id)}/stop`, query: { t: grace }, alsoOk: [304] });
}

/**
 * Removes an owned container. A running one is refused by Docker unless `force` (which kills it without grace).
 * Its anonymous volumes stay; named volumes are never touched.
 */
export async function removeContainer(
  client: Client,
  ref: string,
  options: { force?: boolean; signal?: AbortSignal } = {},
): Promise<void> {
  const target = await ownedTarget(client, "remove", ref, options.signal);
  await request(client, {
    operation: `remove container "${displayName(target)}"`,
    cls: "remove",
    signal: options.signal,
  }, {
    method: "DELETE",
    path: `/containers/${seg(target.Id)}`,
    // v: anonymous volumes go with their container, as Compose does; named volumes are never touched by it.
    query: { force: options.force === true, v: true },
  });
}

/** Renames an owned container. */
export async function renameContainer(
  client: Client,
  ref: string,
  name: string,
  signal?: AbortSignal,
): Promise<void> {
  if (!/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$/.test(name)) {
    throw new DockerError(
      "invalid_argument",
      `Cannot rename container "${ref}": name "${name}" is not valid`,
    );
  }
  const target = await ownedTarget(client, "rename", ref, signal);
  await request(client, {
    operation: `rename container "${displayName(target)}" to "${name}"`,
    cls: "create",
    signal,
  }, {
    method: "POST",
    path: `/containers/${seg(target.Id)}/rename`,
    query: { name },
  });
}

/** Attaches an owned container to an owned network, with DNS aliases on it. */
export async function connectNetwork(
  client: Client,
  ref: string,
  attachment: { network: string; aliases?: string[]; ipv4Address?: string },
  signal?: AbortSignal,
): Promise<void> {
  const target = await ownedTarget(client, "connect", ref, signal);
  const network = await findNetwork(client, attachment.network, signal);
  if (network === undefined) {
    throw new DockerError(
      "not_found",
      `Cannot connect container "${displayName(target)}": network "${attachment.network}" does not exist`,
    );
  }
  assertOwned("attach a container to", "network", attachment.network, network.Labels, client.machineId);
  await request(client, {
    operation: `connect container "${displayName(target)}" to network "${attachment.network}"`,
    cls: "create",
    signal,
  }, {
    method: "POST",
    path: `/networks/${seg(network.Id)}/connect`,
    body: {
      Container: target.Id,
      EndpointConfig: {
        Aliases: attachment.aliases,
        IPAMConfig: attachment.ipv4Address === undefined
          ? undefined
          : { IPv4Address: attachment.ipv4Address },
      },
    },
  });
}
