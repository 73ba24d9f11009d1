/**
 * The single seam to the Engine API: every Docker request of the adapter goes through `request`, which applies the
 * deadline policy and maps failures to `DockerError`. `send` speaks HTTP/1.1 over the Unix socket with `node:http`,
 * as docker-modem did, without loading dockerode (its gRPC, SSH and protobuf dependencies cost `ployzd serve` about
 * 30 MB of resident memory for the one function it used).
 *
 * @module
 */

import { request as httpRequest } from "node:http";
import type { IncomingMessage } from "node:http";
import { stringify as queryString } from "node:querystring";
import type { Readable } from "node:stream";
import { type DeadlineClass, deadlineFor, type Deadlines, withDeadline } from "./deadline.ts";
import { DockerError } from "./errors.ts";
import { concatBytes, textLines } from "../../util/mod.ts";
import type { LogPolicy } from "./spec.ts";

/** One HTTP request to the Engine API. */
export interface DockerRequest {
  method: "GET" | "POST" | "DELETE" | "PUT";
  /** Path below the API version, already encoded, e.g. `/containers/abc/json`. */
  path: string;
  query?: Record<string, unknown>;
  body?: unknown;
  /** A request body to stream (an image archive, a build context). */
  file?: Readable;
  /** Answer with the response stream instead of the parsed body. */
  stream?: boolean;
  /** Status codes that count as success besides 200, 201 and 204 (e.g. 304 for an idempotent start). */
  alsoOk?: number[];
  /** Registry credentials, sent as `X-Registry-Auth` on this request only. */
  auth?: RegistryAuth;
}

/** Registry credentials as Docker's `X-Registry-Auth` carries them; never logged, never stored. */
export interface RegistryAuth {
  /** User name. */
  username?: string;
  /** Password or token. */
  password?: string;
  /** An OAuth identity token, instead of a password. */
  identitytoken?: string;
  /** The registry host these are for. */
  serveraddress: string;
}

/** What the adapter knows about one Engine connection. */
export interface Client {
  /** The Machine this adapter acts for; ownership is checked against it. */
  readonly machineId: string;
  readonly socketPath: string;
  readonly deadlines: Deadlines;
  /** The Machine's bridge network, whose address observations report. */
  readonly network: string;
  /** Labels added to every object created (a test run's label, for instance). */
  readonly extraLabels: Readonly<Record<string, string>>;
  readonly log: LogPolicy;
  /** Sends one request; use `request` instead, which applies the deadline policy. */
  readonly send: (req: DockerRequest, signal: AbortSignal) => Promise<unknown>;
}

/** The API version the adapter speaks; Docker 20.10 and every later engine serve it. */
export const API_VERSION = "v1.41";

/**
 * A failed answer, shaped as docker-modem shaped it (errors.ts reads `statusCode` and `json`): the status and the
 * body, parsed as JSON when it is JSON.
 */
interface HttpFailure extends Error {
  statusCode: number;
  json: unknown;
}

/** Docker's query string: object values (filters) as JSON, arrays repeated, as docker-modem built it. */
function buildQuery(query: Record<string, unknown>): string {
  const flat: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(query)) {
    flat[key] = value !== null && typeof value === "object" && !Array.isArray(value)
      ? JSON.stringify(value)
      : value;
  }
  return queryString(flat as Parameters<typeof queryString>[0]);
}

function parseBody(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return null;
  }
}

function readAll(response: IncomingMessage): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    response.on("data", (chunk: Uint8Array) => chunks.push(chunk));
    response.on("end", () => resolve(concatBytes(chunks)));
    response.on("error", reject);
  });
}

function failure(status: number, body: Uint8Array): HttpFailure {
  const parsed = parseBody(body);
  const json = parsed ?? body;
  const text = parsed !== null && typeof parsed === "object" && "message" in parsed
    ? String(parsed.message)
    : new TextDecoder().decode(body);
  const error = new Error(`(HTTP code ${status}) unexpected - ${text} `) as HttpFailure;
  error.statusCode = status;
  error.json = json;
  return error;
}

/** Opens a client on `socketPath`. Nothing is sent until the first request; each request has its own connection. */
export function openClient(settings: Omit<Client, "send">): Client {
  function send(req: DockerRequest, signal: AbortSignal): Promise<unknown> {
    const ok = new Set([200, 201, 204, ...(req.alsoOk ?? [])]);
    const hasQuery = req.query !== undefined && Object.keys(req.query).length > 0;
    const path = `/${API_VERSION}${req.path}${hasQuery ? `?${buildQuery(req.query!)}` : ""}`;
    const headers: Record<string, string | number> = {};
    let data: string | undefined;
    if (req.file !== undefined) {
      headers["Content-Type"] = "application/tar";
    } else if (req.method === "POST") {
      const json = JSON.stringify(req.body ?? {});
      // Docker reads no body as "no options"; an empty object is sent as none, as docker-modem did.
      if (json !== "{}" && json !== '""') {
        data = json;
        headers["Content-Type"] = "application/json";
      }
    }
    if (data !== undefined) headers["Content-Length"] = new TextEncoder().encode(data).length;
    else if (req.method === "PUT") headers["Transfer-Encoding"] = "chunked";
    if (req.auth !== undefined) {
      // Sent as the X-Registry-Auth header of this one request, never in the URL (URL-safe base64, as Docker reads).
      const bytes = new TextEncoder().encode(JSON.stringify(req.auth));
      headers["X-Registry-Auth"] = btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll(
        "/",
        "_",
      );
    }
    return new Promise((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
      let response: IncomingMessage | undefined;
      const onAbort = (): void => {
        outgoing.destroy(signal.reason);
        response?.destroy(signal.reason);
        reject(signal.reason);
      };
      const outgoing = httpRequest(
        { socketPath: settings.socketPath, path, method: req.method, headers },
        (answer) => {
          response = answer;
          const status = answer.statusCode ?? 0;
          if (!ok.has(status)) {
            readAll(answer).then((body) => reject(failure(status, body)), reject).finally(() => {
              signal.removeEventListener("abort", onAbort);
            });
            return;
          }
          if (req.stream === true) {
            // The caller owns the stream now and destroys it on its own abort.
            signal.removeEventListener("abort", onAbort);
            resolve(answer);
            return;
          }
          readAll(answer).then((body) => resolve(parseBody(body) ?? body), reject).finally(() => {
            signal.removeEventListener("abort", onAbort);
          });
        },
      );
      signal.addEventListener("abort", onAbort, { once: true });
      outgoing.on("error", (error) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      });
      if (req.file !== undefined) {
        req.file.on("error", (error) => outgoing.destroy(error));
        req.file.pipe(outgoing);
      } else {
        outgoing.end(data);
      }
    });
  }
  return { ...settings, send };
}

/** How one request is bounded and named in errors. */
export interface RequestPolicy {
  /** A verb phrase for messages: `inspect container "web"`. */
  operation: string;
  cls: DeadlineClass;
  /** Stop grace, for the `stop` class. */
  graceSeconds?: number;
  signal?: AbortSignal;
}

/** The one helper every Docker call goes through. */
export function request(client: Client, policy: RequestPolicy, req: DockerRequest): Promise<unknown> {
  const deadlineMs = deadlineFor(client.deadlines, policy.cls, policy.graceSeconds);
  return withDeadline(policy.operation, deadlineMs, policy.signal, (signal) => client.send(req, signal));
}

/** GETs the object at `path`, `what` naming it in errors (`container "web"`); `undefined` when Docker has none. */
export async function inspectOrAbsent<T>(
  client: Client,
  what: string,
  path: string,
  signal?: AbortSignal,
): Promise<T | undefined> {
  try {
    return await request(client, { operation: `inspect ${what}`, cls: "inspect", signal }, {
      method: "GET",
      path,
    }) as T;
  } catch (error) {
    if (error instanceof DockerError && error.code === "not_found") return undefined;
    throw error;
  }
}

/** Encodes one path segment (a container name, an image reference). */
export function seg(value: string): string {
  return encodeURIComponent(value);
}

/**
 * Like `request`, for a streamed response whose body `consume` reads: the deadline covers the answer and the whole
 * body, and an abort destroys the response.
 */
export function requestStream<T>(
  client: Client,
  policy: RequestPolicy,
  req: DockerRequest,
  consume: (response: Readable, signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const deadlineMs = deadlineFor(client.deadlines, policy.cls, policy.graceSeconds);
  return withDeadline(policy.operation, deadlineMs, policy.signal, async (signal) => {
    const response = await client.send({ ...req, stream: true }, signal) as Readable;
    const onAbort = (): void => {
      response.destroy();
    };
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      return await consume(response, signal);
    } finally {
      signal.removeEventListener("abort", onAbort);
      response.destroy();
    }
  });
}

/**
 * A streamed response as a web stream: each chunk goes through `map` (empty results are skipped), `signal` or a
 * cancel destroys the response, and a broken stream errors with `broke(error)` unless `signal` aborted it.
 */
export function webStream(
  response: Readable,
  signal: AbortSignal | undefined,
  options: {
    map?: (bytes: Uint8Array) => Uint8Array;
    broke: (error: unknown) => unknown;
    closeOnAbort?: boolean;
  },
): ReadableStream<Uint8Array> {
  const onAbort = (): void => {
    response.destroy();
  };
  signal?.addEventListener("abort", onAbort, { once: true });
  const iterator = response[Symbol.asyncIterator]();
  const done = (): void => {
    signal?.removeEventListener("abort", onAbort);
    response.destroy();
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller): Promise<void> {
      try {
        for (;;) {
          const next = await iterator.next();
          if (next.done) {
            done();
            controller.close();
            return;
          }
          const bytes = new Uint8Array(next.value);
          const out = options.map === undefined ? bytes : options.map(bytes);
          if (out.length > 0) {
            controller.enqueue(out);
            return;
          }
        }
      } catch (error) {
        done();
        if (signal?.aborted && options.closeOnAbort) controller.close();
        else controller.error(signal?.aborted ? signal.reason : options.broke(error));
      }
    },
    cancel(): void {
      done();
    },
  });
}

/** The lines of a streamed response as they arrive (lib/util's one line reader). */
export { textLines };

/** Newline-delimited JSON as it arrives; blank lines are skipped, a line that is not JSON comes as `{stream}`. */
export async function* jsonLines(response: AsyncIterable<unknown>): AsyncGenerator<Record<string, unknown>> {
  for await (const text of textLines(response)) {
    const trimmed = text.trim();
    if (trimmed === "") continue;
    let line: Record<string, unknown>;
    try {
      line = JSON.parse(trimmed);
    } catch {
      line = { stream: trimmed };
    }
    yield line;
  }
}

/** Reads a newline-delimited JSON response to its end. */
export async function readJsonLines(response: Readable): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  for await (const line of jsonLines(response)) out.push(line);
  return out;
}
