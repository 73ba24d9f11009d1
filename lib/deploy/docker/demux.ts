/**
 * Docker's multiplexed stream (a container's or an exec's output without a TTY): frames of an 8-byte header
 * (stream, 0, 0, 0, big-endian size) and a payload.
 *
 * @module
 */

/** One frame's payload and the stream it came on. */
export interface DemuxedFrame {
  /** Docker writes 1 for stdout and 2 for stderr. */
  stream: "stdout" | "stderr";
  /** The payload bytes. */
  data: Uint8Array;
}

/** Splits a multiplexed stream into frames, across any chunk boundaries. */
export class Demuxer {
  #buffer: Uint8Array = new Uint8Array();

  /** Feeds bytes and returns every frame they complete. */
  push(bytes: Uint8Array): DemuxedFrame[] {
    let data = bytes;
    if (this.#buffer.length > 0) {
      data = new Uint8Array(this.#buffer.length + bytes.length);
      data.set(this.#buffer);
      data.set(bytes, this.#buffer.length);
    }
    const out: DemuxedFrame[] = [];
    let at = 0;
    while (data.length - at >= 8) {
      const size = new DataView(data.buffer, data.byteOffset + at + 4, 4).getUint32(0);
      if (data.length - at - 8 < size) break;
      out.push({ stream: data[at] === 2 ? "stderr" : "stdout", data: data.subarray(at + 8, at + 8 + size) });
      at += 8 + size;
    }
    this.#buffer = data.slice(at);
    return out;
  }
}
