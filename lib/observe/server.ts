/**
 * observe.sock: the Observe Store's history queries over HTTP on a unix socket (mode 0660), served by hono.
 * `POST /observe/v1/log_history` answers JSON; `POST /observe/v1/tail_logs` streams NDJSON events
 * (`{"type":"line",…}`, `{"type":"note","message":…}`, and `{"type":"heartbeat"}` every 5 s);
 * `POST /observe/v1/metric_history` answers metric series with explicit gaps.
 *
 * @module
 */

import { Hono } from "hono";
import type { Context } from "hono";
import { type ErrorCode, messageOf, readBodyCapped } from "../util/mod.ts";
import { ObserveError } from "./errors.ts";
import { selectContainers } from "./log_query.ts";
import type { LogStore } from "./log_store.ts";
import { metricHistory } from "./metrics/history.ts";
import type { MetricStore } from "./metrics/metric_store.ts";
import {
  historyToWire,
  METRIC_HISTORY_RULES,
  type MetricHistoryWireRequest,
  metricQueryFromWire,
} from "./metrics/wire.ts";
import { type TailEvent, tailLogs } from "./tail.ts";
import {
  historyFromWire,
  lineToWire,
  LOG_HISTORY_RULES,
  type LogHistoryRequest,
  TAIL_LOGS_RULES,
  tailFromWire,
  type TailLogsRequest,
} from "./wire.ts";
import { type FieldRule, readWire } from "./wire_reader.ts";

const STATUS: Partial<Record<ErrorCode, 400 | 404 | 409 | 500 | 503>> = {
  "invalid_argument": 400,
  "not_found": 404,
  ambiguous: 409,
  conflict: 409,
  unavailable: 503,
  internal: 500,
};

const HEARTBEAT_MS = 5000;

/** Largest request body observe.sock reads, in bytes: a query is a few hundred; the rest is refused unread. */
export const MAX_OBSERVE_REQUEST_BYTES = 1024 * 1024;

/** The observe.sock request handler. */
export interface ObserveApp {
  /** Answers one request. */
  fetch(request: Request): Response | Promise<Response>;
}

/** What observe.sock serves besides the Log Store. */
export interface ObserveAppOptions {
  /** The metric tables; without them metric history answers `unavailable`. */
  metrics?: MetricStore;
  /** The sampling interval: the resolution of raw metric history. Default 10000 ms. */
  sampleMs?: number;
}

/** The observe.sock routes over `store`; `signal` ends open tails (at shutdown). */
export function createObserveApp(
  store: LogStore,
  signal: AbortSignal,
  options: ObserveAppOptions = {},
): ObserveApp {
  const app = new Hono();
  app.post("/observe/v1/metric_history", async (c) => {
    const query = metricQueryFromWire(await parseBody<MetricHistoryWireRequest>(c, METRIC_HISTORY_RULES));
    if (options.metrics === undefined) {
      throw new ObserveError(
        "unavailable",
        "Cannot read metric history: this Observe Store does not sample metrics",
      );
    }
    return c.json(historyToWire(metricHistory(options.metrics, query, Date.now(), options.sampleMs)));
  });
  app.post("/observe/v1/log_history", async (c) => {
    const request = await parseBody<LogHistoryRequest>(c, LOG_HISTORY_RULES);
    const result = store.logHistory(historyFromWire(request));
    return c.json({ lines: result.lines.map(lineToWire), truncated: result.truncated, notes: result.notes });
  });
  app.post("/observe/v1/tail_logs", async (c) => {
    const query = tailFromWire(await parseBody<TailLogsRequest>(c, TAIL_LOGS_RULES));
    // Check the selector (an ambiguous prefix) before the stream starts, so it can still fail with a status.
    selectContainers(store.database, query);
    // Ends when the client goes away (the stream is cancelled) or the server stops.
    const cancelled = new AbortController();
    const stop = AbortSignal.any([signal, cancelled.signal]);
    const events = tailLogs(store, query, { signal: stop });
    return new Response(ndjson(events, stop, cancelled), {
      headers: { "content-type": "application/x-ndjson" },
    });
  });
  app.onError((error, c) => {
    if (error instanceof ObserveError) {
      return c.json(
        { code: error.code, message: error.message, details: error.details },
        STATUS[error.code] ?? 500,
      );
    }
    return c.json(
      { code: "internal", message: `Observe Store failed: ${messageOf(error)}`, details: {} },
      500,
    );
  });
  app.notFound((c) =>
    c.json({ code: "not_found", message: `Unknown route "${c.req.method} ${c.req.path}"`, details: {} }, 404)
  );
  return app;
}

async function parseBody<T>(c: Context, rules: Record<string, FieldRule>): Promise<T> {
  const bytes = await readBodyCapped(c.req.raw, MAX_OBSERVE_REQUEST_BYTES);
  if (bytes === undefined) {
    throw new ObserveError(
      "invalid_argument",
      `Cannot read the request: the body exceeds ${MAX_OBSERVE_REQUEST_BYTES} bytes`,
    );
  }
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new ObserveError("invalid_argument", "Cannot read the request: the body is not JSON");
  }
  const parsed = readWire<T>(body, rules);
  if (!parsed.ok) {
    const issue = parsed.issues[0];
    throw new ObserveError(
      "invalid_argument",
      `Cannot read the request: ${issue.path || "body"}: ${issue.message}`,
      { issues: parsed.issues },
    );
  }
  return parsed.value;
}

const encoder = new TextEncoder();

function encodeEvent(event: TailEvent): Uint8Array {
  const value = event.kind === "line"
    ? { type: "line", ...lineToWire(event.line) }
    : { type: "note", message: event.message };
  return encoder.encode(`${JSON.stringify(value)}\n`);
}

function ndjson(
  events: AsyncGenerator<TailEvent>,
  stop: AbortSignal,
  cancelled: AbortController,
): ReadableStream<Uint8Array> {
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  return new ReadableStream<Uint8Array>({
    start(controller): void {
      heartbeat = setInterval(() => {
        try {
          controller.enqueue(encoder.encode(`${JSON.stringify({ type: "heartbeat" })}\n`));
        } catch {
          clearInterval(heartbeat);
        }
      }, HEARTBEAT_MS);
    },
    async pull(controller): Promise<void> {
      const next = await events.next();
      if (next.done || stop.aborted) {
        clearInterval(heartbeat);
        controller.close();
        return;
      }
      controller.enqueue(encodeEvent(next.value));
    },
    cancel(): void {
      clearInterval(heartbeat);
      cancelled.abort();
    },
  });
}

/** A running observe.sock server. */
export interface ObserveServer {
  /** Resolves once the server stopped (after the signal fired). */
  finished: Promise<void>;
}

/**
 * Serves `store` on the unix socket `path` until `signal` fires. A socket file left by a crashed process is
 * replaced; one another live process answers on is refused with `conflict`.
 */
export async function serveObserveSocket(
  store: LogStore,
  path: string,
  signal: AbortSignal,
  options: ObserveAppOptions = {},
): Promise<ObserveServer> {
  await clearStaleSocket(path);
  const app = createObserveApp(store, signal, options);
  const listening = Promise.withResolvers<void>();
  const server = Deno.serve(
    { path, signal, onListen: () => listening.resolve() },
    (request) => app.fetch(request),
  );
  await listening.promise;
  await Deno.chmod(path, 0o660);
  return { finished: server.finished };
}

async function clearStaleSocket(path: string): Promise<void> {
  let conn: Deno.UnixConn;
  try {
    conn = await Deno.connect({ transport: "unix", path });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return;
    if (error instanceof Deno.errors.ConnectionRefused) {
      await Deno.remove(path).catch(() => {});
      return;
    }
    throw error;
  }
  conn.close();
  throw new ObserveError("conflict", `Cannot serve "${path}": another process already answers on it`);
}
