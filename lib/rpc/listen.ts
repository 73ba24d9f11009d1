/**
 * Serving Machine RPC on a unix socket: a stale socket file (left by a crash) is unlinked only after a connect
 * probe fails, and the socket gets mode 0660 after listening, because its mode otherwise follows the umask.
 *
 * @module
 */

import { socketAnswers } from "../util/mod.ts";
import { RpcError } from "./errors.ts";

/** A running socket server. */
export interface SocketServer extends AsyncDisposable {
  /** The socket path. */
  readonly path: string;
  /** Resolves when the server has stopped. */
  readonly finished: Promise<void>;
  /** Stops accepting, lets answers in flight finish, and removes the socket file. */
  shutdown(): Promise<void>;
}

/** Options of {@link listenUnix}. */
export interface ListenOptions {
  /** The socket path. */
  path: string;
  /** File mode set after listening; default 0o660. */
  mode?: number;
}

/**
 * Listens on a unix socket and serves `handler`; its `signal` aborts once the answer is delivered or the caller
 * went away. Refuses with `busy` when another process answers on the path,
 * so a second daemon never steals a live socket.
 */
export async function listenUnix(
  options: ListenOptions,
  handler: (request: Request, signal: AbortSignal) => Response | Promise<Response>,
): Promise<SocketServer> {
  const { path } = options;
  let exists = false;
  try {
    exists = (await Deno.lstat(path)).isSocket === true;
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  if (exists) {
    if (await socketAnswers(path)) {
      throw new RpcError("busy", `Cannot listen on "${path}": another process answers on it`, {
        details: { socket: path },
      });
    }
    await Deno.remove(path);
  }
  const controller = new AbortController();
  const server = Deno.serve(
    { path, signal: controller.signal, onListen: () => {} },
    (request, info) => {
      // Aborts once the answer is delivered or the caller went away, ending follows and other long work.
      const call = new AbortController();
      info.completed.then(() => call.abort(), () => call.abort());
      return handler(request, call.signal);
    },
  );
  await Deno.chmod(path, options.mode ?? 0o660);
  let stopping: Promise<void> | undefined;
  async function shutdown(): Promise<void> {
    stopping ??= (async () => {
      await server.shutdown();
      await Deno.remove(path).catch(() => {});
    })();
    await stopping;
  }
  return {
    path,
    finished: server.finished,
    shutdown,
    [Symbol.asyncDispose]: shutdown,
  };
}
