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

import { BuildError, type Engine } from "../deploy/machine/mod.ts";
import { type BuildFrame, type BuildRequest, RpcError, type RpcHandlers } from "../rpc/mod.ts";
import { CodedError, messageOf } from "../util/mod.ts";
import { BuildUploads } from "./build_uploads.ts";

export { MAX_OPEN_UPLOADS } from "./build_uploads.ts";
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

/** The build route handlers. */
export function buildHandlers(host: BuildHost): BuildHandlers {
  const uploads = new BuildUploads({
    buildsDir: host.buildsDir,
    idleMs: host.uploadIdleMs ?? UPLOAD_IDLE_MS,
    machineName: () => host.record().name,
    stopping: host.stopping,
    log: (line) => host.log(line),
  });
  // The build of each Project running on this Machine now; a second one waits for it.
  const running = new Map<string, Promise<void>>();
  return {
    async buildUpload(req) {
      refuseUnlessAccepting(host);
      return await uploads.write(req);
    },
    async buildImage(req, ctx) {
      uploads.settle(req.upload);
      try {
        refuseUnlessAccepting(host);
      } catch (error) {
        await uploads.remove(req.upload);
        throw error;
      }
      const signal = AbortSignal.any([ctx.signal, host.stopping, AbortSignal.timeout(BUILD_MAX_MS)]);
      return frameStream(
        req,
        host,
        (send) => buildInTurn({ host, uploads, running }, req, signal, send),
        () =>
          // Refused after the wait, or failed before building: the upload is of no further use.
          uploads.remove(req.upload),
      );
    },
  };
}

/** What a build acts with: the daemon's host, the uploads, and the builds running by Project. */
interface BuildParts {
  host: BuildHost;
  uploads: BuildUploads;
  running: Map<string, Promise<void>>;
}

/**
 * The build's NDJSON frames: `alive` at the caller's heartbeat, what `run` sends, and one `failed` frame when it
 * throws; `done` runs when it ended either way, before the stream closes.
 */
function frameStream(
  req: BuildRequest,
  host: BuildHost,
  run: (send: (frame: BuildFrame) => void) => Promise<void>,
  done: () => Promise<void>,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    start(controller): void {
      const send = (frame: BuildFrame): void => {
        try {
          controller.enqueue(encoder.encode(JSON.stringify(frame) + "\n"));
        } catch {
          // The caller went away; the build is cancelled through its signal.
        }
      };
      // A caller that asks hears from this Machine at least this often, building or waiting.
      const beat = req.heartbeat_ms === undefined ? undefined : setInterval(
        () => send({ type: "alive" }),
        req.heartbeat_ms,
      );
      if (beat !== undefined) send({ type: "alive" });
      run(send).catch((error) => {
        const tail = error instanceof BuildError ? error.tail : [];
        const code = error instanceof CodedError ? error.code : "internal";
        if (!(error instanceof CodedError)) {
          host.log(`build of ${req.project}/${req.service}: ${messageOf(error)}`);
        }
        send({ type: "failed", code, message: messageOf(error), tail });
      }).finally(async () => {
        clearInterval(beat);
        await done();
        try {
          controller.close();
        } catch {
          // Already cancelled by the caller.
        }
      });
    },
  });
}

/**
 * Builds once no other build of the Project runs here (a `waiting` frame says it waits), checking admission again
 * after the wait; an image already built under the first tag (the content digest) answers at once.
 */
async function buildInTurn(
  parts: BuildParts,
  req: BuildRequest,
  signal: AbortSignal,
  send: (frame: BuildFrame) => void,
): Promise<void> {
  const { host, running } = parts;
  const key = req.project;
  if (running.has(key)) {
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
      await parts.uploads.remove(req.upload);
      send({ type: "done", "image_id": id, "duration_ms": 0, built: false });
      return;
    }
    await build(parts, req, signal, send);
  } finally {
    running.delete(key);
    release();
  }
}

/** Builds the uploaded context with this Machine's Docker, once it checks out whole; the upload goes after. */
async function build(
  { host, uploads }: BuildParts,
  req: BuildRequest,
  signal: AbortSignal,
  send: (frame: BuildFrame) => void,
): Promise<void> {
  const started = performance.now();
  try {
    const { ok, size } = await uploads.complete(req.upload, req.bytes, req.sha256);
    if (!ok) {
      throw new RpcError(
        "invalid_argument",
        `The build context of service "${req.service}" arrived incomplete or changed: ${
          size ?? 0
        } of ${req.bytes} bytes, checksum ${size === req.bytes ? "differs" : "not checked"}; send it again`,
      );
    }
    const file = await Deno.open(uploads.path(req.upload));
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
    await uploads.remove(req.upload);
  }
}
