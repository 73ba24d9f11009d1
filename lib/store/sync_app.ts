/**
 * HTTP side of replication: a Hono app serving `/store/v1/...` for one store.
 *
 * @module
 */

import { Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type * as z from "zod";
import { StoreError } from "./errors.ts";
import {
  CaughtUpRequestSchema,
  CLUSTER_HEADER,
  type ErrorBody,
  MAX_REQUEST_BYTES,
  PushRequestSchema,
  type PushResponse,
  SYNC_PREFIX,
  SyncRequestSchema,
  type SyncResponse,
  type VectorResponse,
} from "./protocol.ts";
import type { Rejection, Store } from "./store.ts";
import { readBodyCapped } from "../util/mod.ts";

const STATUS: Record<string, ContentfulStatusCode> = {
  "invalid_argument": 400,
  unauthenticated: 401,
  "not_found": 404,
  conflict: 409,
  "too_large": 413,
  unavailable: 503,
  internal: 500,
};

function refuse(code: string, message: string): Response {
  const body: ErrorBody = { code, message };
  return Response.json(body, { status: STATUS[code] ?? 500 });
}

async function readJson<T>(request: Request, schema: z.ZodType<T>): Promise<T | Response> {
  const bytes = await readBodyCapped(request, MAX_REQUEST_BYTES);
  if (bytes === undefined) return refuse("too_large", `Request too large: limit ${MAX_REQUEST_BYTES} bytes`);
  const text = new TextDecoder().decode(bytes);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return refuse("invalid_argument", "Request body is not JSON");
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return refuse("invalid_argument", `Invalid request: ${issue.path.join(".") || "body"}: ${issue.message}`);
  }
  return parsed.data;
}

/**
 * The sync protocol's HTTP handler. It is a Hono app; serve it with `Deno.serve(app.fetch)` or mount it in
 * another app with `parent.mount("/", app.fetch)`.
 */
export interface SyncApp {
  /** Answers one request. */
  fetch(request: Request): Response | Promise<Response>;
}

/**
 * Serves the sync protocol for `store`. Mount it on the mesh address behind a check that the caller is a mesh
 * peer; every route checks the Cluster id, and a refusal never names this Cluster's id.
 */
export function createSyncApp(
  store: Store,
  options: {
    /**
     * Told of every push that carried changes this replica refused, with the site the sender named and the
     * request (whose caller the server knows).
     */
    onRejected?: (site: string, rejected: Rejection[], request: Request) => void;
  } = {},
): SyncApp {
  const app = new Hono();
  app.use(`${SYNC_PREFIX}/*`, async (c, next) => {
    const cluster = c.req.header(CLUSTER_HEADER);
    if (cluster === undefined || cluster === "") {
      return refuse("unauthenticated", `Missing header "${CLUSTER_HEADER}"`);
    }
    if (cluster !== store.clusterId) {
      return refuse("conflict", "Refused peer: it belongs to another Cluster");
    }
    if (store.closed) return refuse("unavailable", "Store is closed");
    await next();
    c.res.headers.set(CLUSTER_HEADER, store.clusterId);
  });
  app.onError((error) => {
    if (error instanceof StoreError) return refuse(error.code, error.message);
    return refuse("internal", `Sync request failed: ${String(error)}`);
  });

  app.get(`${SYNC_PREFIX}/vector`, (c) => {
    const body: VectorResponse = { site: store.siteId, vector: store.vector() };
    return c.json(body);
  });

  app.post(`${SYNC_PREFIX}/push`, async (c) => {
    const request = await readJson(c.req.raw, PushRequestSchema);
    if (request instanceof Response) return request;
    const result = await store.receive(request.changes);
    if (result.rejected.length > 0) options.onRejected?.(request.site, result.rejected, c.req.raw);
    const body: PushResponse = { site: store.siteId, ...result };
    return c.json(body);
  });

  app.post(`${SYNC_PREFIX}/sync`, async (c) => {
    const request = await readJson(c.req.raw, SyncRequestSchema);
    if (request instanceof Response) return request;
    const page = store.changesMissingFrom(request.vector, request.limit);
    const changes = await store.outbound(page.changes);
    const body: SyncResponse = { site: store.siteId, vector: store.vector(), changes, more: page.more };
    const floors = store.floors();
    if (Object.keys(floors).length > 0) body.floors = floors;
    return c.json(body);
  });

  app.post(`${SYNC_PREFIX}/caught-up`, async (c) => {
    const request = await readJson(c.req.raw, CaughtUpRequestSchema);
    if (request instanceof Response) return request;
    return c.json({ site: store.siteId, caught_up: store.caughtUpWith(request.vector) });
  });

  return app;
}
