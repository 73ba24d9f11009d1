import type { HostPort } from "./spec.ts";

/** How long one upstream gets to answer before the next is tried. */
export const FORWARD_TIMEOUT_MS = 3000;

/**
 * How many forwarded queries (UDP and TCP together) may wait on upstreams at once. Past it a query is answered
 * SERVFAIL at once: a flood of forwarded names costs bounded memory and descriptors, and names under `.internal`
 * are still answered.
 */
export const MAX_FORWARDS_IN_FLIGHT = 1024;

/**
 * How many UDP sockets forwarded queries share at most. Under light load each query gets a socket of its own (a
 * fresh random source port); under load they share these, each query with a fresh random id, and a socket closes
 * once nothing waits on it.
 */
export const FORWARD_SOCKETS = 16;

interface PoolSocket {
  conn: Deno.DatagramConn;
  /** Waiting queries by `host:port#id` (the upstream and the id this socket sent). */
  pending: Map<string, (answer: Uint8Array) => void>;
}

const pool: PoolSocket[] = [];
let inFlight = 0;

/** How many forwarded queries wait on upstreams now, and how many sockets they hold (tests, diagnostics). */
export function forwardLoad(): { inFlight: number; sockets: number } {
  return { inFlight, sockets: pool.length };
}

function keyOf(hostname: string, port: number, id: number): string {
  return `${hostname}:${port}#${id}`;
}

async function receiveLoop(socket: PoolSocket): Promise<void> {
  try {
    while (true) {
      const [answer, from] = await socket.conn.receive();
      if (answer.length < 12) continue;
      const source = from as Deno.NetAddr;
      socket.pending.get(keyOf(source.hostname, source.port, (answer[0] << 8) | answer[1]))?.(answer);
    }
  } catch {
    // Closed: it had nothing left waiting, or the network failed it.
  } finally {
    release(socket);
    for (const resolve of socket.pending.values()) resolve(new Uint8Array(0));
  }
}

function release(socket: PoolSocket): void {
  const at = pool.indexOf(socket);
  if (at >= 0) pool.splice(at, 1);
}

function closeIfIdle(socket: PoolSocket): void {
  if (socket.pending.size > 0) return;
  release(socket);
  try {
    socket.conn.close();
  } catch {
    // Already closed.
  }
}

function socketForQuery(): PoolSocket {
  if (pool.length < FORWARD_SOCKETS) {
    const conn = Deno.listenDatagram({ transport: "udp", hostname: "0.0.0.0", port: 0 });
    const socket: PoolSocket = { conn, pending: new Map() };
    pool.push(socket);
    void receiveLoop(socket);
    return socket;
  }
  return pool[Math.floor(Math.random() * pool.length)];
}

function freshId(socket: PoolSocket, upstream: HostPort): number | undefined {
  const ids = new Uint16Array(8);
  crypto.getRandomValues(ids);
  return ids.find((id) => !socket.pending.has(keyOf(upstream.hostname, upstream.port, id)));
}

/** One try against one upstream: the answer carrying `message`'s own id, or undefined. */
async function askUdp(
  message: Uint8Array,
  upstream: HostPort,
  timeoutMs: number,
): Promise<Uint8Array | undefined> {
  const socket = socketForQuery();
  const id = freshId(socket, upstream);
  if (id === undefined) return undefined;
  const key = keyOf(upstream.hostname, upstream.port, id);
  const sent = message.slice();
  sent[0] = id >> 8;
  sent[1] = id & 0xff;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const answered = new Promise<Uint8Array>((resolve) => {
    socket.pending.set(key, resolve);
    timer = setTimeout(() => resolve(new Uint8Array(0)), timeoutMs);
  });
  try {
    await socket.conn.send(sent, { transport: "udp", ...upstream });
    const answer = await answered;
    if (answer.length < 12) return undefined;
    const out = answer.slice();
    out[0] = message[0];
    out[1] = message[1];
    return out;
  } catch {
    // Unreachable or the socket failed: the caller tries the next upstream.
    return undefined;
  } finally {
    clearTimeout(timer);
    socket.pending.delete(key);
    closeIfIdle(socket);
  }
}

/**
 * Forwards a query over UDP and returns the first upstream's answer to it (matched by upstream and a fresh random
 * id, given back the query's own id), or undefined when every upstream failed or {@link MAX_FORWARDS_IN_FLIGHT}
 * queries already wait.
 */
export async function forwardUdp(
  message: Uint8Array,
  upstreams: HostPort[],
  timeoutMs: number,
): Promise<Uint8Array | undefined> {
  if (message.length < 12 || inFlight >= MAX_FORWARDS_IN_FLIGHT) return undefined;
  inFlight++;
  try {
    for (const upstream of upstreams) {
      let answer: Uint8Array | undefined;
      try {
        answer = await askUdp(message, upstream, timeoutMs);
      } catch {
        // No socket to send from (descriptors exhausted elsewhere): try the next upstream.
      }
      if (answer) return answer;
    }
    return undefined;
  } finally {
    inFlight--;
  }
}

/**
 * Forwards a query over TCP (length-prefixed, RFC 1035 §4.2.2) and returns the first upstream's answer; counted
 * against {@link MAX_FORWARDS_IN_FLIGHT} with the UDP forwards.
 */
export async function forwardTcp(
  message: Uint8Array,
  upstreams: HostPort[],
  timeoutMs: number,
): Promise<Uint8Array | undefined> {
  if (inFlight >= MAX_FORWARDS_IN_FLIGHT) return undefined;
  inFlight++;
  try {
    return await forwardTcpUncounted(message, upstreams, timeoutMs);
  } finally {
    inFlight--;
  }
}

async function forwardTcpUncounted(
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
