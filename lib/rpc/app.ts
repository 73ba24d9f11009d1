/**
 * `createRpcApp`: the hono app serving exactly the catalog rows a daemon has handlers for. Everything else is
 * refused with `unsupported` and `details.capability`; every refusal of a catalogued route names its capability.
 *
 * @module
 */

import { Hono } from "hono";
import { CATALOG, RETIRED_CAPABILITIES, type RouteName, routeOf, type RouteTypes } from "./catalog.ts";
import { errorBody, openEnvelope } from "./envelope.ts";
import { readBodyCapped } from "../util/mod.ts";
import { httpStatusOf, RpcError } from "./errors.ts";

/** What a handler gets besides its request. */
export interface HandlerContext {
  /** The capability being served. */
  capability: string;
  /** Aborts when the caller goes away. */
  signal: AbortSignal;
}

/** Serves one route. */
export type Handler<K extends RouteName> = (
  request: RouteTypes[K][0],
  context: HandlerContext,
) => Promise<RouteTypes[K][1]>;

/** Handlers by method name; a route without one is not advertised and is refused. */
export type RpcHandlers = { [K in RouteName]?: Handler<K> };

/** Options of {@link createRpcApp}. */
export interface RpcAppOptions {
  /** Maps an error a handler threw (other than `RpcError`) to one; `undefined` makes it `internal`. */
  toRpcError?: (error: unknown) => RpcError | undefined;
  /** Told about every `internal` answer, with the original error, for the daemon's own log. */
  onInternalError?: (capability: string, error: unknown) => void;
}

/** The served app: hand `fetch` to a server; `request` answers in-process (tests). */
export interface RpcApp {
  /**
   * Answers one request. `signal` tells handlers the caller is gone; the request's own signal is not read,
   * because `Deno.serve` aborts it once a response is delivered.
   */
  fetch(request: Request, signal?: AbortSignal): Response | Promise<Response>;
  /** Answers a request built from a path (or URL) and init, without a socket. */
  request(input: string, init?: RequestInit): Response | Promise<Response>;
}

/** The largest request body accepted. */
export const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

/** Capability names served by `handlers`, in catalog order: what DescribeContract advertises. */
export function advertisedCapabilities(handlers: RpcHandlers): string[] {
  return (Object.keys(CATALOG) as RouteName[])
    .filter((name) => handlers[name] !== undefined)
    .map((name) => CATALOG[name].capability);
}

function refusal(error: RpcError): Response {
  return Response.json(errorBody(error), { status: httpStatusOf(error.code) });
}

function notServed(capability: string): RpcError {
  const replacement = Object.hasOwn(RETIRED_CAPABILITIES, capability)
    ? RETIRED_CAPABILITIES[capability]
    : undefined;
  const message = replacement === undefined
    ? `This Machine does not serve "${capability}"`
    : `"${capability}" was retired; use ${replacement}`;
  return new RpcError("unsupported", message, { details: { capability } });
}

async function readJson(request: Request, capability: string): Promise<unknown> {
  const bytes = await readBodyCapped(request, MAX_REQUEST_BYTES);
  if (bytes === undefined) {
    throw new RpcError(
      "invalid_argument",
      `Invalid request to "${capability}": the body exceeds ${MAX_REQUEST_BYTES} bytes`,
      { details: { capability } },
    );
  }
  const text = new TextDecoder().decode(bytes);
  try {
    return JSON.parse(text);
  } catch {
    throw new RpcError("invalid_argument", `Invalid request to "${capability}": the body is not JSON`, {
      details: { capability },
    });
  }
}

/** Builds the Machine RPC app: `POST /rpc/<capability>` for each handled catalog row. */
export function createRpcApp(handlers: RpcHandlers, options: RpcAppOptions = {}): RpcApp {
  async function serve(name: RouteName, request: Request, signal: AbortSignal): Promise<Response> {
    const route = CATALOG[name];
    const capability = route.capability;
    try {
      const body = await readJson(request, capability);
      const fields = openEnvelope(body, route.request as never, capability);
      const handler = handlers[name] as Handler<RouteName>;
      const answer = await handler(fields as never, { capability, signal });
      if (route.response === "stream") {
        return new Response(answer as ReadableStream<Uint8Array>, {
          headers: { "content-type": "text/plain; charset=utf-8" },
        });
      }
      const checked = route.response.safeParse(answer);
      if (!checked.success) {
        throw new Error(
          `answer does not match the catalog: ${checked.error.issues[0]?.message ?? "unknown"}`,
        );
      }
      return Response.json(answer);
    } catch (thrown) {
      let error = thrown instanceof RpcError ? thrown : options.toRpcError?.(thrown);
      if (error === undefined) {
        options.onInternalError?.(capability, thrown);
        error = new RpcError("internal", `Cannot serve "${capability}": internal error`, { cause: thrown });
      }
      // Rule 7: every refusal of a catalogued route names its capability.
      error.details.capability = capability;
      return refusal(error);
    }
  }

  const app = new Hono<{ Bindings: { signal?: AbortSignal } }>();
  app.post("/rpc/:capability", (c) => {
    const capability = c.req.param("capability");
    const name = routeOf(capability);
    if (name === undefined || handlers[name] === undefined) return refusal(notServed(capability));
    return serve(name, c.req.raw, c.env?.signal ?? new AbortController().signal);
  });
  app.all("*", (c) => {
    const path = new URL(c.req.url).pathname;
    const capability = path.startsWith("/rpc/") ? decodeURIComponent(path.slice(5)) : path;
    if (path.startsWith("/rpc/") && c.req.method !== "POST") {
      return refusal(
        new RpcError("unsupported", `Method "${c.req.method}" is not served for "${capability}": use POST`, {
          details: { capability },
        }),
      );
    }
    return refusal(notServed(capability));
  });
  app.onError((error) => {
    options.onInternalError?.("", error);
    return refusal(new RpcError("internal", "Cannot serve the request: internal error"));
  });
  return {
    fetch: (request, signal) => app.fetch(request, { signal }),
    request: (input, init) => app.request(input, init),
  };
}
