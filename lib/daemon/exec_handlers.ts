/**
 * `ployz exec` on this Machine: `ployz.container.exec.v1` creates a Docker exec in an owned container and starts it
 * attached over a hijacked connection to the Docker socket; `exec_attach.v1` streams its output as NDJSON frames
 * and ends with its exit code; `exec_input.v1` writes stdin, resizes the TTY or closes stdin. A session lives until
 * its process ends, its attach stream is dropped, or nobody attaches within {@link ATTACH_WITHIN_MS}; at most
 * {@link MAX_SESSIONS} run at once.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import type { Engine } from "../deploy/mod.ts";
import {
  type ExecFrame,
  type ExecInputResponse,
  type ExecStartResponse,
  MAX_EXEC_INPUT,
  RpcError,
  type RpcHandlers,
} from "../rpc/mod.ts";

/** A session nobody attached to within this long is ended. */
export const ATTACH_WITHIN_MS = 30_000;
/** Sessions running at once on one Machine. */
export const MAX_SESSIONS = 64;
/** How long after its output ends a process may take to be reported ended. */
const EXIT_WITHIN_MS = 5_000;
/** A terminal's end of input (^D): what a TTY session gets when the operator's input ends. */
const END_OF_TRANSMISSION = new Uint8Array([4]);

/** What the exec handlers need from the daemon. */
export interface ExecHost {
  /** This Machine's Docker (ownership checks). */
  readonly engine: Engine;
  /** The Docker socket the exec's stream is hijacked from. */
  readonly dockerSocket: string;
  /** Aborts when the daemon stops. */
  readonly stopping: AbortSignal;
  /** One line per notable event. */
  log(line: string): void;
}

interface Session {
  id: string;
  container: string;
  tty: boolean;
  conn: Deno.UnixConn;
  /** Bytes read after the upgrade's head. */
  leftover: Uint8Array;
  attached: boolean;
  ended: boolean;
  timer: ReturnType<typeof setTimeout>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A JSON call to the Docker API over its unix socket. */
async function dockerJson(
  socket: string,
  method: string,
  path: string,
  body: unknown,
  signal: AbortSignal,
): Promise<Record<string, unknown>> {
  const client = Deno.createHttpClient({ proxy: { transport: "unix", path: socket } });
  try {
    // Over the unix socket the host name is never resolved; `ployz` is the one the serve permission set allows.
    const response = await fetch(`http://ployz/v1.41${path}`, {
      method,
      client,
      signal,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) {
      let message = text.trim();
      try {
        message = String(JSON.parse(text).message ?? message);
      } catch {
        // not JSON: keep the text
      }
      throw new RpcError(
        response.status === 404 ? "not_found" : "unavailable",
        `Docker: ${message.slice(0, 300)}`,
      );
    }
    return text === "" ? {} : JSON.parse(text);
  } finally {
    client.close();
  }
}

/** Starts exec `id` over a raw connection and returns it after Docker's `101 UPGRADED`. */
async function hijack(
  socket: string,
  id: string,
  tty: boolean,
): Promise<{ conn: Deno.UnixConn; rest: Uint8Array }> {
  const conn = await Deno.connect({ transport: "unix", path: socket });
  try {
    const body = JSON.stringify({ Detach: false, Tty: tty });
    await conn.write(encoder.encode(
      `POST /v1.41/exec/${encodeURIComponent(id)}/start HTTP/1.1\r\nHost: docker\r\n` +
        `Content-Type: application/json\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n` +
        `Content-Length: ${encoder.encode(body).length}\r\n\r\n${body}`,
    ));
    let buffer = new Uint8Array(0);
    const chunk = new Uint8Array(16 * 1024);
    for (;;) {
      const text = decoder.decode(buffer);
      const end = text.indexOf("\r\n\r\n");
      if (end >= 0) {
        const status = /^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1];
        if (status !== "101" && status !== "200") {
          throw new RpcError("unavailable", `Docker refused to start the exec: ${text.split("\r\n")[0]}`);
        }
        return { conn, rest: buffer.slice(encoder.encode(text.slice(0, end + 4)).length) };
      }
      if (buffer.length > 64 * 1024) {
        throw new RpcError("unavailable", "Docker's answer to the exec had no end");
      }
      const n = await conn.read(chunk);
      if (n === null) throw new RpcError("unavailable", "Docker closed the exec connection before answering");
      const next = new Uint8Array(buffer.length + n);
      next.set(buffer);
      next.set(chunk.subarray(0, n), buffer.length);
      buffer = next;
    }
  } catch (error) {
    conn.close();
    throw error;
  }
}

/** Splits Docker's multiplexed (non-TTY) output into frames: 8-byte header (stream, 0, 0, 0, size), payload. */
function demuxer(): (bytes: Uint8Array) => ExecFrame[] {
  let buffer = new Uint8Array(0);
  return (bytes) => {
    const next = new Uint8Array(buffer.length + bytes.length);
    next.set(buffer);
    next.set(bytes, buffer.length);
    buffer = next;
    const frames: ExecFrame[] = [];
    while (buffer.length >= 8) {
      const size = new DataView(buffer.buffer, buffer.byteOffset).getUint32(4);
      if (buffer.length < 8 + size) break;
      frames.push({
        type: "output",
        stream: buffer[0] === 2 ? "stderr" : "stdout",
        data: Buffer.from(buffer.subarray(8, 8 + size)).toString("base64"),
      });
      buffer = buffer.slice(8 + size);
    }
    return frames;
  };
}

/** The exec handlers. */
export function execHandlers(host: ExecHost): RpcHandlers {
  const sessions = new Map<string, Session>();

  function end(session: Session): void {
    if (session.ended) return;
    session.ended = true;
    clearTimeout(session.timer);
    sessions.delete(session.id);
    try {
      session.conn.close();
    } catch {
      // already closed
    }
  }
  host.stopping.addEventListener("abort", () => {
    for (const session of [...sessions.values()]) end(session);
  }, { once: true });

  function find(id: string): Session {
    const session = sessions.get(id);
    if (session === undefined) {
      throw new RpcError(
        "not_found",
        `No exec session "${id}" on this Machine (it ended, or was never started)`,
        {
          details: { session: id },
        },
      );
    }
    return session;
  }

  /** The exit code once Docker says the process ended (its stream can end a moment before); null if unknown. */
  async function exitCodeOf(session: Session): Promise<number | null> {
    const deadline = Date.now() + EXIT_WITHIN_MS;
    try {
      for (;;) {
        const inspected = await dockerJson(
          host.dockerSocket,
          "GET",
          `/exec/${encodeURIComponent(session.id)}/json`,
          undefined,
          AbortSignal.timeout(10_000),
        );
        if (inspected.Running !== true) {
          return typeof inspected.ExitCode === "number" ? inspected.ExitCode : null;
        }
        if (Date.now() > deadline) return null;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } catch (error) {
      host.log(`exec ${session.id.slice(0, 12)}: cannot read its exit code: ${messageOf(error)}`);
      return null;
    }
  }

  async function resize(session: Session, cols: number, rows: number, signal: AbortSignal): Promise<void> {
    if (!session.tty) return;
    await dockerJson(
      host.dockerSocket,
      "POST",
      `/exec/${encodeURIComponent(session.id)}/resize?h=${rows}&w=${cols}`,
      undefined,
      signal,
    ).catch(() => {}); // A process that already ended has no TTY to resize.
  }

  return {
    async execStart(req, ctx): Promise<ExecStartResponse> {
      if (sessions.size >= MAX_SESSIONS) {
        throw new RpcError(
          "busy",
          `Too many exec sessions on this Machine (${MAX_SESSIONS}); try again later`,
        );
      }
      const observed = await host.engine.inspectContainer(req.id, ctx.signal);
      if (observed === undefined) {
        throw new RpcError("not_found", `Cannot exec in container "${req.id}": no such container`, {
          details: { container: req.id },
        });
      }
      if (!observed.owned) {
        throw new RpcError(
          "conflict",
          `Refusing to exec in container "${observed.name}": Ployz on this Machine does not own it`,
          { details: { container: observed.name } },
        );
      }
      if (observed.state !== "running") {
        throw new RpcError(
          "conflict",
          `Cannot exec in container "${observed.name}": it is ${observed.state}`,
          {
            details: { container: observed.name, state: observed.state },
          },
        );
      }
      const created = await dockerJson(
        host.dockerSocket,
        "POST",
        `/containers/${encodeURIComponent(observed.id)}/exec`,
        { AttachStdin: true, AttachStdout: true, AttachStderr: true, Tty: req.tty, Cmd: req.cmd },
        ctx.signal,
      );
      const id = String(created.Id ?? "");
      if (!/^[0-9a-f]{12,128}$/.test(id)) throw new RpcError("internal", "Docker answered no exec id");
      const { conn, rest } = await hijack(host.dockerSocket, id, req.tty);
      const session: Session = {
        id,
        container: observed.name,
        tty: req.tty,
        conn,
        leftover: rest,
        attached: false,
        ended: false,
        timer: setTimeout(() => {
          if (!session.attached) {
            host.log(`exec ${id.slice(0, 12)} in "${observed.name}": nobody attached, ended`);
            end(session);
          }
        }, ATTACH_WITHIN_MS),
      };
      sessions.set(id, session);
      if (req.cols !== undefined && req.rows !== undefined) {
        await resize(session, req.cols, req.rows, ctx.signal);
      }
      host.log(`exec ${id.slice(0, 12)} in "${observed.name}"${req.tty ? " with a TTY" : ""}`);
      return { session: id, container: observed.name };
    },

    execAttach(req): Promise<ReadableStream<Uint8Array>> {
      const session = find(req.session);
      if (session.attached) {
        throw new RpcError("conflict", `Exec session "${req.session}" is already attached`);
      }
      session.attached = true;
      clearTimeout(session.timer);
      const split = session.tty ? undefined : demuxer();
      const frames = (bytes: Uint8Array): ExecFrame[] =>
        split === undefined
          ? [{ type: "output", stream: "stdout", data: Buffer.from(bytes).toString("base64") }]
          : split(bytes);
      const line = (frame: ExecFrame): Uint8Array => encoder.encode(JSON.stringify(frame) + "\n");
      const reader = session.conn.readable.getReader();
      let first: Uint8Array | undefined = session.leftover.length > 0 ? session.leftover : undefined;
      return Promise.resolve(
        new ReadableStream<Uint8Array>({
          async pull(controller) {
            try {
              const chunk = first ?? (await reader.read()).value;
              first = undefined;
              if (chunk !== undefined) {
                for (const frame of frames(chunk)) controller.enqueue(line(frame));
                return;
              }
            } catch {
              // The connection ended: the exit code says how.
            }
            const exitCode = await exitCodeOf(session);
            controller.enqueue(line({ type: "exit", "exit_code": exitCode }));
            controller.close();
            end(session);
          },
          cancel() {
            end(session);
          },
        }),
      );
    },

    async execInput(req, ctx): Promise<ExecInputResponse> {
      const session = find(req.session);
      if (req.data !== undefined) {
        const bytes = new Uint8Array(Buffer.from(req.data, "base64"));
        if (bytes.length > MAX_EXEC_INPUT) {
          throw new RpcError(
            "invalid_argument",
            `Exec input of ${bytes.length} bytes is over ${MAX_EXEC_INPUT}`,
          );
        }
        let written = 0;
        while (written < bytes.length) written += await session.conn.write(bytes.subarray(written));
      }
      if (req.cols !== undefined && req.rows !== undefined) {
        await resize(session, req.cols, req.rows, ctx.signal);
      }
      if (req.eof === true) {
        // Closing a TTY session's input would end its stream; a terminal says "end of input" with ^D instead.
        if (session.tty) await session.conn.write(END_OF_TRANSMISSION).catch(() => 0);
        else await session.conn.closeWrite().catch(() => {});
      }
      return { running: !session.ended };
    },
  };
}
