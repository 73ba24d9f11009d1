/**
 * `stdioFetch`: Machine RPC over a child process's stdin and stdout, which carry the same HTTP/1.1 the daemon's
 * socket speaks. The child is `ssh HOST ployzd dial-stdio` in production (the daemon listens on nothing but its
 * unix socket and the mesh); any command that bridges to a daemon's socket works, which is how it is tested.
 *
 * `stdioFetch` spends one child process per request (`Connection: close`): a call costs one SSH session, and
 * nothing is left open between calls. `muxFetch` sends each request over its own stream of one multiplexed
 * connection (`ployzd dial-stdio --mux`, see `mux.ts`), so a whole command costs one SSH connection and one bridge
 * process. Both read Content-Length and chunked bodies the same way ({@link exchange}).
 *
 * @module
 */

import { RpcError } from "./errors.ts";
import type { MuxSession } from "./mux.ts";
import { messageOf } from "../util/mod.ts";

/** The bridging command, e.g. `{ cmd: "ssh", args: ["host", "ployzd", "dial-stdio"] }`. */
export interface StdioCommand {
  /** The program. */
  cmd: string;
  /** Its arguments. */
  args: string[];
  /** Extra environment for the child. */
  env?: Record<string, string>;
  /** How errors name the target, e.g. `ssh host`. */
  label?: string;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

class ByteReader {
  #buffer = new Uint8Array(0);
  #done = false;
  constructor(private readonly reader: ReadableStreamDefaultReader<Uint8Array>) {}

  async #fill(): Promise<boolean> {
    if (this.#done) return false;
    const { value, done } = await this.reader.read();
    if (done) {
      this.#done = true;
      return false;
    }
    const next = new Uint8Array(this.#buffer.length + value.length);
    next.set(this.#buffer);
    next.set(value, this.#buffer.length);
    this.#buffer = next;
    return true;
  }

  /** Bytes up to and excluding `delimiter`; `undefined` at EOF before it. */
  async until(delimiter: string): Promise<Uint8Array | undefined> {
    const needle = encoder.encode(delimiter);
    for (;;) {
      const at = indexOf(this.#buffer, needle);
      if (at >= 0) {
        const head = this.#buffer.slice(0, at);
        this.#buffer = this.#buffer.slice(at + needle.length);
        return head;
      }
      if (!(await this.#fill())) return undefined;
    }
  }

  /** Exactly `n` bytes; fewer at EOF. */
  async take(n: number): Promise<Uint8Array> {
    while (this.#buffer.length < n && await this.#fill());
    const out = this.#buffer.slice(0, n);
    this.#buffer = this.#buffer.slice(n);
    return out;
  }

  /** Whatever is buffered, then the next read; empty at EOF. */
  async some(): Promise<Uint8Array> {
    if (this.#buffer.length === 0 && !(await this.#fill())) return new Uint8Array(0);
    const out = this.#buffer;
    this.#buffer = new Uint8Array(0);
    return out;
  }
}

function indexOf(haystack: Uint8Array, needle: Uint8Array): number {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

async function requestBytes(request: Request): Promise<Uint8Array> {
  const body = new Uint8Array(await request.arrayBuffer());
  const url = new URL(request.url);
  const lines = [`${request.method} ${url.pathname}${url.search} HTTP/1.1`, "Host: localhost"];
  for (const [name, value] of request.headers) {
    if (!["host", "content-length", "connection"].includes(name)) lines.push(`${name}: ${value}`);
  }
  lines.push(`Content-Length: ${body.length}`, "Connection: close", "", "");
  const head = encoder.encode(lines.join("\r\n"));
  const out = new Uint8Array(head.length + body.length);
  out.set(head);
  out.set(body, head.length);
  return out;
}

/** One byte pipe an HTTP exchange runs over: a bridge process's stdio or one stream of a {@link MuxSession}. */
export interface BytePipe {
  /** Bytes towards the daemon. */
  writable: WritableStream<Uint8Array>;
  /** Bytes from the daemon. */
  readable: ReadableStream<Uint8Array>;
  /** Tears the pipe down once the answer is read or abandoned. */
  finish(): Promise<void>;
  /** Ends it at once (the request was aborted). */
  abort(): void;
  /** What the far side said when it failed, if anything (ssh's own message). */
  explain?(): Promise<string>;
}

/**
 * Sends `request` over `pipe` as HTTP/1.1 and returns the answer, its body streamed. The pipe's write side stays
 * open until the answer has been read, because closing it half-closes the daemon's connection.
 */
export async function exchange(request: Request, pipe: BytePipe, label: string): Promise<Response> {
  const bytes = await requestBytes(request);
  const writer = pipe.writable.getWriter();
  const onAbort = (): void => pipe.abort();
  request.signal.addEventListener("abort", onAbort, { once: true });
  const reader = pipe.readable.getReader();
  let finished = false;
  async function finish(): Promise<void> {
    if (finished) return;
    finished = true;
    request.signal.removeEventListener("abort", onAbort);
    await writer.close().catch(() => {});
    await reader.cancel().catch(() => {});
    await pipe.finish();
  }
  const input = new ByteReader(reader);
  try {
    await writer.write(bytes);
    const head = await input.until("\r\n\r\n");
    if (head === undefined) throw new Error("the bridge closed without an answer");
    const [statusLine, ...headerLines] = decoder.decode(head).split("\r\n");
    const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
    if (match === null) throw new Error(`unexpected answer "${statusLine.slice(0, 80)}"`);
    const headers = new Headers();
    for (const line of headerLines) {
      const at = line.indexOf(":");
      if (at > 0) headers.append(line.slice(0, at).trim(), line.slice(at + 1).trim());
    }
    const chunked = /chunked/i.test(headers.get("transfer-encoding") ?? "");
    const length = headers.get("content-length");
    headers.delete("transfer-encoding");
    let remaining = length === null ? Infinity : Number(length);
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          if (chunked) {
            const sizeLine = await input.until("\r\n");
            const size = sizeLine === undefined ? 0 : parseInt(decoder.decode(sizeLine), 16);
            if (!(size > 0)) {
              await finish();
              controller.close();
              return;
            }
            controller.enqueue(await input.take(size));
            await input.until("\r\n");
            return;
          }
          if (remaining <= 0) {
            await finish();
            controller.close();
            return;
          }
          const piece = remaining === Infinity
            ? await input.some()
            : await input.take(Math.min(remaining, 65536));
          if (piece.length === 0) {
            await finish();
            controller.close();
            return;
          }
          remaining -= piece.length;
          controller.enqueue(piece);
        } catch (error) {
          await finish();
          controller.error(error);
        }
      },
      async cancel() {
        await finish();
      },
    });
    return new Response(body, { status: Number(match[1]), headers });
  } catch (error) {
    await finish().catch(() => {});
    if (request.signal.aborted) throw request.signal.reason;
    if (error instanceof RpcError) throw error;
    // What the bridge said (ssh's own error) explains more than a broken pipe does.
    const said = ((await pipe.explain?.()) ?? "").trim().split("\n").at(-1) ?? "";
    const why = said !== "" ? said : messageOf(error);
    throw new RpcError("unavailable", `Cannot reach the Machine through "${label}": ${why}`, {
      cause: error,
    });
  }
}

/** A fetch-like function that sends each request through a fresh `command` process. */
export function stdioFetch(command: StdioCommand): (request: Request) => Promise<Response> {
  const label = command.label ?? [command.cmd, ...command.args].join(" ");
  return (request) => {
    let child: Deno.ChildProcess;
    try {
      child = new Deno.Command(command.cmd, {
        args: command.args,
        env: command.env,
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
    } catch (error) {
      return Promise.reject(
        new RpcError("unavailable", `Cannot run "${label}": ${String(error)}`, { cause: error }),
      );
    }
    const stderr = new Response(child.stderr).text().catch(() => "");
    return exchange(request, {
      writable: child.stdin,
      readable: child.stdout,
      async finish(): Promise<void> {
        await child.status;
        await stderr;
      },
      abort(): void {
        try {
          child.kill("SIGKILL");
        } catch {
          // already gone
        }
      },
      explain: () => stderr,
    }, label);
  };
}

/** A fetch-like function that sends each request over its own stream of `session`. */
export function muxFetch(
  session: MuxSession,
  label: string,
  explain?: () => Promise<string>,
): (request: Request) => Promise<Response> {
  return async (request) => {
    try {
      await session.ready;
    } catch (error) {
      const said = ((await explain?.()) ?? "").trim().split("\n").at(-1) ?? "";
      throw new RpcError(
        "unavailable",
        `Cannot reach the Machine through "${label}": ${said !== "" ? said : messageOf(error)}`,
        { cause: error, details: { sent: false } },
      );
    }
    const stream = session.open();
    return exchange(request, {
      writable: stream.writable,
      readable: stream.readable,
      finish: () => Promise.resolve(stream.reset()),
      abort: () => stream.reset(),
      explain,
    }, label);
  };
}
