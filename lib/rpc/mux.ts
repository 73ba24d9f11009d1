/**
 * One byte stream carrying many Machine RPC connections: what `ployzd dial-stdio --mux` speaks on its stdin and
 * stdout, so a whole `ployz` command rides one `ssh HOST ployzd dial-stdio --mux` process (one SSH connection, one
 * `ployzd` start on the host) while its calls run concurrently and a stream (`logs -f`, deploy progress) stays open
 * beside them. Each logical stream is one fresh connection to the daemon's unix socket, so the daemon sees exactly
 * what a local client would send.
 *
 * Frame: 1 byte type, 4 bytes stream id, 4 bytes payload length (big-endian), payload. The bridge opens with HELLO
 * (`ployz-mux/1`); OPEN starts a stream, DATA carries bytes, EOF half-closes one direction, RESET ends a stream
 * (its payload says why). Payloads are at most {@link MAX_FRAME} bytes; a larger length is a protocol error.
 *
 * @module
 */

import { messageOf, sleep } from "../util/mod.ts";

/** The greeting the bridge sends first. */
export const MUX_HELLO = "ployz-mux/1";
/** Largest payload of one frame. */
export const MAX_FRAME = 64 * 1024;

/** Frame types. */
export const FRAME = { hello: 0, open: 1, data: 2, eof: 3, reset: 4 } as const;

/** One decoded frame. */
export interface Frame {
  /** One of {@link FRAME}. */
  type: number;
  /** Logical stream. */
  stream: number;
  /** Bytes. */
  payload: Uint8Array;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Encodes one frame. */
export function encodeFrame(
  type: number,
  stream: number,
  payload: Uint8Array = new Uint8Array(0),
): Uint8Array {
  const out = new Uint8Array(9 + payload.length);
  const view = new DataView(out.buffer);
  view.setUint8(0, type);
  view.setUint32(1, stream);
  view.setUint32(5, payload.length);
  out.set(payload, 9);
  return out;
}

/** Reads frames from a byte stream; ends at EOF, throws on a malformed or oversized frame. */
export async function* readFrames(stream: ReadableStream<Uint8Array>): AsyncGenerator<Frame> {
  const reader = stream.getReader();
  let buffer = new Uint8Array(0);
  try {
    for (;;) {
      while (buffer.length >= 9) {
        const view = new DataView(buffer.buffer, buffer.byteOffset, buffer.length);
        const length = view.getUint32(5);
        if (length > MAX_FRAME) throw new Error(`mux frame of ${length} bytes is larger than ${MAX_FRAME}`);
        if (buffer.length < 9 + length) break;
        yield { type: view.getUint8(0), stream: view.getUint32(1), payload: buffer.slice(9, 9 + length) };
        buffer = buffer.slice(9 + length);
      }
      const { value, done } = await reader.read();
      if (done) return;
      const next = new Uint8Array(buffer.length + value.length);
      next.set(buffer);
      next.set(value, buffer.length);
      buffer = next;
    }
  } finally {
    reader.releaseLock();
  }
}

/** Serializes frame writes to one sink (each write awaited, so the sink's backpressure holds). */
function frameWriter(sink: WritableStream<Uint8Array>): {
  send(type: number, stream: number, payload?: Uint8Array): Promise<void>;
  close(): Promise<void>;
} {
  const writer = sink.getWriter();
  let chain: Promise<void> = Promise.resolve();
  let broken = false;
  return {
    send(type, stream, payload = new Uint8Array(0)): Promise<void> {
      const pieces: Uint8Array[] = [];
      if (payload.length === 0) pieces.push(encodeFrame(type, stream));
      for (let at = 0; at < payload.length; at += MAX_FRAME) {
        pieces.push(encodeFrame(type, stream, payload.subarray(at, at + MAX_FRAME)));
      }
      chain = chain.then(async () => {
        if (broken) return;
        for (const piece of pieces) {
          await writer.write(piece).catch(() => {
            broken = true;
          });
        }
      });
      return chain;
    },
    async close(): Promise<void> {
      await chain;
      await writer.close().catch(() => {});
    },
  };
}

/**
 * The bridge side: reads frames from `input`, opens a connection with `connect` per stream, and writes frames to
 * `output`. Resolves when `input` ends (the SSH session closed), after closing every stream.
 */
export async function serveMux(
  input: ReadableStream<Uint8Array>,
  output: WritableStream<Uint8Array>,
  connect: () => Promise<Deno.Conn>,
): Promise<void> {
  const out = frameWriter(output);
  const streams = new Map<number, { conn: Promise<Deno.Conn | undefined>; writes: Promise<void> }>();
  await out.send(FRAME.hello, 0, encoder.encode(MUX_HELLO));

  function pump(id: number, conn: Deno.Conn): void {
    (async () => {
      try {
        for await (const chunk of conn.readable) await out.send(FRAME.data, id, chunk);
        await out.send(FRAME.eof, id);
      } catch (error) {
        await out.send(FRAME.reset, id, encoder.encode(messageOf(error)));
      }
    })();
  }

  try {
    for await (const frame of readFrames(input)) {
      const id = frame.stream;
      if (frame.type === FRAME.open) {
        if (streams.has(id)) continue;
        const conn = connect().then((c) => {
          pump(id, c);
          return c;
        }, async (error) => {
          await out.send(FRAME.reset, id, encoder.encode(messageOf(error)));
          return undefined;
        });
        streams.set(id, { conn, writes: Promise.resolve() });
        continue;
      }
      const entry = streams.get(id);
      if (entry === undefined) continue;
      if (frame.type === FRAME.data) {
        entry.writes = entry.writes.then(async () => {
          const conn = await entry.conn;
          if (conn === undefined) return;
          const writer = conn.writable.getWriter();
          await writer.write(frame.payload).catch(() => {});
          writer.releaseLock();
        });
        // Bounds what one stream can queue: the next frame waits for this write.
        await entry.writes;
      } else if (frame.type === FRAME.eof) {
        entry.writes = entry.writes.then(async () => {
          const conn = await entry.conn;
          await (conn as Deno.UnixConn | undefined)?.closeWrite().catch(() => {});
        });
      } else if (frame.type === FRAME.reset) {
        streams.delete(id);
        entry.writes.then(async () => {
          const conn = await entry.conn;
          try {
            conn?.close();
          } catch {
            // already closed
          }
        });
      }
    }
  } finally {
    for (const entry of streams.values()) {
      const conn = await entry.conn;
      try {
        conn?.close();
      } catch {
        // already closed
      }
    }
    await out.close();
  }
}

/** One logical stream of a {@link MuxSession}. */
export interface MuxStream {
  /** Bytes from the far end; ends at its EOF, errors at a RESET. */
  readable: ReadableStream<Uint8Array>;
  /** Bytes to the far end; closing it sends EOF. */
  writable: WritableStream<Uint8Array>;
  /** Ends the stream in both directions. */
  reset(): void;
}

/** A multiplexed connection over one pair of byte streams (the stdin and stdout of an SSH process). */
export interface MuxSession {
  /** Opens a stream. */
  open(): MuxStream;
  /** Resolves when the far end said HELLO; rejects if the byte stream ended or spoke something else first. */
  ready: Promise<void>;
  /** Resolves when the byte stream ended (the SSH process exited or was killed). */
  ended: Promise<void>;
  /** Closes the write side: the bridge closes its connections and exits. */
  close(): Promise<void>;
}

/** Buffered bytes after which reading the connection waits for a slow stream's reader. */
const STREAM_HIGH_WATER = 8 * 1024 * 1024;

/** The client side of the multiplexed connection. */
export function muxSession(
  input: ReadableStream<Uint8Array>,
  output: WritableStream<Uint8Array>,
): MuxSession {
  const out = frameWriter(output);
  const streams = new Map<number, ReadableStreamDefaultController<Uint8Array>>();
  let next = 1;
  let closedWith: Error | undefined;
  let resolveReady!: () => void;
  let rejectReady!: (error: Error) => void;
  const ready = new Promise<void>((resolve, reject) => {
    resolveReady = resolve;
    rejectReady = reject;
  });
  ready.catch(() => {});
  let greeted = false;

  const ended = (async () => {
    try {
      for await (const frame of readFrames(input)) {
        if (!greeted) {
          if (frame.type !== FRAME.hello || decoder.decode(frame.payload) !== MUX_HELLO) {
            throw new Error(`the bridge did not greet with "${MUX_HELLO}"`);
          }
          greeted = true;
          resolveReady();
          continue;
        }
        const controller = streams.get(frame.stream);
        if (controller === undefined) continue;
        if (frame.type === FRAME.data) {
          controller.enqueue(frame.payload);
          while ((controller.desiredSize ?? 0) < -STREAM_HIGH_WATER && streams.has(frame.stream)) {
            await sleep(5);
          }
        } else if (frame.type === FRAME.eof) {
          streams.delete(frame.stream);
          controller.close();
        } else if (frame.type === FRAME.reset) {
          streams.delete(frame.stream);
          controller.error(new Error(decoder.decode(frame.payload) || "the stream was reset"));
        }
      }
      closedWith = new Error("the connection closed");
    } catch (error) {
      closedWith = error instanceof Error ? error : new Error(String(error));
    }
    if (!greeted) rejectReady(closedWith);
    for (const controller of streams.values()) {
      try {
        controller.error(closedWith);
      } catch {
        // already closed
      }
    }
    streams.clear();
  })();

  return {
    ready,
    ended,
    close: () => out.close(),
    open(): MuxStream {
      const id = next++;
      let resetSent = false;
      const reset = (): void => {
        if (resetSent) return;
        resetSent = true;
        const controller = streams.get(id);
        streams.delete(id);
        // Always told, even after both EOFs: the bridge frees its connection on RESET.
        if (closedWith === undefined) void out.send(FRAME.reset, id);
        try {
          controller?.error(new Error("the stream was reset"));
        } catch {
          // already closed
        }
      };
      let controller!: ReadableStreamDefaultController<Uint8Array>;
      const readable = new ReadableStream<Uint8Array>({
        start(c) {
          controller = c;
        },
        cancel() {
          reset();
        },
      }, { highWaterMark: 0 });
      if (closedWith !== undefined) {
        controller.error(closedWith);
      } else {
        streams.set(id, controller);
        void out.send(FRAME.open, id);
      }
      const writable = new WritableStream<Uint8Array>({
        async write(chunk) {
          if (closedWith !== undefined) throw closedWith;
          await out.send(FRAME.data, id, chunk);
        },
        async close() {
          if (!resetSent && closedWith === undefined) await out.send(FRAME.eof, id);
        },
      });
      return { readable, writable, reset };
    },
  };
}
