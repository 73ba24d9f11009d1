/**
 * `connectMachine`: a typed Machine RPC client over the daemon's unix socket (or any fetch-like transport).
 *
 * @module
 */

import { CATALOG, type RouteName, type RouteTypes } from "./catalog.ts";
import type {
  ContainerSpecDocument,
  EnsureContainerRequest,
  EnsureContainerResponse,
  EnsureContainerWithFilesRequest,
} from "./container_routes.ts";
import type { DescribeContractResponse } from "./machine_routes.ts";
import { type EmptyRequest, EmptyRequestSchema, type Route } from "./route.ts";
import { envelope, ErrorBodySchema } from "./envelope.ts";
import { isRpcErrorCode, RpcError } from "./errors.ts";
import { CodedError, messageOf, traceMark } from "../util/mod.ts";

/** How to reach a Machine. */
export interface ConnectOptions {
  /** The daemon's socket, e.g. `/run/ployz/ployz.sock`. */
  socketPath?: string;
  /** Another transport (an SSH bridge, or an app in-process for tests); used instead of the socket. */
  fetch?: (request: Request) => Promise<Response>;
  /** How errors name the target when the socket path does not fit; default the socket path. */
  label?: string;
  /** Path each call is posted to, before the capability; default `/rpc/` (see `viaEntry` for forwarding). */
  pathPrefix?: string;
  /** Called once by `close()`: releases what the transport holds (an SSH connection). */
  onClose?: () => void;
}

/** Per-call options. */
export interface CallOptions {
  /** Cancels the call; a caller bounds its own patience with it. */
  signal?: AbortSignal;
}

/** A route's client method: its request and the call's options, or the options alone for a route asking nothing. */
export type ClientMethod<Req, Res> = [Req] extends [EmptyRequest] ? (options?: CallOptions) => Promise<Res>
  : (request: Req, options?: CallOptions) => Promise<Res>;

/**
 * One typed method per catalog row, named and typed as its route group declares it; a streamed route answers
 * its body. `forward` is not among them: {@link viaEntry} speaks it through the call's path.
 */
export type RouteMethods = {
  readonly [K in Exclude<RouteName, "forward">]: ClientMethod<RouteTypes[K][0], RouteTypes[K][1]>;
};

/** One Machine's RPC surface: the route methods, a capability check, and the connection's release. */
export interface MachineClient extends RouteMethods, Disposable {
  /** Generic over the spec, so a caller's own spec type passes unchanged (see {@link EnsureContainerRequest}). */
  ensureContainer<S extends ContainerSpecDocument>(
    request: EnsureContainerRequest<S>,
    options?: CallOptions,
  ): Promise<EnsureContainerResponse>;
  /** The same for `ensureContainerWithFiles`. */
  ensureContainerWithFiles<S extends ContainerSpecDocument>(
    request: EnsureContainerWithFilesRequest<S>,
    options?: CallOptions,
  ): Promise<EnsureContainerResponse>;
  /**
   * Throws `unsupported` with `details.capability` unless the Machine's DescribeContract lists `capability`.
   * The contract is read once per client.
   */
  requireCapability(capability: string, options?: CallOptions): Promise<void>;
  /** Releases the connection pool. */
  close(): void;
}

/** How a client sends: kept per client so a forwarding client can share its Entry Machine's connection pool. */
const TRANSPORTS = new WeakMap<
  MachineClient,
  { send: (request: Request) => Promise<Response>; label: string }
>();

/** The transport of a client made by {@link connectMachine}, or `undefined` for any other object. */
export function transportOf(
  client: MachineClient,
): { send: (request: Request) => Promise<Response>; label: string } | undefined {
  return TRANSPORTS.get(client);
}

/**
 * Whether a request whose transport failed may have reached the Machine: anything but a failed connect, or a
 * transport that says it sent nothing (`details.sent === false`, e.g. an SSH connection that never came up).
 */
function mayHaveGoneOut(error: unknown): boolean {
  if (error instanceof CodedError && error.details.sent === false) return false;
  return !/\(Connect\)/.test(String(causeOf(error)));
}

/** Opens a client. Nothing is sent until the first call; a socket that does not answer fails that call. */
export function connectMachine(options: ConnectOptions): MachineClient {
  const label = options.label ?? options.socketPath ?? "machine";
  let httpClient: Deno.HttpClient | undefined;
  let send: (request: Request) => Promise<Response>;
  if (options.fetch !== undefined) {
    send = options.fetch;
  } else if (options.socketPath !== undefined) {
    const client = Deno.createHttpClient({ proxy: { transport: "unix", path: options.socketPath } });
    httpClient = client;
    send = (request) => fetch(request, { client });
  } else {
    throw new RpcError("invalid_argument", "Cannot connect to a Machine: give a socket path or a transport");
  }
  let contract: Promise<DescribeContractResponse> | undefined;
  let onClose = options.onClose;
  function release(): void {
    httpClient?.close();
    httpClient = undefined;
    const close = onClose;
    onClose = undefined;
    close?.();
  }
  const prefix = options.pathPrefix ?? "/rpc/";

  async function post(name: RouteName, fields: object, signal?: AbortSignal): Promise<Response> {
    const capability = CATALOG[name].capability;
    let response: Response;
    try {
      response = await send(
        new Request(`http://localhost${prefix}${capability}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(envelope(fields)),
          signal,
        }),
      );
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw new RpcError(
        "unavailable",
        `Cannot reach the Machine RPC socket "${label}": ${messageOf(error)}`,
        {
          // Whether the request may have gone out: anything but a failed connect. The deploy executor reports
          // such a call as "outcome unknown", never as a clean failure.
          details: { capability, socket: label, "no_answer": mayHaveGoneOut(error) },
          cause: error,
        },
      );
    }
    if (response.ok) return response;
    const text = await response.text().catch(() => "");
    let parsed;
    try {
      parsed = ErrorBodySchema.safeParse(JSON.parse(text));
    } catch {
      parsed = undefined;
    }
    if (parsed?.success) {
      const { code, message, details } = parsed.data.error;
      throw new RpcError(isRpcErrorCode(code) ? code : "internal", message, {
        details: { capability, ...details, ...(isRpcErrorCode(code) ? {} : { "received_code": code }) },
      });
    }
    throw new RpcError(
      "internal",
      `Machine "${label}" answered "${capability}" with status ${response.status} and no error body`,
      { details: { capability, status: response.status } },
    );
  }

  /** A streamed answer's body; an answer without one is an empty stream. */
  async function stream(
    name: RouteName,
    fields: object,
    signal?: AbortSignal,
  ): Promise<ReadableStream<Uint8Array>> {
    const response = await post(name, fields, signal);
    return response.body ?? new ReadableStream({ start: (c) => c.close() });
  }

  async function call<K extends RouteName>(
    name: K,
    fields: object,
    signal?: AbortSignal,
  ): Promise<RouteTypes[K][1]> {
    const route = CATALOG[name];
    const asked = performance.now();
    const response = await post(name, fields, signal).finally(() =>
      traceMark(
        `rpc ${name} to ${label}: ${(performance.now() - asked).toFixed(1)} ms since ${asked.toFixed(1)}`,
      )
    );
    let body: unknown;
    try {
      body = await response.json();
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw new RpcError(
        "internal",
        `Machine "${label}" answered "${route.capability}" with a body that is not JSON`,
        {
          details: { capability: route.capability },
          cause: error,
        },
      );
    }
    if (route.response === "stream") return body as RouteTypes[K][1];
    const checked = route.response.safeParse(body);
    if (!checked.success) {
      const issue = checked.error.issues[0];
      throw new RpcError(
        "internal",
        `Machine "${label}" answered "${route.capability}" with a malformed body: field "${
          issue.path.join(".")
        }": ${issue.message}`,
        { details: { capability: route.capability } },
      );
    }
    return checked.data as RouteTypes[K][1];
  }

  function describe(signal?: AbortSignal): Promise<DescribeContractResponse> {
    if (contract === undefined) {
      contract = call("describeContract", {}, signal);
      contract.catch(() => contract = undefined);
    }
    return contract;
  }

  const methods: Record<string, unknown> = {};
  for (const [name, route] of Object.entries(CATALOG) as [RouteName, Route<unknown, unknown>][]) {
    if (name === "forward") continue;
    const send = route.response === "stream" ? stream : call;
    methods[name] = route.request === EmptyRequestSchema
      ? (o?: CallOptions) => send(name, {}, o?.signal)
      : (request: object, o?: CallOptions) => send(name, request, o?.signal);
  }
  const client: MachineClient = {
    ...methods as unknown as RouteMethods,
    describeContract: async (o?: CallOptions): Promise<DescribeContractResponse> => {
      const answer = await call("describeContract", {}, o?.signal);
      contract = Promise.resolve(answer);
      return answer;
    },
    async requireCapability(capability, o): Promise<void> {
      const served = await describe(o?.signal);
      if (served.capabilities.includes(capability)) return;
      throw new RpcError(
        "unsupported",
        `Machine "${served.machine_name}" does not serve "${capability}": upgrade its daemon`,
        { details: { capability, "machine_id": served.machine_id } },
      );
    },
    close(): void {
      release();
    },
    [Symbol.dispose](): void {
      release();
    },
  };
  TRANSPORTS.set(client, { send, label });
  return client;
}

function causeOf(error: unknown): unknown {
  return error instanceof Error && error.cause !== undefined ? error.cause : error;
}
