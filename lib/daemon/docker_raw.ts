/**
 * The two Engine API reads the Docker adapter does not offer: an image's id, and a container's log stream. Both
 * go to Docker's unix socket through `node:http`, which needs only the socket's own grant.
 *
 * @module
 */

import { type IncomingMessage, request } from "node:http";
import { RpcError } from "../rpc/mod.ts";

const API = "/v1.41";

function get(socketPath: string, path: string, signal?: AbortSignal): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path: `${API}${path}`, method: "GET", signal }, resolve);
    req.on("error", reject);
    req.end();
  });
}

async function readAll(response: IncomingMessage): Promise<string> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of response) chunks.push(chunk as Uint8Array);
  return new TextDecoder().decode(concat(chunks));
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

function unavailable(what: string, error: unknown): RpcError {
  const reason = error instanceof Error ? error.message : String(error);
  return new RpcError("unavailable", `Cannot ${what}: Docker is not answering (${reason})`, { cause: error });
}

/** The id of a local image, or `undefined` when the image is not on this Machine. */
export async function imageId(
  socketPath: string,
  ref: string,
  signal?: AbortSignal,
): Promise<string | undefined> {
  let response: IncomingMessage;
  try {
    response = await get(socketPath, `/images/${encodeURIComponent(ref)}/json`, signal);
  } catch (error) {
    throw unavailable(`inspect image "${ref}"`, error);
  }
  const text = await readAll(response);
  if (response.statusCode === 404) return undefined;
  if (response.statusCode !== 200) {
    throw new RpcError(
      "internal",
      `Cannot inspect image "${ref}": Docker answered status ${response.statusCode}`,
    );
  }
  const id = (JSON.parse(text) as { Id?: unknown }).Id;
  return typeof id === "string" ? id : undefined;
}

/**
 * Docker's logs of a container as one text stream: stdout and stderr frames demultiplexed and concatenated in
 * the order Docker sent them. Cancelling the stream closes the Docker request.
 */
export async function containerLogs(
  socketPath: string,
  id: string,
  options: { tail?: number; follow?: boolean; tty?: boolean; signal?: AbortSignal },
): Promise<ReadableStream<Uint8Array>> {
  const query = new URLSearchParams({
    stdout: "1",
    stderr: "1",
    follow: options.follow ? "1" : "0",
    tail: options.tail === undefined ? "all" : String(options.tail),
  });
  const controller = new AbortController();
  options.signal?.addEventListener("abort", () => controller.abort(), { once: true });
  let response: IncomingMessage;
  try {
    response = await get(
      socketPath,
      `/containers/${encodeURIComponent(id)}/logs?${query}`,
      controller.signal,
    );
  } catch (error) {
    throw unavailable(`read the logs of container "${id}"`, error);
  }
  if (response.statusCode !== 200) {
    const text = await readAll(response).catch(() => "");
    const message = (() => {
      try {
        return String((JSON.parse(text) as { message?: unknown }).message ?? text);
      } catch {
        return text;
      }
    })();
    throw new RpcError(
      response.statusCode === 404 ? "not_found" : "internal",
      `Cannot read the logs of container "${id}": ${message.trim() || `status ${response.statusCode}`}`,
    );
  }
  const demux = options.tty ? undefined : new Demuxer();
  const iterator = response[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(stream): Promise<void> {
      try {
        for (;;) {
          const next = await iterator.next();
          if (next.done) {
            stream.close();
            return;
          }
          const bytes = next.value as Uint8Array;
          const out = demux === undefined ? bytes : demux.push(bytes);
          if (out.length > 0) {
            stream.enqueue(out);
            return;
          }
        }
      } catch (error) {
        if (controller.signal.aborted) stream.close();
        else stream.error(error);
      }
    },
    cancel(): void {
      controller.abort();
      response.destroy();
    },
  });
}

/** Docker's multiplexed stream: frames of an 8-byte header (stream, 0, 0, 0, big-endian size) and a payload. */
export class Demuxer {
  #buffer: Uint8Array = new Uint8Array();

  /** Feeds bytes and returns the payload bytes of every complete frame. */
  push(bytes: Uint8Array): Uint8Array {
    const data = this.#buffer.length === 0 ? bytes : concat([this.#buffer, bytes]);
    const out: Uint8Array[] = [];
    let at = 0;
    while (data.length - at >= 8) {
      const size = new DataView(data.buffer, data.byteOffset + at + 4, 4).getUint32(0);
      if (data.length - at - 8 < size) break;
      out.push(data.subarray(at + 8, at + 8 + size));
      at += 8 + size;
    }
    this.#buffer = data.slice(at);
    return concat(out);
  }
}
