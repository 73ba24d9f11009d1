/**
 * The build context uploads a Machine holds (`ployz.image.build_upload.v1`): one file per upload under the builds
 * directory, written piece by piece at the offsets the sender gives, at most {@link MAX_OPEN_UPLOADS} at once and
 * {@link MAX_BUILD_CONTEXT} bytes each. An upload no piece or build has touched for the idle bound is removed: its
 * sender went away, and a re-run sends under a new id. Files older than an hour are swept when a new upload opens.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { join } from "node:path";
import { type BuildUploadRequest, MAX_BUILD_CONTEXT, RpcError } from "../rpc/mod.ts";

/** Most uploads a Machine holds at once. */
export const MAX_OPEN_UPLOADS = 8;
/** An upload untouched this long is removed. */
const STALE_UPLOAD_MS = 60 * 60 * 1000;

/** Where the uploads live and how long an untouched one is kept. */
export interface UploadsHost {
  readonly buildsDir: string;
  /** How long an upload waits for its next piece or its build. */
  readonly idleMs: number;
  /** This Machine's name, for refusals. */
  machineName(): string;
  /** Aborts when the daemon stops: idle timers are dropped. */
  readonly stopping: AbortSignal;
  log(line: string): void;
}

/** This Machine's build uploads; see the module comment. */
export class BuildUploads {
  readonly #host: UploadsHost;
  readonly #idle = new Map<string, ReturnType<typeof setTimeout>>();

  /** Uploads under `host.buildsDir`, created on first use. */
  constructor(host: UploadsHost) {
    this.#host = host;
    host.stopping.addEventListener("abort", () => {
      for (const upload of [...this.#idle.keys()]) this.settle(upload);
    }, { once: true });
  }

  /** The file an upload is written to. */
  path(upload: string): string {
    return join(this.#host.buildsDir, `${upload}.tar`);
  }

  /** Its build came: the upload is no longer removed for idleness. */
  settle(upload: string): void {
    clearTimeout(this.#idle.get(upload));
    this.#idle.delete(upload);
  }

  /** Removes the upload's file, if there is one. */
  async remove(upload: string): Promise<void> {
    await Deno.remove(this.path(upload)).catch(() => {});
  }

  /**
   * Writes one piece at its offset (a piece sent again after a lost answer overwrites from there); refuses a gap,
   * a context over the limit, and a new upload beyond {@link MAX_OPEN_UPLOADS}. Answers the bytes received so far.
   */
  async write(req: BuildUploadRequest): Promise<{ received: number }> {
    const path = this.path(req.upload);
    const existing = await Deno.stat(path).catch(() => undefined);
    if (existing === undefined) {
      const open = await this.#sweep();
      if (open >= MAX_OPEN_UPLOADS) {
        throw new RpcError(
          "busy",
          `Machine "${this.#host.machineName()}" holds ${open} build uploads already; try again when one has been built`,
        );
      }
    }
    const size = existing?.size ?? 0;
    if (req.offset > size) {
      throw new RpcError(
        "conflict",
        `Upload "${req.upload}" holds ${size} bytes; a piece at offset ${req.offset} leaves a gap`,
        { details: { received: size } },
      );
    }
    const bytes = Uint8Array.from(atob(req.data), (c) => c.charCodeAt(0));
    if (req.offset + bytes.length > MAX_BUILD_CONTEXT) {
      throw new RpcError(
        "invalid_argument",
        `A build context is limited to ${MAX_BUILD_CONTEXT} bytes on this Machine`,
        { details: { limit: MAX_BUILD_CONTEXT } },
      );
    }
    using file = await Deno.open(path, { write: true, create: true, mode: 0o600 });
    await file.truncate(req.offset);
    await file.seek(req.offset, Deno.SeekMode.Start);
    let written = 0;
    while (written < bytes.length) written += await file.write(bytes.subarray(written));
    this.#watch(req.upload);
    return { received: req.offset + bytes.length };
  }

  /** Whether the upload holds exactly `bytes` bytes with this SHA-256; how many it holds (none: no file). */
  async complete(upload: string, bytes: number, sha256: string): Promise<{ ok: boolean; size?: number }> {
    const path = this.path(upload);
    const size = (await Deno.stat(path).catch(() => undefined))?.size;
    return { ok: size !== undefined && size === bytes && await sha256Of(path) === sha256, size };
  }

  // Removes the upload unless another piece or its build comes first.
  #watch(upload: string): void {
    this.settle(upload);
    const timer = setTimeout(() => {
      this.#idle.delete(upload);
      Deno.remove(this.path(upload)).then(
        () => this.#host.log(`removed build upload "${upload}": nothing came for it`),
        () => {},
      );
    }, this.#host.idleMs);
    Deno.unrefTimer(timer);
    this.#idle.set(upload, timer);
  }

  // Makes the directory, removes uploads untouched for an hour, and counts the others.
  async #sweep(): Promise<number> {
    const dir = this.#host.buildsDir;
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    let open = 0;
    for await (const entry of Deno.readDir(dir)) {
      const path = join(dir, entry.name);
      const info = await Deno.stat(path).catch(() => undefined);
      if (info === undefined) continue;
      if (Date.now() - (info.mtime?.getTime() ?? 0) > STALE_UPLOAD_MS) {
        await Deno.remove(path).catch(() => {});
      } else open++;
    }
    return open;
  }
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash("sha256");
  using file = await Deno.open(path);
  for await (const chunk of file.readable) hash.update(chunk);
  return hash.digest("hex");
}
