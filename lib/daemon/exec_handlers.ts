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
import type { Engine } from "../deploy/machine/mod.ts";
import {
  type ExecInputResponse,
  type ExecStartResponse,
  MAX_EXEC_INPUT,
  RpcError,
  type RpcHandlers,
} from "../rpc/mod.ts";
import { ExecSessions } from "./exec_sessions.ts";

export { ATTACH_WITHIN_MS } from "./exec_sessions.ts";

/** Sessions running at once on one Machine. */
export const MAX_SESSIONS = 64;
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

/** The exec handlers. */
export function execHandlers(host: ExecHost): RpcHandlers {
  const sessions = new ExecSessions(host);
  return {
    async execStart(req, ctx): Promise<ExecStartResponse> {
      if (sessions.size >= MAX_SESSIONS) {
        throw new RpcError(
          "busy",
          `Too many exec sessions on this Machine (${MAX_SESSIONS}); try again later`,
        );
      }
      const container = await runningOwned(host.engine, req.id, ctx.signal);
      const id = await host.engine.createExec(container.id, { cmd: req.cmd, tty: req.tty }, ctx.signal);
      const { conn, rest } = await host.engine.startExec(id, req.tty, ctx.signal);
      const session = sessions.open({ id, container: container.name, tty: req.tty, conn, leftover: rest });
      if (req.cols !== undefined && req.rows !== undefined) {
        await sessions.resize(session, req.cols, req.rows, ctx.signal);
      }
      host.log(`exec ${id.slice(0, 12)} in "${container.name}"${req.tty ? " with a TTY" : ""}`);
      return { session: id, container: container.name };
    },
    execAttach(req): Promise<ReadableStream<Uint8Array>> {
      return Promise.resolve(sessions.attach(req.session));
    },
    async execInput(req, ctx): Promise<ExecInputResponse> {
      const session = sessions.find(req.session);
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
        await sessions.resize(session, req.cols, req.rows, ctx.signal);
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

/** The container to exec in: it exists, Ployz owns it, and it runs; refused naming which does not hold. */
async function runningOwned(
  engine: Engine,
  ref: string,
  signal: AbortSignal,
): Promise<{ id: string; name: string }> {
  const observed = await engine.inspectContainer(ref, signal);
  if (observed === undefined) {
    throw new RpcError("not_found", `Cannot exec in container "${ref}": no such container`, {
      details: { container: ref },
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
  return observed;
}
