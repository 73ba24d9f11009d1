/**
 * The exec sessions running on this Machine: each a Docker exec attached over a hijacked connection, ended when
 * its process ends, its attach stream is dropped, nobody attaches within {@link ATTACH_WITHIN_MS}, or the daemon
 * stops. Attaching turns the connection's bytes into NDJSON `output` frames and a last `exit` frame.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { Demuxer, type Engine } from "../deploy/machine/mod.ts";
import { type ExecFrame, RpcError } from "../rpc/mod.ts";
import { messageOf, pollUntil } from "../util/mod.ts";

/** A session nobody attached to within this long is ended. */
export const ATTACH_WITHIN_MS = 30_000;
/** How long after its output ends a process may take to be reported ended. */
const EXIT_WITHIN_MS = 5_000;

/** One exec session. */
export interface Session {
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

/** The sessions of one daemon; see the module comment. */
export class ExecSessions {
  readonly #host: { engine: Engine; stopping: AbortSignal; log(line: string): void };
  readonly #sessions = new Map<string, Session>();

  /** Sessions over `host.engine`, all ended when `host.stopping` aborts. */
  constructor(host: { engine: Engine; stopping: AbortSignal; log(line: string): void }) {
    this.#host = host;
    host.stopping.addEventListener("abort", () => {
      for (const session of [...this.#sessions.values()]) this.end(session);
    }, { once: true });
  }

  /** Sessions running now. */
  get size(): number {
    return this.#sessions.size;
  }

  /** Keeps a started exec as a session, ended unless someone attaches within {@link ATTACH_WITHIN_MS}. */
  open(started: Pick<Session, "id" | "container" | "tty" | "conn" | "leftover">): Session {
    const session: Session = {
      ...started,
      attached: false,
      ended: false,
      timer: setTimeout(() => {
        if (!session.attached) {
          this.#host.log(`exec ${started.id.slice(0, 12)} in "${started.container}": nobody attached, ended`);
          this.end(session);
        }
      }, ATTACH_WITHIN_MS),
    };
    this.#sessions.set(session.id, session);
    return session;
  }

  /** The session of this id; `not_found` when it ended or never started. */
  find(id: string): Session {
    const session = this.#sessions.get(id);
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

  /** Ends a session: its connection closes and it is forgotten. */
  end(session: Session): void {
    if (session.ended) return;
    session.ended = true;
    clearTimeout(session.timer);
    this.#sessions.delete(session.id);
    try {
      session.conn.close();
    } catch {
      // already closed
    }
  }

  /** Resizes a TTY session's terminal; nothing for one without a TTY or whose process ended. */
  async resize(session: Session, cols: number, rows: number, signal: AbortSignal): Promise<void> {
    if (!session.tty) return;
    // A process that already ended has no TTY to resize.
    await this.#host.engine.resizeExec(session.id, { cols, rows }, signal).catch(() => {});
  }

  /** The session's output as NDJSON frames, then its exit code; only one attach per session. */
  attach(id: string): ReadableStream<Uint8Array> {
    const session = this.find(id);
    if (session.attached) {
      throw new RpcError("conflict", `Exec session "${id}" is already attached`);
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
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
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
        const exitCode = await this.#exitCodeOf(session);
        controller.enqueue(line({ type: "exit", "exit_code": exitCode }));
        controller.close();
        this.end(session);
      },
      cancel: () => {
        this.end(session);
      },
    });
  }

  /** The exit code once Docker says the process ended (its stream can end a moment before); null if unknown. */
  async #exitCodeOf(session: Session): Promise<number | null> {
    try {
      const exited = await pollUntil(async () => {
        const state = await this.#host.engine.inspectExec(session.id);
        return state.running ? undefined : { code: state.exitCode };
      }, { timeoutMs: EXIT_WITHIN_MS, intervalMs: 50 });
      return exited?.code ?? null;
    } catch (error) {
      this.#host.log(`exec ${session.id.slice(0, 12)}: cannot read its exit code: ${messageOf(error)}`);
      return null;
    }
  }
}
