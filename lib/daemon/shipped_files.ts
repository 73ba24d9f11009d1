/**
 * The Machine's copies of files containers are shipped (Compose secrets, configs, relative binds): written from the
 * content an ensure request carries, checked against the digest the spec names, under `<filesDir>/<project>/`, and
 * bind-mounted read-only by the container. Copies are content-addressed, so a retry or a second slot with the same
 * file needs no content. Content is never logged and never answered back.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { type ContainerSpec, type Engine, fileCopyName, LABELS } from "../deploy/machine/mod.ts";
import { RpcError } from "../rpc/mod.ts";
import { writeFileAtomic } from "../util/mod.ts";

async function present(path: string): Promise<boolean> {
  try {
    return (await Deno.lstat(path)).isFile;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** Writes every file `spec` ships that this Machine does not hold yet; refuses a missing or mismatched content. */
export async function materializeFiles(
  filesDir: string | undefined,
  spec: ContainerSpec,
  contents: Readonly<Record<string, string>> | undefined,
): Promise<void> {
  const files = spec.files ?? [];
  if (files.length === 0) return;
  if (filesDir === undefined) {
    throw new RpcError("unsupported", `Container "${spec.name}" ships files, and this Machine keeps none`);
  }
  // Traversable, not listable: a container's non-root user reaches its own file by name only.
  await Deno.mkdir(filesDir, { recursive: true, mode: 0o711 });
  const dir = join(filesDir, spec.project);
  await Deno.mkdir(dir, { recursive: true, mode: 0o711 });
  for (const file of files) {
    const path = join(dir, fileCopyName(file));
    if (await present(path)) continue;
    const encoded = contents?.[file.digest];
    if (encoded === undefined) {
      throw new RpcError(
        "invalid_argument",
        `Container "${spec.name}" needs the file it mounts at "${file.target}", whose content was not sent: deploy from the Compose file again`,
        { details: { container: spec.name, target: file.target } },
      );
    }
    const bytes = Buffer.from(encoded, "base64");
    const digest = `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
    if (digest !== file.digest) {
      throw new RpcError(
        "invalid_argument",
        `The content sent for "${file.target}" of container "${spec.name}" does not match its digest`,
        { details: { container: spec.name, target: file.target } },
      );
    }
    // Durable before it takes its name: a copy is content-addressed, so a torn one would never be written again.
    await writeFileAtomic(path, bytes, {
      mode: file.mode ?? 0o444,
      owner: file.uid !== undefined || file.gid !== undefined
        ? { uid: file.uid ?? 0, gid: file.gid ?? 0 }
        : undefined,
    });
  }
}

/**
 * Runs `body` alone among the calls for `project`: a copy written for a new container is never pruned by the
 * removal of the Project's last old one.
 */
export function projectLock(): <T>(project: string, body: () => Promise<T>) => Promise<T> {
  const tails = new Map<string, Promise<unknown>>();
  return <T>(project: string, body: () => Promise<T>): Promise<T> => {
    const run = (tails.get(project) ?? Promise.resolve()).then(body, body);
    const tail = run.catch(() => {});
    tails.set(project, tail);
    void tail.then(() => {
      if (tails.get(project) === tail) tails.delete(project);
    });
    return run;
  };
}

/** Removes a Project's copies once no container of that Project is left on this Machine: they go with it. */
export async function pruneFiles(
  filesDir: string | undefined,
  project: string | undefined,
  engine: Engine,
  signal?: AbortSignal,
): Promise<void> {
  if (filesDir === undefined || project === undefined || !/^[a-z0-9][a-z0-9_-]{0,62}$/.test(project)) return;
  const left = await engine.listOwned({ project }, signal);
  if (left.length > 0) return;
  await Deno.remove(join(filesDir, project), { recursive: true }).catch((error) => {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  });
}

/** The Project label of an owned container, for {@linkcode pruneFiles}. */
export function projectOf(labels: Readonly<Record<string, string>> | undefined): string | undefined {
  return labels?.[LABELS.project];
}
