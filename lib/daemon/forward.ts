/**
 * Forwarding through the Entry Machine: a call for another Machine of the Cluster is relayed to that Machine's
 * mesh address (its Machine Gateway, port 51000) and its answer is relayed back as it comes: status, content type
 * and body, streams included, errors with the target's own `{code, message, details}`.
 *
 * The Entry Machine decides nothing for the target (docs/bets.md, bet 6). It refuses only what it cannot relay: a
 * Machine it holds no row for (`not_found`), or one it cannot connect to within the connect deadline
 * (`unavailable`, naming the Machine and what this Machine observes of it: membership and last handshake). The
 * connection is probed alongside the request, so a reachable target pays no extra round trip, while an
 * unreachable one is reported in seconds rather than at the caller's deadline. Once connected, the answer is
 * bounded by the caller's patience: when the caller goes away, the relay is aborted and the target sees its caller
 * leave.
 *
 * @module
 */

import {
  httpStatusOf,
  isRpcErrorCode,
  MAX_REQUEST_BYTES,
  parseViaPath,
  PROTOCOL_MAJOR,
  readBodyCapped,
  RpcError,
  type RpcErrorCode,
} from "../rpc/mod.ts";
import { messageOf } from "../util/mod.ts";

/** Where to relay a Machine's calls. */
export interface ForwardTarget {
  /** Its Machine Name, for messages. */
  name: string;
  /** Host (an address) of its Machine RPC listener on the mesh. */
  hostname: string;
  /** Port of that listener. */
  port: number;
}

/** What the forwarder needs from the daemon. */
export interface ForwarderHost {
  /** This Machine's id and name. */
  self(): { id: string; name: string };
  /** The target's mesh listener, or `undefined` when this Machine holds no row for it. */
  resolve(machineId: string): ForwardTarget | undefined;
  /** One line of what this Machine observes of the target (membership, last handshake), for refusals. */
  observe(machineId: string): Promise<string>;
  /** Answers a call addressed to this Machine itself. */
  local(request: Request, signal: AbortSignal): Response | Promise<Response>;
  /** How long connecting to the target may take; default 5000 ms. */
  connectMs?: number;
}

/** The forwarding side of the Entry Machine. */
export interface Forwarder {
  /** Relays `body` (the target's envelope) for `capability` to Machine `machineId`; never throws. */
  relay(
    machineId: string,
    capability: string,
    body: Uint8Array<ArrayBuffer>,
    signal: AbortSignal,
  ): Promise<Response>;
  /** Serves `POST /rpc/via/<machine_id>/<capability>`; never throws. */
  serveVia(request: Request, signal: AbortSignal): Promise<Response>;
}

/** Default bound of connecting to a forwarding target. */
export const FORWARD_CONNECT_MS = 5_000;

/** An error answer in the Machine RPC error body. */
export function errorResponse(error: RpcError): Response {
  return Response.json(
    { error: { code: error.code, message: error.message, details: error.details } },
    { status: httpStatusOf(error.code) },
  );
}

/** Reads an error answer back into an `RpcError`; a body that is not one becomes `internal`. */
export async function readErrorResponse(response: Response, what: string): Promise<RpcError> {
  const text = await response.text().catch(() => "");
  try {
    const { error } = JSON.parse(text) as { error: { code: unknown; message: unknown; details?: unknown } };
    const details = error.details !== null && typeof error.details === "object"
      ? { ...error.details as Record<string, unknown> }
      : {};
    const code: RpcErrorCode = isRpcErrorCode(error.code) ? error.code : "internal";
    return new RpcError(code, String(error.message), { details });
  } catch {
    return new RpcError("internal", `${what} answered with status ${response.status} and no error body`, {
      details: { status: response.status },
    });
  }
}

async function readBody(request: Request, capability: string): Promise<Uint8Array<ArrayBuffer>> {
  const refuse = (): RpcError =>
    new RpcError(
      "invalid_argument",
      `Invalid request to "${capability}": the body exceeds ${MAX_REQUEST_BYTES} bytes`,
      { details: { capability } },
    );
  const bytes = await readBodyCapped(request, MAX_REQUEST_BYTES);
  if (bytes === undefined) throw refuse();
  return bytes;
}

/** Relays `body` and closes `client` once it is read to the end, fails or is cancelled. */
function closingWhenDone(
  body: ReadableStream<Uint8Array> | null,
  client: Deno.HttpClient,
): ReadableStream<Uint8Array> | null {
  if (body === null) {
    client.close();
    return null;
  }
  const reader = body.getReader();
  let open = true;
  const close = (): void => {
    if (open) client.close();
    open = false;
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller): Promise<void> {
      try {
        const { done, value } = await reader.read();
        if (done) {
          close();
          controller.close();
        } else controller.enqueue(value);
      } catch (error) {
        close();
        controller.error(error);
      }
    },
    async cancel(reason): Promise<void> {
      await reader.cancel(reason).catch(() => {});
      close();
    },
  });
}

/** Connects once to see whether the target's listener is reachable; resolves with why not, or `undefined`. */
function probe(target: ForwardTarget, connectMs: number, signal: AbortSignal): Promise<string | undefined> {
  return new Promise((resolve) => {
    let settled = false;
    const finish = (why: string | undefined): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      resolve(why);
    };
    const onAbort = (): void => finish(undefined);
    const timer = setTimeout(() => finish(`no connection within ${connectMs} ms`), connectMs);
    signal.addEventListener("abort", onAbort, { once: true });
    Deno.connect({ hostname: target.hostname, port: target.port }).then(
      (conn) => {
        conn.close();
        finish(undefined);
      },
      (error) => finish(messageOf(error)),
    );
  });
}

/** Builds the forwarder of a daemon. */
export function createForwarder(host: ForwarderHost): Forwarder {
  return {
    relay: (machineId, capability, body, signal) => relay(host, machineId, capability, body, signal),
    serveVia: (request, signal) => serveVia(host, request, signal),
  };
}

/** Relays one call to a Machine: this one answers it itself, another over a connection of the relay's own. */
async function relay(
  host: ForwarderHost,
  machineId: string,
  capability: string,
  body: Uint8Array<ArrayBuffer>,
  signal: AbortSignal,
): Promise<Response> {
  const self = host.self();
  if (machineId === self.id) {
    return await host.local(
      new Request(`http://localhost/rpc/${encodeURIComponent(capability)}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      }),
      signal,
    );
  }
  const target = host.resolve(machineId);
  if (target === undefined) {
    return errorResponse(
      new RpcError(
        "not_found",
        `Cannot forward "${capability}" to Machine "${machineId}": Entry Machine "${self.name}" holds no row for it`,
        { details: { capability, "machine_id": machineId, "entry_machine_id": self.id } },
      ),
    );
  }
  return await relayRemote(host, { machineId, target, capability }, body, signal);
}

/**
 * Relays to another Machine while a probe checks it connects within the connect bound; unreachable, the answer is
 * `unavailable` naming what this Machine observes of it.
 */
async function relayRemote(
  host: ForwarderHost,
  { machineId, target, capability }: { machineId: string; target: ForwardTarget; capability: string },
  body: Uint8Array<ArrayBuffer>,
  signal: AbortSignal,
): Promise<Response> {
  const unreached = new AbortController();
  const linked = AbortSignal.any([signal, unreached.signal]);
  const probing = probe(target, host.connectMs ?? FORWARD_CONNECT_MS, linked).then((why) => {
    if (why !== undefined) unreached.abort(new Error(why));
    return why;
  });
  // A connection of its own per relay, never a pooled one: a request written to an idle pooled connection to a
  // Machine that just became unreachable would sit in the kernel's send queue and could still run there after
  // the network heals, long after this relay reported it unavailable. A fresh connection aborted while it
  // connects never carries the request.
  const client = Deno.createHttpClient({ poolMaxIdlePerHost: 0 });
  try {
    const upstream = await fetch(
      `http://${target.hostname}:${target.port}/rpc/${encodeURIComponent(capability)}`,
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
        signal: linked,
        client,
      },
    );
    // Connected, since it answered: the probe is settling, and is not left behind.
    await probing;
    return new Response(closingWhenDone(upstream.body, client), {
      status: upstream.status,
      headers: { "content-type": upstream.headers.get("content-type") ?? "application/json" },
    });
  } catch (error) {
    client.close();
    const why = unreached.signal.aborted ? messageOf(unreached.signal.reason) : messageOf(error);
    // Ends a probe still connecting.
    unreached.abort(new Error("the relay ended"));
    await probing;
    if (signal.aborted) {
      return errorResponse(
        new RpcError("unavailable", "The caller went away", { details: { capability } }),
      );
    }
    return errorResponse(await unreachable(host, machineId, target, capability, why));
  }
}

/** `unavailable` for a Machine the relay could not reach: where it was tried, why, and what this Machine sees of it. */
async function unreachable(
  host: ForwarderHost,
  machineId: string,
  target: ForwardTarget,
  capability: string,
  why: string,
): Promise<RpcError> {
  const self = host.self();
  const seen = await host.observe(machineId).catch((error) => `no observation: ${messageOf(error)}`);
  return new RpcError(
    "unavailable",
    `Cannot reach Machine "${target.name}" (${machineId}) from Entry Machine "${self.name}" at ` +
      `${target.hostname}:${target.port}: ${why}; ${seen}`,
    {
      details: {
        capability,
        "machine_id": machineId,
        "machine_name": target.name,
        "entry_machine_id": self.id,
        observed: seen,
      },
    },
  );
}

/** Serves `POST /rpc/via/MACHINE/CAPABILITY` on the socket: the body relayed as it came. */
async function serveVia(host: ForwarderHost, request: Request, signal: AbortSignal): Promise<Response> {
  const path = new URL(request.url).pathname;
  const via = parseViaPath(path);
  if (via === undefined) {
    return errorResponse(
      new RpcError(
        "invalid_argument",
        `Invalid forwarding path "${path}": expected /rpc/via/MACHINE/CAPABILITY`,
      ),
    );
  }
  if (request.method !== "POST") {
    return errorResponse(
      new RpcError(
        "unsupported",
        `Method "${request.method}" is not served for "${via.capability}": use POST`,
        {
          details: { capability: via.capability },
        },
      ),
    );
  }
  try {
    return await relay(host, via.machineId, via.capability, await readBody(request, via.capability), signal);
  } catch (error) {
    if (error instanceof RpcError) return errorResponse(error);
    return errorResponse(
      new RpcError("internal", `Cannot forward "${via.capability}": ${messageOf(error)}`, {
        details: { capability: via.capability },
      }),
    );
  }
}

/** The JSON spelling `ployz.machine.forward.v1`: the target's stream, or its refusal as an `RpcError`. */
export async function forwardJson(
  forwarder: Forwarder,
  request: { "machine_id": string; capability: string; body?: Record<string, unknown> },
  signal: AbortSignal,
): Promise<ReadableStream<Uint8Array>> {
  const body = new TextEncoder().encode(
    JSON.stringify({ "protocol_major": PROTOCOL_MAJOR, ...request.body }),
  );
  const response = await forwarder.relay(request.machine_id, request.capability, body, signal);
  if (response.ok) return response.body ?? new ReadableStream({ start: (c) => c.close() });
  const error = await readErrorResponse(response, `Machine "${request.machine_id}"`);
  const { capability, ...rest } = error.details;
  throw new RpcError(error.code, error.message, {
    details: {
      ...rest,
      "target_capability": capability ?? request.capability,
      "machine_id": request.machine_id,
    },
  });
}
