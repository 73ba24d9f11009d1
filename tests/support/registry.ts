// A real registry for end-to-end tests: Debian's docker-registry (the distribution registry v2), plain or with TLS
// (a CA and a server certificate made here with openssl) and htpasswd basic auth (apache2-utils' htpasswd -B),
// listening on loopback or inside a network namespace (a lab's underlay). Stopped and removed on dispose.
import { join } from "node:path";
import { stopChild } from "../../lib/util/mod.ts";
import { run } from "./spawn.ts";
import { eventually } from "./poll.ts";
import { issueCertificate, selfSignedCertificate } from "./pki.ts";

/** A running registry. */
export interface TestRegistry extends AsyncDisposable {
  /** `host:port` as image references name it. */
  host: string;
  /** The CA certificate (PEM) that signed its certificate, when it serves TLS. */
  caPem?: string;
  /** Its directory (config, storage, log). */
  dir: string;
  /** Stops it (storage kept): later pulls fail as unreachable. */
  stop(): Promise<void>;
  /** Starts it again on the same address and storage. */
  start(): Promise<void>;
}

/** How to run a registry. */
export interface RegistryOptions {
  /** Address to listen on; default 127.0.0.1. */
  address?: string;
  /** Port; default a free one. */
  port?: number;
  /** Run inside this network namespace (`ip netns exec`). */
  namespace?: string;
  /** Serve TLS with a certificate for `address`. */
  tls?: boolean;
  /** Require this user and password (htpasswd, bcrypt). */
  user?: { name: string; password: string };
  /**
   * With `tls`: every dockerd on this host (a lab's too) trusts its CA for its host until it is disposed
   * (`/etc/docker/certs.d/<host>/ca.crt`, which dockerd reads at each pull and push).
   */
  trustedByDocker?: boolean;
}

async function checked(cmd: string, args: string[]): Promise<string> {
  const result = await run(cmd, args);
  if (result.code !== 0) throw new Error(`${cmd} ${args.join(" ")} failed: ${result.stderr}`);
  return result.stdout;
}

/** Makes a CA and a server certificate for IP `address` under `dir`; returns the CA's PEM. */
async function makeCertificates(dir: string, address: string): Promise<string> {
  const ca = await selfSignedCertificate(
    { key: join(dir, "ca.key"), cert: join(dir, "ca.crt") },
    { cn: "ployz test registry CA" },
  );
  await issueCertificate(
    { key: join(dir, "server.key"), cert: join(dir, "server.crt") },
    { cn: address, san: `IP:${address}` },
    ca,
  );
  return await Deno.readTextFile(ca.cert);
}

function freeLoopbackPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** Starts a registry; dispose it to stop it and remove its files. */
export async function startRegistry(options: RegistryOptions = {}): Promise<TestRegistry> {
  const address = options.address ?? "127.0.0.1";
  const port = options.port ?? freeLoopbackPort();
  const dir = await Deno.makeTempDir({ prefix: "ployz-registry-" });
  const caPem = options.tls === true ? await makeCertificates(dir, address) : undefined;
  const lines = [
    "version: 0.1",
    "log:",
    "  level: info",
    "storage:",
    "  filesystem:",
    `    rootdirectory: ${join(dir, "data")}`,
    "  delete:",
    "    enabled: true",
    "http:",
    `  addr: ${address}:${port}`,
  ];
  if (options.tls === true) {
    lines.push(
      "  tls:",
      `    certificate: ${join(dir, "server.crt")}`,
      `    key: ${join(dir, "server.key")}`,
    );
  }
  if (options.user !== undefined) {
    const entry = await checked("htpasswd", ["-Bbn", options.user.name, options.user.password]);
    await Deno.writeTextFile(join(dir, "htpasswd"), entry.trim() + "\n");
    lines.push("auth:", "  htpasswd:", "    realm: ployz-test", `    path: ${join(dir, "htpasswd")}`);
  }
  await Deno.writeTextFile(join(dir, "config.yml"), lines.join("\n") + "\n");
  let child: Deno.ChildProcess | undefined;
  const prefix = options.namespace === undefined ? [] : ["ip", "netns", "exec", options.namespace];
  const scheme = options.tls === true ? "https" : "http";
  const probe = [
    ...prefix,
    "curl",
    "-s",
    "-o",
    "/dev/null",
    "-w",
    "%{http_code}",
    "--max-time",
    "2",
    ...(options.tls === true ? ["--cacert", join(dir, "ca.crt")] : []),
    `${scheme}://${address}:${port}/v2/`,
  ];
  const start = async (): Promise<void> => {
    // `exec` all the way down (sh, ip netns exec), so the child's pid is the registry's own.
    const argv = [...prefix, "docker-registry", "serve", join(dir, "config.yml")].map((a) => `'${a}'`).join(
      " ",
    );
    child = new Deno.Command("sh", {
      args: ["-c", `exec ${argv} >>'${join(dir, "registry.log")}' 2>&1`],
      stdout: "null",
      stderr: "null",
      stdin: "null",
    }).spawn();
    await eventually(15_000, `registry on ${address}:${port} answers`, async () => {
      const answer = await run(probe[0], probe.slice(1));
      return answer.stdout === "200" || answer.stdout === "401" ? true : undefined;
    });
  };
  const stop = async (): Promise<void> => {
    if (child === undefined) return;
    await stopChild(child);
    child = undefined;
  };
  const host = `${address}:${port}`;
  const certsD = `/etc/docker/certs.d/${host}`;
  const trusted = options.trustedByDocker === true && caPem !== undefined;
  const remove = async (): Promise<void> => {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    if (trusted) await Deno.remove(certsD, { recursive: true }).catch(() => {});
  };
  try {
    if (trusted) {
      await Deno.mkdir(certsD, { recursive: true });
      await Deno.writeTextFile(join(certsD, "ca.crt"), caPem);
    }
    await start();
  } catch (error) {
    await stop();
    await remove();
    throw error;
  }
  return {
    host,
    ...(caPem === undefined ? {} : { caPem }),
    dir,
    stop,
    start,
    async [Symbol.asyncDispose](): Promise<void> {
      await stop();
      await remove();
    },
  };
}
