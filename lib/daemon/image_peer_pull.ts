/**
 * `ployz.image.pull_from_peer.v1`: fetches `docker save` of an image from a named peer over the mesh and
 * `docker load`s it here, bounded by the caller's deadline, reporting bytes and time. A Machine that already has the
 * image fetches nothing; a pinned reference's loaded id is recorded as its alias, since the archive names no tag.
 *
 * @module
 */

import {
  PEER_PULL_DEFAULT_MS,
  PROTOCOL_MAJOR,
  type PullFromPeerRequest,
  type PullFromPeerResponse,
  RpcError,
} from "../rpc/mod.ts";
import { CodedError, messageOf } from "../util/mod.ts";
import { type ForwardTarget, readErrorResponse } from "./forward.ts";
import type { ImageHost } from "./image_handlers.ts";
import { localImage, tagAsWritten } from "./image_pulls.ts";

/** Copies the image from the peer unless it is here already; refuses this Machine itself and an unknown peer. */
export async function pullFromPeer(
  host: ImageHost,
  req: PullFromPeerRequest,
  callerSignal: AbortSignal,
): Promise<PullFromPeerResponse> {
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
  if (await localImage(host.engine, host.pulled, req.ref, callerSignal) !== undefined) {
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
  const signal = AbortSignal.any([callerSignal, host.stopping, deadline]);
  const started = performance.now();
  const counter = counting();
  try {
    const loaded = await copyFrom(host, peer, req, counter.stream, signal);
    const durationMs = Math.round(performance.now() - started);
    host.log(`pulled image "${req.ref}" from ${peer.name}: ${counter.bytes()} bytes in ${durationMs} ms`);
    return { ...base, transferred: true, bytes: counter.bytes(), "duration_ms": durationMs, loaded };
  } catch (error) {
    const details = { bytes: counter.bytes(), "from_machine_id": req.from_machine_id };
    if (deadline.aborted && !callerSignal.aborted) {
      throw new RpcError(
        "unavailable",
        `Cannot pull image "${req.ref}" from Machine "${peer.name}" within ${timeoutMs} ms: ${counter.bytes()} bytes arrived`,
        { details },
      );
    }
    if (error instanceof RpcError) throw error;
    if (error instanceof CodedError) throw error;
    throw new RpcError(
      "unavailable",
      `Cannot pull image "${req.ref}" from Machine "${peer.name}" at ${peer.hostname}:${peer.port}: ${
        messageOf(error)
      }`,
      { details, cause: error },
    );
  }
}

/** Asks the peer to export the image, loads the archive through `counter`, and checks the image is here now. */
async function copyFrom(
  host: ImageHost,
  peer: ForwardTarget,
  req: PullFromPeerRequest,
  counter: TransformStream<Uint8Array, Uint8Array>,
  signal: AbortSignal,
): Promise<string[]> {
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
  const archive = (response.body ?? new ReadableStream({ start: (c) => c.close() })).pipeThrough(counter);
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
      `Loaded ${loaded.images.join(", ")} from Machine "${peer.name}" but image "${req.ref}" is still absent`,
      { details: { loaded: loaded.images } },
    );
  }
  const copied = await localImage(host.engine, host.pulled, req.ref, signal);
  if (copied !== undefined) await host.pulled.add(copied.id);
  return loaded.images;
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
