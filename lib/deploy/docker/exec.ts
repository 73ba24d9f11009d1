/**
 * Docker execs in owned containers: create one, start it attached over a hijacked connection to the Docker socket,
 * read its state, resize its TTY. Each call is bounded by the deadline policy and fails as `DockerError`, like
 * every other call of the adapter; the hijacked connection itself, once Docker upgraded it, has no deadline.
 *
 * @module
 */

import { type Client, request, seg } from "./client.ts";
import { ownedTarget } from "./containers.ts";
import { withDeadline } from "./deadline.ts";
import { DockerError } from "./errors.ts";

/** What to run. */
export interface ExecOptions {
  /** The command and its arguments. */
  cmd: string[];
  /** Allocate a TTY (output then arrives unframed, stderr merged). */
  tty: boolean;
}

/** A started exec: the raw connection Docker upgraded, and the bytes read past its answer's head. */
export interface ExecConnection {
  /** Reads the process's output, writes its stdin. */
  conn: Deno.UnixConn;
  /** Output bytes that arrived with Docker's answer. */
  rest: Uint8Array;
}

/** What Docker says of an exec. */
export interface ExecState {
  /** The process still runs. */
  running: boolean;
  /** Its exit code once ended; null while running or when Docker does not say. */
  exitCode: number | null;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Creates an exec in an owned container, with stdin, stdout and stderr attached; answers its id. */
export async function createExec(
  client: Client,
  ref: string,
  options: ExecOptions,
  signal?: AbortSignal,
): Promise<string> {
  const target = await ownedTarget(client, "exec in", ref, signal);
  const created = await request(client, {
    operation: `create an exec in container "${ref}"`,
    cls: "create",
    signal,
  }, {
    method: "POST",
    path: `/containers/${seg(target.Id)}/exec`,
    body: { AttachStdin: true, AttachStdout: true, AttachStderr: true, Tty: options.tty, Cmd: options.cmd },
  }) as { Id?: unknown };
  const id = String(created?.Id ?? "");
  if (!/^[0-9a-f]{12,128}$/.test(id)) {
    throw new DockerError(
      "internal",
      `Cannot create an exec in container "${ref}": Docker answered no exec id`,
    );
  }
  return id;
}

/**
 * Starts exec `id` attached: a raw HTTP request on its own connection, answered `101 UPGRADED` within the
 * stream-start deadline, after which the connection carries the process's stdin and output.
 */
export function startExec(
  client: Client,
  id: string,
  tty: boolean,
  signal?: AbortSignal,
): Promise<ExecConnection> {
  return withDeadline(
    `start exec "${id.slice(0, 12)}"`,
    client.deadlines.streamStartMs,
    signal,
    (bound) => hijack(client.socketPath, id, tty, bound),
  );
}

async function hijack(
  socket: string,
  id: string,
  tty: boolean,
  signal: AbortSignal,
): Promise<ExecConnection> {
  const conn = await Deno.connect({ transport: "unix", path: socket });
  const onAbort = (): void => conn.close();
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    const body = JSON.stringify({ Detach: false, Tty: tty });
    await conn.write(encoder.encode(
      `POST /v1.41/exec/${seg(id)}/start HTTP/1.1\r\nHost: docker\r\n` +
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
          throw new DockerError("unavailable", `Cannot start exec: Docker answered ${text.split("\r\n")[0]}`);
        }
        return { conn, rest: buffer.slice(encoder.encode(text.slice(0, end + 4)).length) };
      }
      if (buffer.length > 64 * 1024) {
        throw new DockerError("unavailable", "Cannot start exec: Docker's answer had no end");
      }
      const n = await conn.read(chunk);
      if (n === null) throw new DockerError("unavailable", "Cannot start exec: Docker closed the connection");
      const next = new Uint8Array(buffer.length + n);
      next.set(buffer);
      next.set(chunk.subarray(0, n), buffer.length);
      buffer = next;
    }
  } catch (error) {
    try {
      conn.close();
    } catch {
      // closed by the abort already
    }
    throw error;
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}

/** Reads whether exec `id` still runs, and its exit code. */
export async function inspectExec(client: Client, id: string, signal?: AbortSignal): Promise<ExecState> {
  const inspected = await request(client, {
    operation: `inspect exec "${id.slice(0, 12)}"`,
    cls: "inspect",
    signal,
  }, {
    method: "GET",
    path: `/exec/${seg(id)}/json`,
  }) as { Running?: unknown; ExitCode?: unknown };
  return {
    running: inspected?.Running === true,
    exitCode: inspected?.Running !== true && typeof inspected?.ExitCode === "number"
      ? inspected.ExitCode
      : null,
  };
}

/** Sets the TTY size of exec `id`. */
export async function resizeExec(
  client: Client,
  id: string,
  size: { cols: number; rows: number },
  signal?: AbortSignal,
): Promise<void> {
  await request(client, { operation: `resize exec "${id.slice(0, 12)}"`, cls: "inspect", signal }, {
    method: "POST",
    path: `/exec/${seg(id)}/resize`,
    query: { h: size.rows, w: size.cols },
  });
}
