// Internal DNS end-to-end tests: spawn `ployzd dns` under the dns permission set, query it with a
// real UDP/TCP client, and run a tiny upstream resolver on loopback.
// @ts-types="npm:@types/dns-packet@5.6.5"
import * as dnsPacket from "dns-packet";
import { Buffer } from "node:buffer";
import dgram from "node:dgram";
import net from "node:net";
import { join } from "node:path";
import { type DnsSpec, renderDnsSpec } from "../../lib/dns/mod.ts";
import {
  configFlags,
  layoutFromEnv,
  permissionFlags,
  permissionSet,
  relocate,
} from "../../lib/permissions/mod.ts";
import { stopChild } from "../../lib/util/mod.ts";
import { ROOT, type TempLayout } from "./spawn.ts";

/**
 * The dns set relocated to `layout`, plus loopback (tests listen on 127.0.0.1:<high port> and reply to clients on
 * random ports) and `0.0.0.0:0` (the ephemeral socket each forwarded query is sent from).
 */
export function dnsTestFlags(layout: TempLayout): string[] {
  const set = relocate(permissionSet("dns"), layoutFromEnv((k) => layout.env[k]));
  const net = Array.isArray(set.net) ? set.net : [];
  return permissionFlags({ ...set, net: [...net, "0.0.0.0:0", "127.0.0.1"] });
}

/**
 * The spec Machine m1's daemon would hand `ployzd dns` listening on 127.0.0.1:`port`: `web.shop` at `replicas`
 * (the first on m1, the next on m2, …), other names forwarded to `upstreams`.
 */
export function webShopSpec(port: number, replicas: string[], upstreams?: string[]): DnsSpec {
  return renderDnsSpec({
    machineId: "m1",
    listen: [`127.0.0.1:${port}`],
    upstreams,
    generatedAt: new Date(),
    services: [{
      project: "shop",
      service: "web",
      replicas: replicas.map((address, i) => ({ address, machineId: `m${i + 1}` })),
    }],
  });
}

/**
 * The arguments of `deno` that run this checkout's `ployzd dns` (with `args`) under `flags`, without deno.json as
 * the unit runs it (lib/permissions/runtime_flags.ts `configFlags`).
 */
export function ployzdDnsArgs(flags: string[], args: string[] = []): string[] {
  return [
    "run",
    "--quiet",
    "--no-prompt",
    ...configFlags("dns"),
    ...flags,
    join(ROOT, "cmd", "ployzd.ts"),
    "dns",
    ...args,
  ];
}

/** dnsperf's arguments: `passes` over the queries in `data` against 127.0.0.1:`port`, `outstanding` at once. */
export function dnsperfArgs(
  port: number,
  data: string,
  options: { passes: number; clients: number; outstanding: number },
): string[] {
  return [
    "-s",
    "127.0.0.1",
    "-p",
    String(port),
    "-d",
    data,
    "-n",
    String(options.passes),
    "-c",
    String(options.clients),
    "-q",
    String(options.outstanding),
  ];
}

/** A running `ployzd dns` and its log. */
export interface DnsProcess extends AsyncDisposable {
  child: Deno.ChildProcess;
  lines: string[];
  /** Resolves with the first log line matching `pattern`, or throws after `ms`. */
  waitFor(pattern: RegExp, ms?: number): Promise<string>;
  /** Resolves with the exit code, or throws after `ms`. */
  exited(ms?: number): Promise<number>;
}

/**
 * Starts `ployzd dns` (or `dns --probe` via `args`) as a real process under `flags`, inside network namespace
 * `namespace` when given (`ip netns exec` execs, so the child's pid is the daemon's own).
 */
export function startDns(
  layout: TempLayout,
  flags: string[],
  args: string[] = [],
  namespace?: string,
): DnsProcess {
  const inNamespace = namespace === undefined ? [] : ["netns", "exec", namespace, Deno.execPath()];
  const child = new Deno.Command(namespace === undefined ? Deno.execPath() : "ip", {
    args: [...inNamespace, ...ployzdDnsArgs(flags, args)],
    env: { ...layout.env, NO_COLOR: "1", RUST_BACKTRACE: "0" },
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  let notify = (): void => {};
  const reading = (async () => {
    let rest = "";
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      rest += chunk;
      const parts = rest.split("\n");
      rest = parts.pop() ?? "";
      lines.push(...parts);
      notify();
    }
    if (rest) lines.push(rest);
    notify();
  })();
  const status = child.status;
  async function waitFor(pattern: RegExp, ms = 15_000): Promise<string> {
    const deadline = Date.now() + ms;
    while (true) {
      const hit = lines.find((l) => pattern.test(l));
      if (hit) return hit;
      if (Date.now() > deadline) {
        throw new Error(`No log line matching ${pattern} within ${ms} ms:\n${lines.join("\n")}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 50);
        notify = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }
  async function exited(ms = 15_000): Promise<number> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`ployzd dns did not exit within ${ms} ms:\n${lines.join("\n")}`)),
        ms,
      );
    });
    try {
      return (await Promise.race([status, timeout])).code;
    } finally {
      clearTimeout(timer);
    }
  }
  return {
    child,
    lines,
    waitFor,
    exited,
    async [Symbol.asyncDispose](): Promise<void> {
      await stopChild(child, { signal: "SIGKILL" });
      await status;
      await reading;
    },
  };
}

/** What a query got back. */
export type QueryOutcome = { rcode: string; addresses: string[] } | { error: string };

function outcomeOf(message: Buffer): QueryOutcome {
  const packet = dnsPacket.decode(message) as dnsPacket.DecodedPacket & { rcode: string };
  return {
    rcode: packet.rcode,
    addresses: (packet.answers ?? []).filter((a) => a.type === "A").map((a) => (a as { data: string }).data),
  };
}

function encodeQuery(name: string, id: number): Buffer {
  return dnsPacket.encode({
    type: "query",
    id,
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ type: "A", name, class: "IN" }],
  });
}

/** A UDP client socket that sends one query at a time. */
export interface UdpClient {
  query(name: string, timeoutMs?: number): Promise<QueryOutcome>;
  close(): Promise<void>;
}

/** Opens a UDP client towards 127.0.0.1:`port`. */
export async function udpClient(port: number): Promise<UdpClient> {
  const socket = dgram.createSocket("udp4");
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  let id = 1;
  let waiting: ((message: Buffer) => void) | undefined;
  socket.on("message", (message: Buffer) => waiting?.(message));
  socket.on("error", () => {});
  return {
    query(name: string, timeoutMs = 1000): Promise<QueryOutcome> {
      const myId = id++ & 0xffff;
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          waiting = undefined;
          resolve({ error: "timeout" });
        }, timeoutMs);
        waiting = (message) => {
          if (message.readUInt16BE(0) !== myId) return;
          clearTimeout(timer);
          waiting = undefined;
          resolve(outcomeOf(message));
        };
        socket.send(encodeQuery(name, myId), port, "127.0.0.1", (error) => {
          if (!error) return;
          clearTimeout(timer);
          waiting = undefined;
          resolve({ error: error.message });
        });
      });
    },
    close(): Promise<void> {
      return new Promise((resolve) => socket.close(() => resolve()));
    },
  };
}

/** One UDP query from a fresh socket. */
export async function udpQuery(port: number, name: string, timeoutMs = 1000): Promise<QueryOutcome> {
  const client = await udpClient(port);
  try {
    return await client.query(name, timeoutMs);
  } finally {
    await client.close();
  }
}

/** One query over TCP (length-prefixed). */
export function tcpQuery(port: number, name: string, timeoutMs = 2000): Promise<QueryOutcome> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    let buffer = Buffer.alloc(0);
    const timer = setTimeout(() => finish({ error: "timeout" }), timeoutMs);
    function finish(outcome: QueryOutcome): void {
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    }
    socket.on("connect", () => {
      const query = encodeQuery(name, 7);
      const length = Buffer.alloc(2);
      length.writeUInt16BE(query.length);
      socket.write(Buffer.concat([length, query]));
    });
    socket.on("data", (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      if (buffer.length >= 2 && buffer.length >= 2 + buffer.readUInt16BE(0)) {
        finish(outcomeOf(buffer.subarray(2, 2 + buffer.readUInt16BE(0))));
      }
    });
    socket.on("error", (error: Error) => finish({ error: error.message }));
  });
}

/** A loopback resolver answering every A query with `address`, counting what it got. */
export interface FakeUpstream extends AsyncDisposable {
  port: number;
  queries: string[];
}

/** Starts a {@link FakeUpstream}. */
export async function fakeUpstream(address: string): Promise<FakeUpstream> {
  const socket = dgram.createSocket("udp4");
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  const queries: string[] = [];
  socket.on("message", (message: Buffer, from: dgram.RemoteInfo) => {
    const query = dnsPacket.decode(message);
    const question = query.questions?.[0];
    if (!question) return;
    queries.push(question.name);
    const answer = dnsPacket.encode({
      type: "response",
      id: query.id,
      flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE,
      questions: [question],
      answers: [{ type: "A", name: question.name, ttl: 60, data: address }],
    });
    socket.send(answer, from.port, from.address);
  });
  return {
    port: socket.address().port,
    queries,
    [Symbol.asyncDispose](): Promise<void> {
      return new Promise((resolve) => socket.close(() => resolve()));
    },
  };
}

/** A loopback port that is free for both UDP and TCP right now. */
export async function freeDnsPort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20000 + Math.floor(Math.random() * 20000);
    if (await udpFree(port) && await tcpFree(port)) return port;
  }
  throw new Error("Cannot find a free loopback port");
}

/** True when `port` can be bound for UDP on 127.0.0.1 (without address sharing). */
export function udpFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = dgram.createSocket("udp4");
    socket.on("error", () => socket.close(() => resolve(false)));
    socket.bind(port, "127.0.0.1", () => socket.close(() => resolve(true)));
  });
}

/** True when `port` can be bound for TCP on 127.0.0.1. */
export function tcpFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.on("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/**
 * dnsmasq as the upstream resolver a Machine's Internal DNS forwards other names to (PLOYZ_DNS_UPSTREAMS), in the
 * network namespace nsenter's `net` option names (`--net=…`): it listens on `listen` only and knows `forwarded.name`
 * alone, authoritatively, so that its AAAA query gets an empty answer rather than REFUSED. The caller kills it.
 */
export function upstreamResolver(
  net: string,
  listen: string,
  forwarded: { name: string; address: string },
  pidFile: string,
): Deno.ChildProcess {
  return new Deno.Command("nsenter", {
    args: [
      net,
      "--",
      "dnsmasq",
      "--keep-in-foreground",
      "--conf-file=/dev/null",
      "--no-resolv",
      "--no-hosts",
      "--bind-interfaces",
      `--listen-address=${listen}`,
      `--pid-file=${pidFile}`,
      "--user=root",
      `--local=/${forwarded.name}/`,
      `--address=/${forwarded.name}/${forwarded.address}`,
    ],
    stdin: "null",
    stdout: "null",
    stderr: "inherit",
  }).spawn();
}
