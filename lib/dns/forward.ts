import type { HostPort } from "./spec.ts";

/** How long one upstream gets to answer before the next is tried (ployz2 uses 3 s). */
export const FORWARD_TIMEOUT_MS = 3000;

/**
 * Forwards a query over UDP from a fresh ephemeral socket (so each forward gets its own random source port) and
 * returns the first upstream's answer whose id matches, or undefined when every upstream failed.
 */
export async function forwardUdp(
  message: Uint8Array,
  upstreams: HostPort[],
  timeoutMs: number,
): Promise<Uint8Array | undefined> {
  for (const upstream of upstreams) {
    const socket = Deno.listenDatagram({ transport: "udp", hostname: "0.0.0.0", port: 0 });
    const timer = setTimeout(() => socket.close(), timeoutMs);
    try {
      await socket.send(message, { transport: "udp", ...upstream });
      while (true) {
        const [answer, from] = await socket.receive();
        const source = from as Deno.NetAddr;
        if (source.hostname !== upstream.hostname || source.port !== upstream.port) continue;
        if (answer.length >= 2 && answer[0] === message[0] && answer[1] === message[1]) return answer;
      }
    } catch {
      // Timed out (the timer closed the socket) or unreachable: try the next upstream.
    } finally {
      clearTimeout(timer);
      try {
        socket.close();
      } catch {
        // Already closed by the timer.
      }
    }
  }
  return undefined;
}

/** Forwards a query over TCP (length-prefixed, RFC 1035 §4.2.2) and returns the first upstream's answer. */
export async function forwardTcp(
  message: Uint8Array,
  upstreams: HostPort[],
  timeoutMs: number,
): Promise<Uint8Array | undefined> {
  for (const upstream of upstreams) {
    let conn: Deno.TcpConn | undefined;
    const timer = setTimeout(() => conn?.close(), timeoutMs);
    try {
      conn = await Deno.connect({ transport: "tcp", ...upstream });
      const framed = new Uint8Array(2 + message.length);
      framed.set([message.length >> 8, message.length & 0xff]);
      framed.set(message, 2);
      await writeAll(conn, framed);
      const length = await readExact(conn, 2);
      if (!length) continue;
      const answer = await readExact(conn, (length[0] << 8) | length[1]);
      if (answer) return answer;
    } catch {
      // Refused, reset or timed out: try the next upstream.
    } finally {
      clearTimeout(timer);
      try {
        conn?.close();
      } catch {
        // Already closed by the timer.
      }
    }
  }
  return undefined;
}

/** Writes every byte of `bytes`. */
export async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let written = 0;
  while (written < bytes.length) written += await conn.write(bytes.subarray(written));
}

/** Reads exactly `n` bytes, or undefined when the peer closes first. */
export async function readExact(conn: Deno.Conn, n: number): Promise<Uint8Array | undefined> {
  const out = new Uint8Array(n);
  let filled = 0;
  while (filled < n) {
    const got = await conn.read(out.subarray(filled));
    if (got === null) return undefined;
    filled += got;
  }
  return out;
}
