/**
 * The build routes: `ployz.image.build_upload.v1` stores pieces of a context tar under `<buildsDir>/`, and
 * `ployz.image.build.v1` builds it with this Machine's Docker, streaming the output as NDJSON frames.
 *
 * Build admission: a Machine whose record says `accepts_builds: false` refuses (`conflict`, naming the flag).
 * Builds of one Project on one Machine run one at a time: a second one **waits** (a `waiting` frame says so) rather
 * than refusing `busy`, because the usual second build is the same Deploy run again, and once the first finishes
 * the second finds the image already built and answers at once. After the wait the acceptance flag is checked
 * again; a build already admitted finishes even if the flag changes meanwhile.
 *
 * An upload no piece or build has touched for {@link UPLOAD_IDLE_MS} is removed: its sender went away (killed
 * mid-upload, or cut off), and a re-run sends under a new id. A built image's id joins the record of images Ployz
 * brought here, so `ployz image prune` and `ployz cleanup` remove it once no container uses it.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { join } from "node:path";
import { BuildError, type Engine } from "../deploy/machine/mod.ts";
import {
  type BuildFrame,
  type BuildRequest,
  MAX_BUILD_CONTEXT,
  RpcError,
  type RpcHandlers,
} from "../rpc/mod.ts";
import { CodedError } from "../util/mod.ts";

/** Most uploads a Machine holds at once. */
export const MAX_OPEN_UPLOADS = 8;
/** An upload untouched this long is removed. */
const STALE_UPLOAD_MS = 60 * 60 * 1000;
/** The longest a build may run. */
export const BUILD_MAX_MS = 30 * 60 * 1000;
/** An upload whose next piece or build has not come this long after its last piece is abandoned and removed. */
export const UPLOAD_IDLE_MS = 30 * 1000;

/**
 * `PLOYZ_BUILD_UPLOAD_IDLE_MS` (a whole number from 1000 to {@link UPLOAD_IDLE_MS}), else {@link UPLOAD_IDLE_MS}:
 * tests lower how long an abandoned upload is kept. A value outside that range is ignored.
 */
export function uploadIdleMsFromEnv(
  env: (name: string) => string | undefined = (n) => Deno.env.get(n),
): number {
  const ms = Number(env("PLOYZ_BUILD_UPLOAD_IDLE_MS") ?? NaN);
  return Number.isInteger(ms) && ms >= 1000 && ms <= UPLOAD_IDLE_MS ? ms : UPLOAD_IDLE_MS;
}

/** What the build handlers need from the daemon. */
export interface BuildHost {
  /** This Machine's Docker. */
  readonly engine: Engine;
  /** This Machine's name and whether its record accepts Builds (absent: it does). */
  record(): { name: string; "accepts_builds"?: unknown };
  /** Where uploads are kept; created on first use. */
  readonly buildsDir: string;
  /** Aborts when the daemon stops. */
  readonly stopping: AbortSignal;
  /** One line per notable event. */
  log(line: string): void;
  /** The record of images Ployz brought here; a built image is added. */
  readonly pulled: { add(id: string): Promise<void> };
  /** {@link UPLOAD_IDLE_MS}, lowered by tests. */
  readonly uploadIdleMs?: number;
}

/** The handlers of the build routes. */
export type BuildHandlers = Pick<RpcHandlers, "buildUpload" | "buildImage">;

function refuseUnlessAccepting(host: BuildHost): void {
  const record = host.record();
  if (record.accepts_builds === false) {
    throw new RpcError(
      "conflict",
      `Machine "${record.name}" does not accept Builds (its "accepts_builds" flag is off): pick another with --builder`,
      { details: { flag: "accepts_builds", machine: record.name } },
    );
  }
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash("sha256");
  using file = await Deno.open(path);
  for await (const chunk of file.readable) hash.update(chunk);
  return hash.digest("hex");
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The build route handlers. */
export function buildHandlers(host: BuildHost): BuildHandlers {
  const running = new Map<string, Promise<void>>();
  const uploadPath = (upload: string): string => join(host.buildsDir, `${upload}.tar`);
  const idle = new Map<string, ReturnType<typeof setTimeout>>();
  const settle = (upload: string): void => {
    clearTimeout(idle.get(upload));
    idle.delete(upload);
  };
  // Removes the upload unless another piece or its build comes first.
  const watch = (upload: string): void => {
    settle(upload);
    const timer = setTimeout(() => {
      idle.delete(upload);
      Deno.remove(uploadPath(upload)).then(
        () => host.log(`removed build upload "${upload}": nothing came for it`),
        () => {},
      );
    }, host.uploadIdleMs ?? UPLOAD_IDLE_MS);
    Deno.unrefTimer(timer);
    idle.set(upload, timer);
  };
  host.stopping.addEventListener("abort", () => {
    for (const upload of [...idle.keys()]) settle(upload);
  }, { once: true });

  async function prepareDir(): Promise<number> {
    await Deno.mkdir(host.buildsDir, { recursive: true, mode: 0o700 });
    let open = 0;
    for await (const entry of Deno.readDir(host.buildsDir)) {
      const path = join(host.buildsDir, entry.name);
      const info = await Deno.stat(path).catch(() => undefined);
      if (info === undefined) continue;
      if (Date.now() - (info.mtime?.getTime() ?? 0) > STALE_UPLOAD_MS) {
        await Deno.remove(path).catch(() => {});
      } else open++;
    }
    return open;
  }

  async function build(
    req: BuildRequest,
    signal: AbortSignal,
    send: (frame: BuildFrame) => void,
  ): Promise<void> {
    const started = performance.now();
    const path = uploadPath(req.upload);
    try {
      const info = await Deno.stat(path).catch(() => undefined);
      if (info === undefined || info.size !== req.bytes || await sha256Of(path) !== req.sha256) {
        throw new RpcError(
          "invalid_argument",
          `The build context of service "${req.service}" arrived incomplete or changed: ${
            info?.size ?? 0
          } of ${req.bytes} bytes, checksum ${
            info?.size === req.bytes ? "differs" : "not checked"
          }; send it again`,
        );
      }
      const file = await Deno.open(path);
      const built = await host.engine.buildImage(file.readable, {
        tags: req.tags,
        dockerfile: req.dockerfile,
        args: req.args,
        target: req.target,
        // No label of Ployz's own: the classic builder runs one more step per label, and the first tag already
        // carries the content digest.
        labels: req.labels,
        cacheFrom: req.cache_from,
        noCache: req.no_cache,
        onLine: (text) => send({ type: "log", text }),
        signal,
      });
      await host.pulled.add(built.imageId);
      const durationMs = Math.round(performance.now() - started);
      host.log(`built image "${req.tags[0]}" for ${req.project}/${req.service} in ${durationMs} ms`);
      send({ type: "done", "image_id": built.imageId, "duration_ms": durationMs, built: true });
    } finally {
      await Deno.remove(path).catch(() => {});
    }
  }

  return {
    async buildUpload(req) {
      refuseUnlessAccepting(host);
      const path = uploadPath(req.upload);
      const existing = await Deno.stat(path).catch(() => undefined);
      if (existing === undefined) {
        const open = await prepareDir();
        if (open >= MAX_OPEN_UPLOADS) {
          throw new RpcError(
            "busy",
            `Machine "${host.record().name}" holds ${open} build uploads already; try again when one has been built`,
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
      // A piece sent again (after a lost answer) overwrites from its offset.
      await file.truncate(req.offset);
      await file.seek(req.offset, Deno.SeekMode.Start);
      let written = 0;
      while (written < bytes.length) written += await file.write(bytes.subarray(written));
      watch(req.upload);
      return { received: req.offset + bytes.length };
    },
    async buildImage(req, ctx) {
      settle(req.upload);
      try {
        refuseUnlessAccepting(host);
      } catch (error) {
        await Deno.remove(uploadPath(req.upload)).catch(() => {});
        throw error;
      }
      const signal = AbortSignal.any([ctx.signal, host.stopping, AbortSignal.timeout(BUILD_MAX_MS)]);
      const encoder = new TextEncoder();
      return new ReadableStream<Uint8Array>({
        start(controller): void {
          const send = (frame: BuildFrame): void => {
            try {
              controller.enqueue(encoder.encode(JSON.stringify(frame) + "\n"));
            } catch {
              // The caller went away; the build is cancelled through `signal`.
            }
          };
          // A caller that asks hears from this Machine at least this often, building or waiting.
          const beat = req.heartbeat_ms === undefined ? undefined : setInterval(
            () => send({ type: "alive" }),
            req.heartbeat_ms,
          );
          if (beat !== undefined) send({ type: "alive" });
          const key = req.project;
          const run = async (): Promise<void> => {
            const ahead = running.get(key);
            if (ahead !== undefined) {
              send({
                type: "waiting",
                text:
                  `another build of Project "${req.project}" runs on Machine "${host.record().name}"; this one waits for it`,
              });
              while (running.has(key)) await running.get(key)?.catch(() => {});
            }
            let release!: () => void;
            running.set(key, new Promise<void>((resolve) => release = resolve));
            try {
              // Admission is checked again after the wait; a build admitted before a change may finish.
              refuseUnlessAccepting(host);
              // The first tag is the content digest: present, the build already happened (usually the one waited for).
              const id = req.no_cache ? undefined : await host.engine.imageId(req.tags[0], signal);
              if (id !== undefined) {
                await Deno.remove(uploadPath(req.upload)).catch(() => {});
                send({ type: "done", "image_id": id, "duration_ms": 0, built: false });
                return;
              }
              await build(req, signal, send);
            } finally {
              running.delete(key);
              release();
            }
          };
          run().catch((error) => {
            const tail = error instanceof BuildError ? error.tail : [];
            const code = error instanceof CodedError ? error.code : "internal";
            if (!(error instanceof CodedError)) {
              host.log(`build of ${req.project}/${req.service}: ${messageOf(error)}`);
            }
            send({ type: "failed", code, message: messageOf(error), tail });
          }).finally(async () => {
            clearInterval(beat);
            // Refused after the wait, or failed before building: the upload is of no further use.
            await Deno.remove(uploadPath(req.upload)).catch(() => {});
            try {
              controller.close();
            } catch {
              // Already cancelled by the caller.
            }
          });
        },
      });
    },
  };
}
