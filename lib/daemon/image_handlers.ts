/**
 * The image routes of Machine RPC: `ployz.image.inspect.v1` says whether an image is here, and image transfer
 * between Machines: `ployz.image.export.v1` streams `docker save` of an image this Machine has, and
 * `ployz.image.pull_from_peer.v1` fetches that stream from a named peer over the mesh and `docker load`s it here,
 * bounded by a deadline (the caller's patience, not a safety wait), reporting bytes and time. A Machine that
 * already has the image fetches nothing. The peer only exports what it has; this Machine decides and loads.
 *
 * @module
 */

import type { Engine } from "../deploy/machine/mod.ts";
import {
  type ListedImageView,
  PEER_PULL_DEFAULT_MS,
  PROTOCOL_MAJOR,
  type PruneImagesResponse,
  type PullFromPeerResponse,
  RpcError,
  type RpcHandlers,
} from "../rpc/mod.ts";
import { CodedError } from "../util/mod.ts";
import { type ForwardTarget, readErrorResponse } from "./forward.ts";
import { localImage, type PulledImages, PullTasks, tagAsWritten } from "./image_pulls.ts";

/** This Machine's images, with which Ployz pulled and which containers use them. */
async function listed(host: ImageHost, signal: AbortSignal): Promise<ListedImageView[]> {
  const [images, users, pulled] = await Promise.all([
    host.engine.listImages(signal),
    host.engine.containerImages(signal),
    host.pulled.ids(),
  ]);
  const self = host.self().id;
  return images.map((image) => {
    const here = users.filter((u) => u.imageId === image.id);
    const ours = here.filter((u) => u.machine === self && u.project !== undefined && u.service !== undefined);
    return {
      id: image.id,
      tags: image.tags,
      digests: image.digests,
      size: image.size,
      owned: pulled.has(image.id),
      "used_by": [...new Set(ours.map((u) => `${u.project}/${u.service}`))].sort(),
      "other_containers": here.length - ours.length,
    };
  });
}

/** What the image handlers need from the daemon. */
export interface ImageHost {
  /** This Machine's Docker. */
  readonly engine: Engine;
  /** This Machine's id and name. */
  self(): { id: string; name: string };
  /** A peer's mesh listener, or `undefined` when this Machine holds no row for it. */
  resolve(machineId: string): ForwardTarget | undefined;
  /** Aborts when the daemon stops. */
  readonly stopping: AbortSignal;
  /** One line per notable event. */
  log(line: string): void;
  /** The record of images Ployz pulled, copied or built here. */
  readonly pulled: PulledImages;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A stream that counts what passes through it. */
function counting(): { stream: TransformStream<Uint8Array, Uint8Array>; bytes: () => number } {
  let bytes = 0;
  return {
    stream: new TransformStream({
      transform(chunk, controller): void {
        bytes += chunk.byteLength;
        controller.enqueue(chunk);
      },
    }),
    bytes: () => bytes,
  };
}

/** The handlers of the image routes. */
export type ImageHandlers = Pick<
  RpcHandlers,
  | "inspectImage"
  | "exportImage"
  | "pullImageFromPeer"
  | "resolveImage"
  | "pullImage"
  | "listImages"
  | "pruneImages"
>;

/** The default wait of one `ployz.image.pull.v1` call. */
const PULL_WAIT_DEFAULT_MS = 2_000;

/** The image route handlers: inspect, export, peer-pull, registry resolve and pull, list and prune. */
export function imageHandlers(host: ImageHost): ImageHandlers {
  const pulls = new PullTasks({
    engine: host.engine,
    machineId: () => host.self().id,
    pulled: host.pulled,
    stopping: host.stopping,
    log: host.log,
  });
  return {
    async inspectImage(req, ctx) {
      const image = await localImage(host.engine, host.pulled, req.ref, ctx.signal);
      return image === undefined
        ? { present: false }
        : { present: true, id: image.id, "repo_digests": image.repoDigests.slice(0, 256) };
    },
    async resolveImage(req, ctx) {
      const digest = await host.engine.resolveDigest(req.ref, { auth: req.auth, signal: ctx.signal });
      return { ref: req.ref, digest };
    },
    async pullImage(req, ctx) {
      if (!/@sha256:[a-f0-9]{64}$/.test(req.ref)) {
        throw new RpcError(
          "invalid_argument",
          `Cannot pull image "${req.ref}": pull a reference pinned to a digest`,
          {
            details: { field: "ref" },
          },
        );
      }
      return await pulls.pull(req.ref, req.auth, req.wait_ms ?? PULL_WAIT_DEFAULT_MS, ctx.signal);
    },
    async listImages(_req, ctx) {
      return { "machine_id": host.self().id, images: await listed(host, ctx.signal) };
    },
    async pruneImages(req, ctx) {
      const images = await listed(host, ctx.signal);
      const out: PruneImagesResponse = {
        "machine_id": host.self().id,
        removed: [],
        "kept_in_use": 0,
        "kept_not_owned": 0,
        failed: [],
      };
      for (const image of images) {
        if (image.used_by.length > 0 || image.other_containers > 0) out.kept_in_use++;
        else if (!image.owned && req.all !== true) out.kept_not_owned++;
        else if (req.dry_run === true) out.removed.push({ id: image.id, tags: image.tags, size: image.size });
        else {
          try {
            await host.engine.removeImage(image.id, ctx.signal);
            out.removed.push({ id: image.id, tags: image.tags, size: image.size });
          } catch (error) {
            out.failed.push({ id: image.id, message: messageOf(error) });
          }
        }
      }
      if (req.dry_run !== true && out.removed.length > 0) {
        await host.pulled.remove(out.removed.map((r) => r.id));
        host.log(`pruned ${out.removed.length} image(s)`);
      }
      return out;
    },
    async exportImage(req, ctx) {
      const image = await localImage(host.engine, host.pulled, req.ref, ctx.signal);
      return await host.engine.saveImage(
        image?.dockerRef ?? req.ref,
        AbortSignal.any([ctx.signal, host.stopping]),
      );
    },
    async pullImageFromPeer(req, ctx): Promise<PullFromPeerResponse> {
      const self = host.self();
      const base = { "machine_id": self.id, ref: req.ref, "from_machine_id": req.from_machine_id };
      if (req.from_machine_id === self.id) {
        throw new RpcError(
          "invalid_argument",
          `Cannot pull image "${req.ref}" from Machine "${self.name}" itself`,
          {
            details: { field: "from_machine_id" },
          },
        );
      }
      if (await localImage(host.engine, host.pulled, req.ref, ctx.signal) !== undefined) {
        return { ...base, transferred: false, bytes: 0, "duration_ms": 0, loaded: [] };
      }
      const peer = host.resolve(req.from_machine_id);
      if (peer === undefined) {
        throw new RpcError(
          "not_found",
          `Cannot pull image "${req.ref}": Machine "${self.name}" holds no row for Machine "${req.from_machine_id}"`,
          { details: { "from_machine_id": req.from_machine_id } },
        );
      }
      const timeoutMs = req.timeout_ms ?? PEER_PULL_DEFAULT_MS;
      const deadline = AbortSignal.timeout(timeoutMs);
      const signal = AbortSignal.any([ctx.signal, host.stopping, deadline]);
      const started = performance.now();
      const counter = counting();
      try {
        const response = await fetch(`http://${peer.hostname}:${peer.port}/rpc/ployz.image.export.v1`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ "protocol_major": PROTOCOL_MAJOR, ref: req.ref }),
          signal,
        });
        if (!response.ok) {
          const error = await readErrorResponse(response, `Machine "${peer.name}"`);
          throw new RpcError(
            error.code,
            `Machine "${peer.name}" cannot export image "${req.ref}": ${error.message}`,
            { details: { ...error.details, "from_machine_id": req.from_machine_id } },
          );
        }
        const archive = (response.body ?? new ReadableStream({ start: (c) => c.close() }))
          .pipeThrough(counter.stream);
        const loaded = await host.engine.loadImage(archive, signal);
        // An archive of a pinned reference names no tag (docker save keeps no digest): its id is the alias.
        const loadedId = loaded.images.find((i) => /^sha256:[a-f0-9]{64}$/.test(i));
        if (/@sha256:[a-f0-9]{64}$/.test(req.ref) && loadedId !== undefined) {
          await host.pulled.add(loadedId, req.ref);
          await tagAsWritten(host.engine, req.ref, loadedId);
        }
        if (await localImage(host.engine, host.pulled, req.ref, signal) === undefined) {
          throw new RpcError(
            "internal",
            `Loaded ${
              loaded.images.join(", ")
            } from Machine "${peer.name}" but image "${req.ref}" is still absent`,
            { details: { loaded: loaded.images } },
          );
        }
        const copied = await localImage(host.engine, host.pulled, req.ref, signal);
        if (copied !== undefined) await host.pulled.add(copied.id);
        const durationMs = Math.round(performance.now() - started);
        host.log(`pulled image "${req.ref}" from ${peer.name}: ${counter.bytes()} bytes in ${durationMs} ms`);
        return {
          ...base,
          transferred: true,
          bytes: counter.bytes(),
          "duration_ms": durationMs,
          loaded: loaded.images,
        };
      } catch (error) {
        if (deadline.aborted && !ctx.signal.aborted) {
          throw new RpcError(
            "unavailable",
            `Cannot pull image "${req.ref}" from Machine "${peer.name}" within ${timeoutMs} ms: ${counter.bytes()} bytes arrived`,
            { details: { bytes: counter.bytes(), "from_machine_id": req.from_machine_id } },
          );
        }
        if (error instanceof RpcError) throw error;
        if (error instanceof CodedError) throw error;
        throw new RpcError(
          "unavailable",
          `Cannot pull image "${req.ref}" from Machine "${peer.name}" at ${peer.hostname}:${peer.port}: ${
            messageOf(error)
          }`,
          { details: { bytes: counter.bytes(), "from_machine_id": req.from_machine_id }, cause: error },
        );
      }
    },
  };
}
