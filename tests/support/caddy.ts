/**
 * Shared setup of the serving tests and benchmark that run real Caddy on the dev dockerd: the Ingress Proxy image
 * (built by `.ci/images_caddy.sh`), busybox httpd backends on a test bridge network, and container rows written
 * the way the daemon's publisher writes them.
 *
 * @module
 */

import { type ContainerSpec, type Engine, LABELS, type ObservedContainer } from "../../lib/deploy/mod.ts";
import { INGRESS_PROJECT } from "../../lib/serving/mod.ts";
import type { Container, Store } from "../../lib/store/mod.ts";
import { concatBytes } from "../../lib/util/mod.ts";

/** Builds the Ingress Proxy image when absent (idempotent script). */
export async function buildCaddyImage(socket: string): Promise<void> {
  const script = new URL("../../.ci/images_caddy.sh", import.meta.url).pathname;
  const out = await new Deno.Command("bash", {
    args: [script],
    env: { DOCKER_HOST: `unix://${socket}` },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(`images_caddy.sh failed: ${new TextDecoder().decode(out.stderr)}`);
}

/** A busybox httpd backend answering its own name. */
export function backendSpec(
  base: (suffix: string, overrides?: Partial<ContainerSpec>) => ContainerSpec,
  suffix: string,
  service: string,
  deployment: string,
  network: string,
  labels: Record<string, string> = {},
): ContainerSpec {
  return base(suffix, {
    service,
    deployment,
    cmd: ["sh", "-c", `echo ${suffix} > /www/index.html && exec httpd -f -p 80 -h /www`],
    labels,
    network: { name: network },
    restart: { policy: "no" },
  });
}

/** The row the publisher would write for an observed container. */
export function rowOf(o: ObservedContainer, machineId: string): Container {
  const label = (key: string): string => o.labels[key] ?? "";
  return {
    id: o.id,
    "machine_id": machineId,
    name: o.name,
    project: label(LABELS.project),
    service: label(LABELS.service),
    deployment: label(LABELS.deployment),
    slot: label(LABELS.slot),
    image: o.image,
    state: o.state,
    health: o.health,
    addresses: o.address?.ipv4 ? [o.address.ipv4] : [],
    labels: o.labels,
    "created_at": o.createdAt,
    "started_at": o.startedAt,
    "start_error": o.lastError,
  };
}

/** Publishes every owned container of the Engine into the store, as the publisher would. */
export async function publishAll(engine: Engine, store: Store): Promise<void> {
  const scan = await engine.rescan();
  const seen = new Set<string>();
  for (const o of scan.containers) {
    seen.add(o.id);
    store.containers.put(rowOf(o, engine.machineId));
  }
  for (const row of store.containers.list({ "machine_id": engine.machineId })) {
    if (!seen.has(row.id)) store.containers.delete(row.id);
  }
}

/**
 * Sends one HTTP/1.0 GET to the published port with a Host header (fetch would send the URL's host) and returns the
 * status and trimmed body. Never retried: a connection closed before a single byte of an answer is a failed request,
 * counted as such by every serving test.
 */
export function get(port: number, host: string, path = "/"): Promise<{ status: number; body: string }> {
  return getOnce(port, host, path);
}

async function getOnce(port: number, host: string, path: string): Promise<{ status: number; body: string }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(new TextEncoder().encode(`GET ${path} HTTP/1.0\r\nHost: ${host}\r\n\r\n`));
    const chunks: Uint8Array[] = [];
    const buffer = new Uint8Array(16 * 1024);
    // Generous: a 2-core CI machine under load can take seconds; a miss is reported as such, not as malformed.
    let timedOut = false;
    const deadline = setTimeout(() => {
      timedOut = true;
      conn.close();
    }, 15_000);
    try {
      for (;;) {
        const n = await conn.read(buffer);
        if (n === null) break;
        chunks.push(buffer.slice(0, n));
      }
    } finally {
      clearTimeout(deadline);
    }
    const text = new TextDecoder().decode(concatBytes(chunks));
    if (timedOut && text === "") throw new Error(`No HTTP answer within 15 s from port ${port}`);
    if (text === "") throw new Error(`No HTTP answer: the connection closed before any byte (port ${port})`);
    const status = Number(text.match(/^HTTP\/1\.[01] (\d{3})/)?.[1] ?? NaN);
    if (!Number.isInteger(status)) throw new Error(`Malformed HTTP answer: "${text.slice(0, 80)}"`);
    const at = text.indexOf("\r\n\r\n");
    return { status, body: at < 0 ? "" : text.slice(at + 4).trim() };
  } finally {
    try {
      conn.close();
    } catch {
      // Closed by the deadline.
    }
  }
}

/** Whether a row is an Ingress Proxy's. */
export function isSystem(row: Container): boolean {
  return row.project === INGRESS_PROJECT;
}

/**
 * At most this many accepted connections may be reset while a `/load` swaps Caddy's servers: Debian's Caddy 2.6.2
 * now and then resets one (measured: 1 in ~2,100 requests of two back-to-back clients across a pointer switch, 1 in
 * 243 fresh TLS connections across a certificate renewal). Tests count and report them apart, never hide them.
 */
export const MAX_RELOAD_RESETS = 3;

/** Splits request failures into connection resets (a reload's, see {@link MAX_RELOAD_RESETS}) and all others. */
export function splitReloadResets(failures: readonly string[]): { resets: string[]; other: string[] } {
  // Node's fetch says "reset by peer" or "closed before any byte"; curl says "reset by peer", "Empty reply", in a
  // TLS handshake SSL_ERROR_SYSCALL, and when the HTTP/2 connection closes under its first request "Error in the
  // HTTP2 framing layer" (seen once in a redeploy's reload; nothing was answered, so nothing half-served).
  const reset =
    /reset by peer|closed before any byte|Empty reply from server|SSL_ERROR_SYSCALL|Error in the HTTP2 framing layer/;
  return {
    resets: failures.filter((f) => reset.test(f)),
    other: failures.filter((f) => !reset.test(f)),
  };
}
