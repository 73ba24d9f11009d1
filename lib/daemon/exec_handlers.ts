/**
 * `ployz exec` on this Machine: `ployz.container.exec.v1` creates a Docker exec in an owned container and starts it
 * attached over a hijacked connection to the Docker socket (both through the Engine, so its deadlines and errors
 * hold); `exec_attach.v1` streams its output as NDJSON frames
 * and ends with its exit code; `exec_input.v1` writes stdin, resizes the TTY or closes stdin. A session lives until
 * its process ends, its attach stream is dropped, or nobody attaches within {@link ATTACH_WITHIN_MS}; at most
 * {@link MAX_SESSIONS} run at once.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { Demuxer, type Engine } from "../deploy/machine/mod.ts";
import { pollUntil } from "../util/mod.ts";
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
  /** This Machine's Docker. */
  readonly engine: Engine;
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

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
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
    try {
      const exited = await pollUntil(async () => {
        const state = await host.engine.inspectExec(session.id);
        return state.running ? undefined : { code: state.exitCode };
      }, { timeoutMs: EXIT_WITHIN_MS, intervalMs: 50 });
      return exited?.code ?? null;
    } catch (error) {
      host.log(`exec ${session.id.slice(0, 12)}: cannot read its exit code: ${messageOf(error)}`);
      return null;
    }
  }

  async function resize(session: Session, cols: number, rows: number, signal: AbortSignal): Promise<void> {
    if (!session.tty) return;
    // A process that already ended has no TTY to resize.
    await host.engine.resizeExec(session.id, { cols, rows }, signal).catch(() => {});
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
      const id = await host.engine.createExec(observed.id, { cmd: req.cmd, tty: req.tty }, ctx.signal);
      const { conn, rest } = await host.engine.startExec(id, req.tty, ctx.signal);
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
      const demuxer = session.tty ? undefined : new Demuxer();
      const frames = (bytes: Uint8Array): ExecFrame[] =>
        (demuxer?.push(bytes) ?? [{ stream: "stdout", data: bytes }]).map((f) => ({
          type: "output",
          stream: f.stream,
          data: Buffer.from(f.data).toString("base64"),
        }));
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
