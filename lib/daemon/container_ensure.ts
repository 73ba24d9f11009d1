/**
 * Ensuring a container (`ployz.container.ensure.v1`, `ensure_with_files.v1`): found by its creation key, or
 * admitted against this Machine's own record and Docker and created; started when asked. A start refused over a
 * taken host port names the Machine, the port and, where this daemon can see it, the holder.
 *
 * @module
 */

import type { ContainerSpec } from "../deploy/machine/mod.ts";
import { type EnsureContainerResponse, RpcError } from "../rpc/mod.ts";
import { admit, asSpec, requireParticipating } from "./container_admission.ts";
import { type ContainerHost, observeContainer } from "./container_host.ts";
import type { LocalMachine } from "./machine_file.ts";
import { findPortHolder, hostProcRoot, portConflictMessage, portConflictOf } from "./port_holder.ts";
import { materializeFiles, type projectLock } from "./shipped_files.ts";

/** Serializes the file work of one Project on this Machine (shipped files are shared by its containers). */
export type FilesLock = ReturnType<typeof projectLock>;

/**
 * Finds by creation key, or admits and creates; starts when asked. `files` is the content of the files the spec
 * ships, by digest (`ensure_with_files.v1`); a copy this Machine already holds needs none (`ensure.v1` retries).
 */
export async function ensureContainer(
  host: ContainerHost,
  filesLock: FilesLock,
  req: { spec: object; start: boolean },
  files: Readonly<Record<string, string>> | undefined,
  signal: AbortSignal,
): Promise<EnsureContainerResponse> {
  const { engine } = host;
  const record = host.record();
  requireParticipating(record, "create a container");
  const spec = asSpec(req.spec);
  // While the Machine serves, containers resolve through its Internal DNS, searching their own Project.
  const hooks = host.serving();
  const localized = hooks?.localize(spec) ?? spec;
  const { found, image } = await foundOrAdmitted(host, record, spec, localized, signal);
  // Provisioned Volumes are admitted (and made) against this Machine's Pool; an existing container's are
  // looked up again, never made.
  const volumePaths = await volumesFor(host, spec, record.name);
  const made = await filesLock(spec.project, async () => {
    if (!found) await materializeFiles(host.filesDir, spec, files);
    return await engine.createContainer(
      localized,
      signal,
      {
        dns: hooks?.dns(spec.project),
        filesDir: host.filesDir,
        volumePaths,
        ...(image !== undefined && image !== spec.image ? { image } : {}),
        // Listed, found and checked above, a moment ago: no need to ask Docker twice.
        checked: !found,
        networkChecked: !found,
      },
    );
  });
  let started = false;
  if (req.start) {
    // A container made just now is not running yet; one found may be.
    const now = made.created ? undefined : await engine.inspectContainer(made.id, signal);
    if (now?.state !== "running") {
      await startExplained(host, made.id, signal, made.created ? { name: made.name } : undefined);
      started = true;
    }
  }
  const { container } = await observeContainer(host, made.id, signal);
  return { container, created: made.created, started };
}

/**
 * Whether a container already holds the spec's creation key; if none does, the spec is admitted here, the image
 * Docker knows it by on this Machine is found (or the ensure is refused with `not_found`), and the network the
 * localized spec attaches to is checked.
 */
async function foundOrAdmitted(
  host: ContainerHost,
  record: LocalMachine,
  spec: ContainerSpec,
  localized: ContainerSpec,
  signal: AbortSignal,
): Promise<{ found: boolean; image: string | undefined }> {
  const { engine } = host;
  // All reads, asked together: the image answer and the network check count only when no container holds the
  // creation key yet.
  const [[prior], local, network] = await Promise.all([
    engine.listOwned({ creationKey: spec.creationKey }, signal),
    host.imageFor === undefined
      ? engine.imageExists(spec.image, signal).then((found) => found ? spec.image : undefined)
      : host.imageFor(spec.image, signal),
    engine.checkNetwork(localized, signal).then(() => undefined, (error: unknown) => ({ error })),
  ]);
  if (prior !== undefined) return { found: true, image: spec.image };
  // Machine-local admission, against this Machine's own record and Docker, before anything is created.
  admit(record, spec);
  if (local === undefined) {
    throw new RpcError(
      "not_found",
      `Image "${spec.image}" is present nowhere on Machine "${record.name}"`,
      {
        details: { image: spec.image, "machine_id": record.id },
      },
    );
  }
  if (network !== undefined) throw network.error;
  return { found: false, image: local };
}

/** The host paths of the Provisioned Volumes a spec mounts; `unsupported` on a Machine that keeps none. */
async function volumesFor(
  host: ContainerHost,
  spec: ContainerSpec,
  machine: string,
): Promise<Record<string, string>> {
  if (!(spec.mounts ?? []).some((m) => m.provisionedBytes !== undefined)) return {};
  if (host.volumes === undefined) {
    throw new RpcError("unsupported", `Machine "${machine}" keeps no Provisioned Volumes`);
  }
  return await host.volumes.prepare(spec);
}

/** Starts a container; a start refused over a taken host port names the Machine, the port and the holder. */
export async function startExplained(
  host: ContainerHost,
  id: string,
  signal: AbortSignal,
  created?: { name: string },
): Promise<void> {
  try {
    await host.engine.startContainer(id, signal, created);
  } catch (error) {
    const conflict = portConflictOf((error as Error).message ?? "");
    if (conflict === null) throw error;
    const holder = conflict.by === "process"
      ? await findPortHolder(conflict.port, hostProcRoot())
      : undefined;
    const machine = host.record().name;
    throw new RpcError("conflict", portConflictMessage(conflict, machine, holder), {
      details: {
        machine,
        port: conflict.port,
        address: conflict.address,
        ...(holder === undefined ? {} : { holder: holder.command, pid: holder.pid }),
      },
      cause: error,
    });
  }
}
