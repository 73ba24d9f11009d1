import { decide, UDP_MAX } from "./answer.ts";
import { type AnswerCache, createAnswerCache } from "./answer_cache.ts";
import { FORWARD_TIMEOUT_MS, forwardTcp, forwardUdp, readExact, writeAll } from "./forward.ts";
import { formatHostPort, type HostPort } from "./spec.ts";
import { buildError, RCODE, readQuestion } from "./wire.ts";
import type { Zone } from "./zone.ts";
import { messageOf, sleep } from "../util/mod.ts";

/** An idle TCP client is closed after this long (bounded, so idle clients cannot hold sockets). */
const TCP_IDLE_MS = 10_000;

/**
 * Most TCP clients served at once, over every listener. A connection past it is closed as soon as it is accepted,
 * so a container opening connections cannot exhaust the process's descriptors; UDP, which carries almost every
 * query, is not affected.
 */
export const MAX_TCP_CONNECTIONS = 256;

/** Receives kept pending per UDP socket. */
const UDP_RECEIVERS = 4;

/** The sockets of a running Internal DNS process. */
export interface DnsServer {
  /** Serves `zone` from now on, forwarding other names to `upstreams`. */
  setZone(zone: Zone, upstreams: HostPort[]): void;
  /**
   * Binds every address of `listen` not bound yet and closes those no longer listed. An address that cannot be
   * bound is logged and returned; call again to retry it.
   */
  listen(listen: HostPort[]): string[];
  /** The addresses bound now. */
  bound(): string[];
  /**
   * Hands the port over to a successor: keeps answering until no query arrived for `quietMs` and no forward is in
   * flight (at most `maxMs`), then closes everything.
   */
  drain(quietMs: number, maxMs: number): Promise<void>;
  /** Closes every socket at once. */
  close(): Promise<void>;
}

interface Listener {
  udp: Deno.DatagramConn;
  tcp?: Deno.TcpListener;
  loops: Promise<void>[];
}

/**
 * Makes an Internal DNS server with no sockets. Sockets are bound by {@link DnsServer.listen}, only after a spec
 * loaded, so nothing answers before the first load.
 *
 * Restarts without refusals: UDP sockets are bound with SO_REUSEADDR (`reuseAddress`) and TCP listeners with
 * SO_REUSEPORT, so a new process binds beside the old one. For UDP on Linux the most recently bound socket on an
 * address receives every new datagram, so once the new process is bound the old one only has to answer what it
 * already queued, which {@link DnsServer.drain} does before closing.
 */
export function createDnsServer(log: (line: string) => void): DnsServer {
  let zone: Zone | undefined;
  let answers: AnswerCache | undefined;
  let upstreams: HostPort[] = [];
  const listeners = new Map<string, Listener>();
  const tcpConns = new Set<Deno.TcpConn>();
  // Counted rather than timestamped: a clock read per datagram shows in the throughput, and drain only needs to
  // see whether anything arrived between two of its checks.
  let received = 0;
  let inFlight = 0;
  // True while TCP clients are refused at the cap, so the refusal is logged once per episode.
  let tcpFull = false;

  function track(work: Promise<void>): void {
    inFlight++;
    work.finally(() => inFlight--);
  }

  // Several receives stay pending on each socket, each into its own reused buffer: a fresh buffer per datagram
  // (the async iterator) costs more than half the throughput.
  async function udpLoop(conn: Deno.DatagramConn): Promise<void> {
    const buffer = new Uint8Array(65536);
    try {
      while (true) {
        const [message, from] = await conn.receive(buffer);
        received++;
        const cache = answers;
        if (!cache) continue;
        // A repeated question is answered from its encoded answer; the send is not awaited, so the next receive
        // is already pending while the kernel takes this datagram.
        const hit = cache.lookup(message);
        if (hit) {
          conn.send(hit, from).catch(ignore);
          continue;
        }
        const decision = cache.decide(message);
        if (decision.kind === "reply") {
          conn.send(decision.message, from).catch(ignore);
        } else if (decision.kind === "forward") {
          track(forwardOne(message.slice(), from, conn));
        }
      }
    } catch {
      // The socket was closed.
    }
  }

  async function forwardOne(message: Uint8Array, from: Deno.Addr, conn: Deno.DatagramConn): Promise<void> {
    const answer = await forwardUdp(message, upstreams, FORWARD_TIMEOUT_MS);
    const reply = answer ?? servfail(message);
    if (reply) await conn.send(reply, from).catch(() => {});
  }

  async function tcpLoop(listener: Deno.TcpListener): Promise<void> {
    try {
      for await (const conn of listener) {
        received++;
        if (tcpConns.size >= MAX_TCP_CONNECTIONS) {
          conn.close();
          if (!tcpFull) log(`Refusing TCP clients: ${MAX_TCP_CONNECTIONS} are connected`);
          tcpFull = true;
          continue;
        }
        tcpFull = false;
        tcpConns.add(conn);
        // Not tracked as in flight: a client may hold an idle connection open for TCP_IDLE_MS.
        serveTcp(conn).finally(() => tcpConns.delete(conn));
      }
    } catch {
      // The listener was closed.
    }
  }

  async function serveTcp(conn: Deno.TcpConn): Promise<void> {
    let timer = setTimeout(() => conn.close(), TCP_IDLE_MS);
    try {
      while (true) {
        const length = await readExact(conn, 2);
        if (!length) break;
        const message = await readExact(conn, (length[0] << 8) | length[1]);
        if (!message) break;
        clearTimeout(timer);
        received++;
        const reply = await answerTcp(message);
        if (reply) {
          const framed = new Uint8Array(2 + reply.length);
          framed.set([reply.length >> 8, reply.length & 0xff]);
          framed.set(reply, 2);
          await writeAll(conn, framed);
        }
        timer = setTimeout(() => conn.close(), TCP_IDLE_MS);
      }
    } catch {
      // Reset, closed by the idle timer, or closed by drain.
    } finally {
      clearTimeout(timer);
      try {
        conn.close();
      } catch {
        // Already closed.
      }
    }
  }

  async function answerTcp(message: Uint8Array): Promise<Uint8Array | undefined> {
    if (!zone) return undefined;
    const decision = decide(zone, message, 65535);
    if (decision.kind === "reply") return decision.message;
    if (decision.kind === "drop") return undefined;
    return (await forwardTcp(message, upstreams, FORWARD_TIMEOUT_MS)) ?? servfail(message);
  }

  function bind(address: HostPort): Listener {
    const udp = Deno.listenDatagram({ transport: "udp", ...address, reuseAddress: true });
    let tcp: Deno.TcpListener | undefined;
    try {
      tcp = Deno.listen({ transport: "tcp", ...address, reusePort: true });
    } catch (error) {
      // TCP is best effort: UDP carries almost every query.
      log(`Cannot listen on TCP "${formatHostPort(address)}", serving UDP only: ${messageOf(error)}`);
    }
    const udpLoops = Array.from({ length: UDP_RECEIVERS }, () => udpLoop(udp));
    return { udp, tcp, loops: [...udpLoops, ...(tcp ? [tcpLoop(tcp)] : [])] };
  }

  async function closeListener(listener: Listener): Promise<void> {
    for (const socket of [listener.udp, listener.tcp]) {
      try {
        socket?.close();
      } catch {
        // Already closed.
      }
    }
    await Promise.all(listener.loops);
  }

  async function closeAll(): Promise<void> {
    const all = [...listeners.values()];
    listeners.clear();
    await Promise.all(all.map(closeListener));
    for (const conn of tcpConns) {
      try {
        conn.close();
      } catch {
        // Already closed.
      }
    }
  }

  return {
    setZone(next: Zone, nextUpstreams: HostPort[]): void {
      zone = next;
      answers = createAnswerCache(next, UDP_MAX);
      upstreams = nextUpstreams;
    },
    listen(listen: HostPort[]): string[] {
      const wanted = new Map(listen.map((a) => [formatHostPort(a), a]));
      for (const [key, listener] of listeners) {
        if (!wanted.has(key)) {
          listeners.delete(key);
          closeListener(listener);
          log(`Stopped listening on "${key}": no longer in the spec`);
        }
      }
      const failed: string[] = [];
      for (const [key, address] of wanted) {
        if (listeners.has(key)) continue;
        try {
          listeners.set(key, bind(address));
        } catch (error) {
          failed.push(key);
          log(`Cannot listen on "${key}", will retry: ${messageOf(error)}`);
        }
      }
      return failed;
    },
    bound(): string[] {
      return [...listeners.keys()];
    },
    async drain(quietMs: number, maxMs: number): Promise<void> {
      const deadline = Date.now() + maxMs;
      let seen = received;
      let quietSince = Date.now();
      while (Date.now() < deadline) {
        if (received !== seen) {
          seen = received;
          quietSince = Date.now();
        }
        if (inFlight === 0 && Date.now() - quietSince >= quietMs) break;
        await sleep(Math.min(25, quietMs));
      }
      await closeAll();
    },
    close: closeAll,
  };
}

function ignore(): void {
  // A send that fails (the client went away, the socket closed) has nobody to tell.
}

function servfail(message: Uint8Array): Uint8Array | undefined {
  const read = readQuestion(message);
  return read === undefined ? undefined : buildError(message, read, RCODE.SERVFAIL);
}
