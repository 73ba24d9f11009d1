/**
 * The observe routes of Machine RPC, served by asking this Machine's own `ployzd observe` over
 * `<runDir>/observe.sock`. The daemon copies nothing and keeps nothing: each answer is what the Observe Store holds
 * now, with the answering Machine named. An Observe Store that is down or slow is `unavailable` within a deadline,
 * never a hang.
 *
 * @module
 */

import {
  isRpcErrorCode,
  type LogHistoryResponse,
  type MetricHistoryResponse,
  readTailFrame,
  RpcError,
  type RpcHandlers,
} from "../rpc/mod.ts";
import type { LocalMachine } from "./machine_file.ts";

/** What the observe handlers need from the running daemon. */
export interface ObserveProxyHost {
  /** The local record as it is now. */
  record(): LocalMachine;
  /** `<runDir>/observe.sock`. */
  observeSocket: string;
  /** Aborts when the daemon stops, ending open tails. */
  stopping: AbortSignal;
  /** How long the Observe Store gets to answer a query (or start a tail); default 15000 ms. */
  deadlineMs?: number;
}

/** The default {@link ObserveProxyHost.deadlineMs}. */
export const OBSERVE_DEADLINE_MS = 15_000;

type ObserveHandlers = Required<Pick<RpcHandlers, "logHistory" | "tailLogs" | "metricHistory">>;

/** An error's message with the reason fetch keeps in its cause (fetch itself says only "fetch failed"). */
function fetchFailureMessage(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // fetch says only "fetch failed"; the reason (no such socket, refused) is its cause.
  const cause = error.cause instanceof Error
    ? error.cause.message.replace(/^error sending request for url \([^)]*\): /, "")
    : undefined;
  return cause === undefined || cause === error.message ? error.message : `${error.message}: ${cause}`;
}

const encoder = new TextEncoder();

/** Handlers of `ployz.observe.{log_history,tail_logs,metric_history}.v1`. */
export function observeHandlers(host: ObserveProxyHost): ObserveHandlers {
  return {
    async logHistory(req, ctx) {
      const answer = await query<Omit<LogHistoryResponse, "machine_id" | "machine_name">>(
        host,
        "/observe/v1/log_history",
        {
          ...req.selector,
          since: req.since,
          until: req.until,
          grep: req.grep,
          limit: req.limit,
        },
        ctx.signal,
      );
      const who = machineOf(host);
      return {
        ...who,
        lines: answer.lines.map((line) => ({ ...line, "machine_name": who.machine_name })),
        truncated: answer.truncated,
        notes: answer.notes ?? [],
      };
    },
    async metricHistory(req, ctx) {
      const answer = await query<Omit<MetricHistoryResponse, "machine_id" | "machine_name">>(
        host,
        "/observe/v1/metric_history",
        req,
        ctx.signal,
      );
      return { ...machineOf(host), ...answer };
    },
    async tailLogs(req, ctx) {
      const posted = await post(
        host,
        "/observe/v1/tail_logs",
        { ...req.selector, since: req.since, backlog: req.backlog, grep: req.grep },
        ctx.signal,
      );
      return tailStream(host, posted, { heartbeat: req.heartbeat === true, signal: ctx.signal });
    },
  };
}

/** An answer of the Observe Store whose headers arrived: its body is read, then `client` closed. */
interface Posted {
  response: Response;
  client: Deno.HttpClient;
  /** Ends the request (a tail the caller cancelled). */
  cancel: AbortController;
}

/** POSTs to observe.sock; the response headers must arrive within the deadline. */
async function post(
  host: ObserveProxyHost,
  path: string,
  body: unknown,
  caller: AbortSignal,
): Promise<Posted> {
  const deadlineMs = host.deadlineMs ?? OBSERVE_DEADLINE_MS;
  const client = Deno.createHttpClient({ proxy: { transport: "unix", path: host.observeSocket } });
  const cancel = new AbortController();
  const signal = AbortSignal.any([caller, host.stopping, cancel.signal]);
  const timer = setTimeout(() => cancel.abort("deadline"), deadlineMs);
  try {
    // The host part is not dialled (the unix proxy is); "ployz" is the name the serve set's net grant allows
    // for that, so the set grants no loopback address at all.
    const response = await fetch(`http://ployz${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      client,
      signal,
    });
    if (response.ok) return { response, client, cancel };
    const text = await response.text().catch(() => "");
    throw refusal(response.status, text);
  } catch (error) {
    client.close();
    if (error instanceof RpcError) throw error;
    if (cancel.signal.aborted) {
      throw new RpcError(
        "unavailable",
        `The Observe Store of Machine "${host.record().name}" did not answer within ${deadlineMs} ms`,
        { details: { socket: host.observeSocket } },
      );
    }
    if (caller.aborted || host.stopping.aborted) throw error;
    throw new RpcError(
      "unavailable",
      `Cannot reach the Observe Store of Machine "${host.record().name}" at "${host.observeSocket}": ${
        fetchFailureMessage(error)
      }`,
      { details: { socket: host.observeSocket }, cause: error },
    );
  } finally {
    clearTimeout(timer);
  }
}

/** One query's JSON answer; an answer cut short is `unavailable`. */
async function query<T>(
  host: ObserveProxyHost,
  path: string,
  body: unknown,
  caller: AbortSignal,
): Promise<T> {
  const { response, client } = await post(host, path, body, caller);
  try {
    return await response.json() as T;
  } catch (error) {
    throw new RpcError(
      "unavailable",
      `The Observe Store's answer was cut short: ${fetchFailureMessage(error)}`,
      {
        cause: error,
      },
    );
  } finally {
    client.close();
  }
}

function machineOf(host: ObserveProxyHost): { "machine_id": string; "machine_name": string } {
  const record = host.record();
  return { "machine_id": record.id, "machine_name": record.name };
}

/**
 * One line of the Observe Store's tail as this Machine relays it: a log line names the Machine, a heartbeat goes
 * only to a caller that asked for them, and anything unreadable is dropped. Undefined: nothing to relay.
 */
export function relayTailLine(raw: string, machineName: string, heartbeat: boolean): string | undefined {
  const frame = raw.trim() === "" ? undefined : readTailFrame(safeParse(raw));
  if (frame === undefined) return undefined;
  if (frame.type === "heartbeat" && !heartbeat) return undefined;
  const out = frame.type === "line" ? { ...frame, "machine_name": machineName } : frame;
  return `${JSON.stringify(out)}\n`;
}

/** The tail relayed line by line; when the Observe Store stops, a last `note` frame says so (unless the caller left). */
function tailStream(
  host: ObserveProxyHost,
  { response, client, cancel }: Posted,
  options: { heartbeat: boolean; signal: AbortSignal },
): ReadableStream<Uint8Array> {
  const name = host.record().name;
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let pending = "";
  let closed = false;
  const finish = (): void => {
    if (closed) return;
    closed = true;
    client.close();
  };
  const end = (controller: ReadableStreamDefaultController<Uint8Array>, why: string): void => {
    if (!options.signal.aborted && !host.stopping.aborted) {
      const note = { type: "note", message: `The Observe Store of Machine "${name}" ${why}` };
      controller.enqueue(encoder.encode(`${JSON.stringify(note)}\n`));
    }
    finish();
    controller.close();
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller): Promise<void> {
      for (;;) {
        const newline = pending.indexOf("\n");
        if (newline >= 0) {
          const out = relayTailLine(pending.slice(0, newline), name, options.heartbeat);
          pending = pending.slice(newline + 1);
          if (out === undefined) continue;
          controller.enqueue(encoder.encode(out));
          return;
        }
        let next: ReadableStreamReadResult<string>;
        try {
          next = await reader.read();
        } catch (error) {
          return end(controller, `stopped answering: ${fetchFailureMessage(error)}`);
        }
        if (next.done) return end(controller, "ended the tail");
        pending += next.value;
      }
    },
    async cancel(): Promise<void> {
      cancel.abort();
      await reader.cancel().catch(() => {});
      finish();
    },
  });
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function refusal(status: number, text: string): RpcError {
  let body: { code?: unknown; message?: unknown; details?: unknown } | undefined;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const code = isRpcErrorCode(body?.code) ? body.code : "internal";
  const message = typeof body?.message === "string"
    ? body.message
    : `The Observe Store answered status ${status}`;
  const details = body?.details !== null && typeof body?.details === "object"
    ? { ...body.details as Record<string, unknown> }
    : {};
  return new RpcError(code, message, { details });
}
