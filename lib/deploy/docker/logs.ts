/**
 * Docker's own log stream of a container (what `docker logs` shows), through the adapter's request seam so the
 * stream-start deadline and `DockerError` hold for it as for every other call.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import type { Readable } from "node:stream";
import { type Client, request, seg, webStream } from "./client.ts";
import { DockerError } from "./errors.ts";

/** What to read of a container's logs. */
export interface LogsOptions {
  /** Only the last `tail` lines; all when absent. */
  tail?: number;
  /** Keep the stream open for new lines. */
  follow?: boolean;
  /** The container has a TTY, so Docker sends its output unframed. */
  tty?: boolean;
  /** Ends the request and closes the stream. */
  signal?: AbortSignal;
}

/**
 * Docker's logs of a container as one text stream: stdout and stderr frames demultiplexed and concatenated in the
 * order Docker sent them. Docker must start answering within the stream-start deadline; the stream itself has
 * none. Cancelling the stream, or `signal`, ends the request.
 */
export async function containerLogs(
  client: Client,
  ref: string,
  options: LogsOptions = {},
): Promise<ReadableStream<Uint8Array>> {
  const { signal } = options;
  const response = await request(client, {
    operation: `read the logs of container "${ref}"`,
    cls: "stream_start",
    signal,
  }, {
    method: "GET",
    path: `/containers/${seg(ref)}/logs`,
    query: {
      stdout: true,
      stderr: true,
      follow: options.follow === true,
      tail: options.tail === undefined ? "all" : String(options.tail),
    },
    stream: true,
  }) as Readable;
  const demux = options.tty ? undefined : new Demuxer();
  return webStream(response, signal, {
    map: demux === undefined ? undefined : (bytes) => demux.push(bytes),
    broke: (error) =>
      new DockerError("unavailable", `Cannot read the logs of container "${ref}": the stream broke`, {
        cause: error,
      }),
    // A follow the caller ended is a complete answer, not a failure.
    closeOnAbort: true,
  });
}

/** Docker's multiplexed stream: frames of an 8-byte header (stream, 0, 0, 0, big-endian size) and a payload. */
export class Demuxer {
  #buffer: Uint8Array = new Uint8Array();

  /** Feeds bytes and returns the payload bytes of every complete frame. */
  push(bytes: Uint8Array): Uint8Array {
    const data = this.#buffer.length === 0 ? bytes : Buffer.concat([this.#buffer, bytes]);
    const out: Uint8Array[] = [];
    let at = 0;
    while (data.length - at >= 8) {
      const size = new DataView(data.buffer, data.byteOffset + at + 4, 4).getUint32(0);
      if (data.length - at - 8 < size) break;
      out.push(data.subarray(at + 8, at + 8 + size));
      at += 8 + size;
    }
    this.#buffer = data.slice(at);
    return out.length === 1 ? out[0] : Buffer.concat(out);
  }
}
