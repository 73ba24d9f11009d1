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
  type PruneImagesRequest,
  type PruneImagesResponse,
  RpcError,
  type RpcHandlers,
} from "../rpc/mod.ts";
import type { ForwardTarget } from "./forward.ts";
import { pullFromPeer } from "./image_peer_pull.ts";
import { localImage, type PulledImages, PullTasks } from "./image_pulls.ts";
import { messageOf } from "../util/mod.ts";

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
    pruneImages: (req, ctx) => pruneImages(host, req, ctx.signal),
    async exportImage(req, ctx) {
      const image = await localImage(host.engine, host.pulled, req.ref, ctx.signal);
      return await host.engine.saveImage(
        image?.dockerRef ?? req.ref,
        AbortSignal.any([ctx.signal, host.stopping]),
      );
    },
    pullImageFromPeer: (req, ctx) => pullFromPeer(host, req, ctx.signal),
  };
}

/** Removes the images no container uses that Ployz brought here (every unused one with `all`); `dry_run` lists them. */
async function pruneImages(
  host: ImageHost,
  req: PruneImagesRequest,
  signal: AbortSignal,
): Promise<PruneImagesResponse> {
  const images = await listed(host, signal);
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
        await host.engine.removeImage(image.id, signal);
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
}
