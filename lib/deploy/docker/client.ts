/**
 * The single seam to dockerode: every Docker request of the adapter goes through `request`, which applies the
 * deadline policy and maps failures to `DockerError`. dockerode's modem does the HTTP over the Unix socket.
 *
 * @module
 */

import Docker from "dockerode";
import type { Readable } from "node:stream";
import { type DeadlineClass, deadlineFor, type Deadlines, withDeadline } from "./deadline.ts";
import type { LogPolicy } from "./spec.ts";

/** One HTTP request to the Engine API. */
export interface DockerRequest {
  method: "GET" | "POST" | "DELETE" | "PUT";
  /** Path below the API version, already encoded, e.g. `/containers/abc/json`. */
  path: string;
  query?: Record<string, unknown>;
  body?: unknown;
  /** A request body to stream (an image archive). */
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

interface Modem {
  dial(
    options: {
      path: string;
      method: string;
      options: Record<string, unknown>;
      statusCodes: Record<number, boolean>;
      isStream?: boolean;
      file?: Readable;
      authconfig?: RegistryAuth;
      abortSignal?: AbortSignal;
    },
    callback: (error: unknown, data: unknown) => void,
  ): void;
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

/** Opens a dockerode modem on `socketPath`. Nothing is sent until the first request. */
export function openClient(settings: Omit<Client, "send">): Client {
  const docker = new Docker({ socketPath: settings.socketPath, version: API_VERSION });
  const modem = docker.modem as Modem;
  function send(req: DockerRequest, signal: AbortSignal): Promise<unknown> {
    const statusCodes: Record<number, boolean> = { 200: true, 201: true, 204: true };
    for (const status of req.alsoOk ?? []) statusCodes[status] = true;
    const hasQuery = req.query !== undefined && Object.keys(req.query).length > 0;
    const options: Record<string, unknown> = { _query: req.query ?? {}, _body: req.body ?? {} };
    return new Promise((resolve, reject) => {
      modem.dial({
        path: hasQuery ? `${req.path}?` : req.path,
        method: req.method,
        options,
        statusCodes,
        isStream: req.stream === true,
        file: req.file,
        // docker-modem sends it as the X-Registry-Auth header of this one request, never in the URL.
        authconfig: req.auth,
        abortSignal: signal,
      }, (error, data) => error ? reject(error) : resolve(data));
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

/** Reads a newline-delimited JSON response to its end. */
export async function readJsonLines(response: Readable): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  let buffer = "";
  const decoder = new TextDecoder();
  const take = (line: string): void => {
    const trimmed = line.trim();
    if (trimmed === "") return;
    try {
      out.push(JSON.parse(trimmed));
    } catch {
      out.push({ stream: trimmed });
    }
  };
  for await (const chunk of response) {
    buffer += typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
    let at: number;
    while ((at = buffer.indexOf("\n")) >= 0) {
      take(buffer.slice(0, at));
      buffer = buffer.slice(at + 1);
    }
  }
  take(buffer);
  return out;
}
