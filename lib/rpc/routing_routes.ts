/**
 * Routing and image routes of Machine RPC, merged into the catalog.
 *
 * Forwarding (`ployz.machine.forward.v1`). The Entry Machine relays one call to another Machine of its Cluster over
 * the mesh and relays the answer back unchanged: JSON or a stream, success or the target's own error body. It never
 * decides for the target (docs/bets.md, bet 6); it refuses only what it cannot relay (a Machine it holds no row for,
 * one it cannot connect to). Two spellings reach the same relay:
 * - `POST /rpc/via/<machine_id>/<capability>` with the target's own envelope as the body. Clients use this one: the
 *   body is never re-encoded, and the answer (status, content type, error body naming the target's capability) is
 *   the target's, byte for byte.
 * - `POST /rpc/ployz.machine.forward.v1` with `{ machine_id, capability, body }`, for callers that can only name
 *   catalog rows. Its refusals name `ployz.machine.forward.v1` (rule 7) and keep the target's capability in
 *   `details.target_capability`.
 *
 * Images. `ployz.image.export.v1` streams `docker save` of an image the Machine has;
 * `ployz.image.pull_from_peer.v1` asks a Machine missing an image to fetch that stream from a peer over the mesh and
 * `docker load` it, bounded, reporting bytes and time.
 *
 * @module
 */

import * as z from "zod";
import { route, type RouteTable } from "./route.ts";

const id = z.string().min(1).max(256);
const ref = z.string().min(1).max(512);

/** The path prefix of the forwarding spelling clients use. */
export const VIA_PREFIX = "/rpc/via/";

/** The Machine id and capability of a forwarding path, or `undefined` when `pathname` is not one. */
export function parseViaPath(pathname: string): { machineId: string; capability: string } | undefined {
  if (!pathname.startsWith(VIA_PREFIX)) return undefined;
  const parts = pathname.slice(VIA_PREFIX.length).split("/");
  if (parts.length !== 2 || parts[0] === "" || parts[1] === "") return undefined;
  try {
    return { machineId: decodeURIComponent(parts[0]), capability: decodeURIComponent(parts[1]) };
  } catch {
    return undefined;
  }
}

/** What `ployz.machine.forward.v1` asks of the Entry Machine. */
export interface ForwardRequest {
  /** The Machine to relay to. */
  "machine_id": string;
  /** The capability to call there. */
  capability: string;
  /** The request fields for the target, without `protocol_major` (the Entry adds its own). */
  body?: Record<string, unknown>;
}

/** Reader of {@link ForwardRequest}; fields it does not know are ignored. */
export const ForwardRequestSchema: z.ZodType<ForwardRequest> = z.lazy(() =>
  z.object({
    "machine_id": id,
    capability: z.string().min(1).max(256),
    body: z.record(z.string(), z.unknown()).optional(),
  })
);

/** What `ployz.image.export.v1` asks: one image the Machine has. */
export interface ExportImageRequest {
  /** Image reference or id. */
  ref: string;
}

/** Reader of {@link ExportImageRequest}; fields it does not know are ignored. */
export const ExportImageRequestSchema: z.ZodType<ExportImageRequest> = z.lazy(() => z.object({ ref }));

/** The longest a pull from a peer may take, and its default. */
export const PEER_PULL_MAX_MS = 30 * 60_000;
/** The default bound of a pull from a peer. */
export const PEER_PULL_DEFAULT_MS = 10 * 60_000;

/** What `ployz.image.pull_from_peer.v1` asks of the Machine that lacks the image. */
export interface PullFromPeerRequest {
  /** Image reference or id. */
  ref: string;
  /** The Machine that has it. */
  "from_machine_id": string;
  /** Bound of the whole transfer; default 600000 ms. */
  "timeout_ms"?: number;
}

/** Reader of {@link PullFromPeerRequest}; fields it does not know are ignored. */
export const PullFromPeerRequestSchema: z.ZodType<PullFromPeerRequest> = z.lazy(() =>
  z.object({
    ref,
    "from_machine_id": id,
    "timeout_ms": z.number().int().min(1_000).max(PEER_PULL_MAX_MS).optional(),
  })
);

/** What `ployz.image.pull_from_peer.v1` answers. Readers keep fields they do not know. */
export interface PullFromPeerResponse {
  /** The Machine that loaded (or already had) the image. */
  "machine_id": string;
  /** The image asked for. */
  ref: string;
  /** The peer it came from. */
  "from_machine_id": string;
  /** False when the image was already here and nothing was fetched. */
  transferred: boolean;
  /** Archive bytes received. */
  bytes: number;
  /** From asking the peer to the image being loaded, in ms. */
  "duration_ms": number;
  /** What Docker reported loading (references or ids). */
  loaded: string[];
}

/** Tolerant reader of {@link PullFromPeerResponse}. */
export const PullFromPeerResponseSchema: z.ZodType<PullFromPeerResponse> = z.lazy(() =>
  z.looseObject({
    "machine_id": id,
    ref,
    "from_machine_id": id,
    transferred: z.boolean(),
    bytes: z.number().nonnegative(),
    "duration_ms": z.number().nonnegative(),
    loaded: z.array(z.string().max(1024)).max(1024).default([]),
  })
);

/** Request and response types of the routing routes, by method name. */
export interface RoutingRouteTypes {
  /**
   * `ployz.machine.forward.v1`: the Entry Machine relays one call to another Machine (the target's answer).
   */
  forward: [ForwardRequest, ReadableStream<Uint8Array>];
  /** `ployz.image.export.v1`: `docker save` of an image the Machine has, as a tar stream. */
  exportImage: [ExportImageRequest, ReadableStream<Uint8Array>];
  /**
   * `ployz.image.pull_from_peer.v1`: asks the Machine to fetch an image from a peer Machine over the mesh and
   * load it.
   */
  pullImageFromPeer: [PullFromPeerRequest, PullFromPeerResponse];
}

/** The routing and image rows of the catalog. */
export const ROUTING_ROUTES: RouteTable<RoutingRouteTypes> = Object.freeze({
  forward: route("ployz.machine.forward.v1", ForwardRequestSchema, "stream"),
  exportImage: route("ployz.image.export.v1", ExportImageRequestSchema, "stream"),
  pullImageFromPeer: route(
    "ployz.image.pull_from_peer.v1",
    PullFromPeerRequestSchema,
    PullFromPeerResponseSchema,
  ),
});
