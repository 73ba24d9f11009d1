/**
 * The Machine-local serving infrastructure the daemon owns but does not host (docs/bets.md, bets 3, 9, 10): once the
 * Machine participates, the daemon keeps `ployzd dns` running (a runtime unit where systemd runs, else a child
 * process), runs the serving loop (dns.json, the local Caddy config, acks, the retire loop) and the ingress driver
 * (bet 10's start of an Ingress Proxy whose last start failed), and holds requested stops of Ingress Proxies.
 *
 * Stopping the runtime stops the loop and the driver; a DNS unit keeps running under systemd, while a spawned DNS
 * process (tests, the lab) is respawned whenever it exits and ends with the daemon. Caddy runs in its own container and keeps serving either way.
 *
 * @module
 */

import type { ContainerDns, ContainerSpec, Engine } from "../deploy/machine/mod.ts";
import { DNS_EXIT_UNSUPPORTED_SPEC } from "../dns/writer/mod.ts";
import { configFlags, daemonCommand, DEFAULT_LAYOUT, type Layout, layoutEnv } from "../permissions/mod.ts";
import {
  acmeSettingsFromEnv,
  CADDY_ADMIN_DIR_IN_CONTAINER,
  caddyRunDir,
  type DnsRunner,
  type IngressDriver,
  IngressHoldBook,
  type IngressRecord,
  isIngressProxy,
  kernelMigratesRequests,
  MIGRATE_REQ_SYSCTL,
  retireAfterMsFromEnv,
  type ServingLoop,
  startIngressDriver,
  startServingLoop,
  systemdRuns,
} from "../serving/mod.ts";
import type { Store } from "../store/mod.ts";
import { doorRunner } from "./systemd_door.ts";
import { stopChild } from "../util/mod.ts";

/** How to run the serving runtime. */
export interface ServingRuntimeOptions {
  /** This Machine's store. */
  store: Store;
  /** This Machine's Docker. */
  engine: Engine;
  /** The Machine's paths; dns.json and the Caddy admin socket live under its run dir. */
  layout: Omit<Layout, "dockerRoot"> & { dockerRoot?: string };
  /** The Machine Gateway, where Internal DNS answers on port 53. */
  gateway: string;
  /** The Machine's bridge network. */
  network: string;
  /** The Machine's record as it is now. */
  record: () => IngressRecord;
  /** Machines this Machine observes as Down now; read every {@link ServingRuntimeOptions.downEveryMs}. */
  down: () => Promise<ReadonlySet<string>>;
  /** How often the Down set is read; default 5 s. */
  downEveryMs?: number;
  /** Host port an Ingress Proxy publishes HTTP on; default `PLOYZ_INGRESS_HTTP_PORT`, else 80. */
  ingressHttpPort?: number;
  /** How `ployzd dns` is kept running; default {@link defaultDnsRunner}. */
  dns?: DnsRunner;
  /** Retire bound; default `PLOYZ_RETIRE_AFTER_SECONDS`, else 300 s. */
  retireAfterMs?: number;
  /** One line per notable event. */
  log?: (line: string) => void;
  /** Destroys this Machine's copy of a Provisioned Volume a confirmed removal of `project` names. */
  removeProvisioned?: (volume: string, project: string) => Promise<boolean>;
}

/** What the container handlers apply while the Machine serves. */
export interface ServingHooks {
  /** Requested and in-flight stops of Ingress Proxies. */
  readonly holds: IngressHoldBook;
  /** The resolver a new container of `project` gets when its spec names none; undefined while DNS is down. */
  dns(project: string): ContainerDns | undefined;
  /** An Ingress Proxy spec with this Machine's admin socket directory and HTTP port; other specs unchanged. */
  localize(spec: ContainerSpec): ContainerSpec;
}

/** The running serving runtime. */
export interface ServingRuntime extends ServingHooks {
  /** The serving loop. */
  readonly loop: ServingLoop;
  /** The Down set as last read. */
  down(): ReadonlySet<string>;
  /** Stops the loop and the driver, and releases a spawned DNS process. */
  stop(): Promise<void>;
}

/**
 * `ployzd dns` under a runtime unit when systemd is PID 1, else as a supervised child of this process run by the
 * same deno under the relocated `dns` permission set (the daemon then needs run permission for its own deno
 * binary).
 */
export async function defaultDnsRunner(
  layout: Layout,
  log: (line: string) => void = () => {},
): Promise<DnsRunner> {
  // Under systemd the runtime unit is written and started by the ployz-systemd door, not by the daemon.
  if (await systemdRuns()) return doorRunner("dns");
  return supervisedDnsRunner({
    // As the installed unit runs it: no deno.json, so net and lazy dynamic imports (without which Deno would
    // parse every other subcommand's graph too) are named by configFlags.
    argv: daemonCommand("dns", { config: configFlags("dns"), layout }),
    env: { ...layoutEnv(layout), NO_COLOR: "1" },
    log,
  });
}

/** How a spawned `ployzd dns` is kept running. */
export interface SupervisedDnsOptions {
  /** The command, e.g. `deno run -P=dns cmd/ployzd.ts dns`. */
  argv: string[];
  /** Its whole environment. */
  env?: Record<string, string>;
  /** One line per exit and respawn. */
  log?: (line: string) => void;
  /** Delay before the first respawn; doubles on each exit that follows quickly. Default 1 s. */
  backoffMs?: number;
  /** The longest delay between respawns. Default 30 s. */
  maxBackoffMs?: number;
  /** A child that stayed up this long ran well: its respawn waits the first delay again. Default 30 s. */
  stableMs?: number;
}

/** A {@link DnsRunner} whose child the daemon spawns and respawns itself. */
export interface SupervisedDnsRunner extends DnsRunner {
  /** The running child's process id; undefined between an exit and its respawn, and after a stop. */
  pid(): number | undefined;
}

/**
 * Spawns `ployzd dns` and respawns it whenever it exits, after a delay that doubles from `backoffMs` to
 * `maxBackoffMs` and starts over once a child stayed up `stableMs`; every exit is logged with its status. It is
 * not respawned after {@link DnsRunner.close}, nor when it exited with {@link DNS_EXIT_UNSUPPORTED_SPEC}: the same
 * build would hand the port back again, so it stays down (and says so) until the next {@link DnsRunner.ensure}.
 */
export function supervisedDnsRunner(options: SupervisedDnsOptions): SupervisedDnsRunner {
  const log = options.log ?? (() => {});
  const firstDelay = options.backoffMs ?? 1_000;
  const maxDelay = options.maxBackoffMs ?? 30_000;
  const stableMs = options.stableMs ?? 30_000;
  let child: Deno.ChildProcess | undefined;
  let respawn: ReturnType<typeof setTimeout> | undefined;
  let delay = firstDelay;
  let closed = false;

  function spawn(): void {
    const started = Date.now();
    let running: Deno.ChildProcess;
    try {
      running = new Deno.Command(options.argv[0], {
        args: options.argv.slice(1),
        env: options.env,
        stdin: "null",
        stdout: "null",
        stderr: "inherit",
      }).spawn();
    } catch (error) {
      log(`serving: cannot start ployzd dns, retrying in ${delay} ms: ${(error as Error).message}`);
      schedule();
      return;
    }
    child = running;
    running.status.then((status) => {
      if (child === running) child = undefined;
      if (closed) return;
      const how = status.signal ? `signal ${status.signal}` : `code ${status.code}`;
      const upMs = Date.now() - started;
      if (status.code === DNS_EXIT_UNSUPPORTED_SPEC && !status.signal) {
        log(
          `serving: ployzd dns exited with code ${status.code} after ${upMs} ms: this build cannot serve the ` +
            `current DNS spec, not restarting it`,
        );
        return;
      }
      if (upMs >= stableMs) delay = firstDelay;
      log(`serving: ployzd dns exited with ${how} after ${upMs} ms, restarting in ${delay} ms`);
      schedule();
    });
  }

  function schedule(): void {
    respawn = setTimeout(() => {
      respawn = undefined;
      if (!closed && child === undefined) spawn();
    }, delay);
    delay = Math.min(delay * 2, maxDelay);
  }

  return {
    ensure(): Promise<void> {
      closed = false;
      if (child === undefined && respawn === undefined) spawn();
      return Promise.resolve();
    },
    async close(): Promise<void> {
      closed = true;
      clearTimeout(respawn);
      respawn = undefined;
      const running = child;
      if (running !== undefined) await stopChild(running);
    },
    pid: () => child?.pid,
  };
}

/** The resolver every container of `project` gets: the Machine Gateway, searching its Project. */
export function containerDns(gateway: string, project: string): ContainerDns {
  return { servers: [gateway], search: [`${project}.internal`], options: ["ndots:1"] };
}

/** `PLOYZ_INGRESS_HTTP_PORT`, else 80. */
export function ingressHttpPortFromEnv(
  env: (name: string) => string | undefined = (n) => Deno.env.get(n),
): number {
  const n = Number(env("PLOYZ_INGRESS_HTTP_PORT") ?? "80");
  return Number.isInteger(n) && n > 0 && n < 65536 ? n : 80;
}

/** The host port an Ingress Proxy publishes HTTPS on: `PLOYZ_INGRESS_HTTPS_PORT`, else 443; `off` publishes none. */
export function ingressHttpsPortFromEnv(
  env: (name: string) => string | undefined = (n) => Deno.env.get(n),
): number | null {
  const text = env("PLOYZ_INGRESS_HTTPS_PORT") ?? "443";
  if (text === "off") return null;
  const n = Number(text);
  return Number.isInteger(n) && n > 0 && n < 65536 ? n : 443;
}

/**
 * An Ingress Proxy's admin socket directory, HTTP port and network are this Machine's facts, not the client's: the
 * mount that targets the admin directory gets this Machine's `<runDir>/caddy`, port 80 inside gets `httpPort`, and
 * the container joins the Machine's bridge network. Where the kernel can (`migrateRequests`), the proxy's network
 * namespace migrates queued connections: each config load binds a new SO_REUSEPORT listener and closes the old one,
 * and without migration the connections already queued on the old one are reset, a request failed with no reply.
 */
export function localizeIngress(
  spec: ContainerSpec,
  machine: {
    runDir: string;
    httpPort: number;
    httpsPort?: number | null;
    network: string;
    migrateRequests?: boolean;
  },
): ContainerSpec {
  if (!isIngressProxy(spec)) return spec;
  const { runDir, httpPort } = machine;
  const httpsPort = machine.httpsPort === undefined ? 443 : machine.httpsPort;
  return {
    ...spec,
    ...(machine.migrateRequests ? { sysctls: { ...spec.sysctls, [MIGRATE_REQ_SYSCTL]: "1" } } : {}),
    network: { ...spec.network, name: machine.network },
    mounts: spec.mounts?.map((m) =>
      m.type === "bind" && m.target === CADDY_ADMIN_DIR_IN_CONTAINER
        ? { ...m, source: caddyRunDir(runDir) }
        : m
    ),
    ports: spec.ports?.flatMap((p) =>
      p.containerPort === 80
        ? [{ ...p, hostPort: httpPort }]
        : p.containerPort === 443
        ? httpsPort === null ? [] : [{ ...p, hostPort: httpsPort }]
        : [p]
    ),
  };
}

/** Starts DNS, the serving loop and the ingress driver; resolves once the first pass wrote dns.json. */
export async function startServingRuntime(options: ServingRuntimeOptions): Promise<ServingRuntime> {
  const log = options.log ?? (() => {});
  const holds = new IngressHoldBook();
  const httpPort = options.ingressHttpPort ?? ingressHttpPortFromEnv();
  const httpsPort = ingressHttpsPortFromEnv();
  const migrateRequests = kernelMigratesRequests();
  let down: ReadonlySet<string> = new Set();
  const readDown = async (): Promise<void> => {
    try {
      down = await options.down();
    } catch (error) {
      log(`serving: cannot read membership: ${(error as Error).message}`);
    }
  };
  await readDown();
  const downTimer = setInterval(() => void readDown(), options.downEveryMs ?? 5_000);
  // The first pass writes dns.json before the DNS process starts, so it loads a spec at once.
  const loop = await startServingLoop({
    store: options.store,
    engine: options.engine,
    runDir: options.layout.runDir,
    dnsListen: [`${options.gateway}:53`],
    down: () => down,
    retireAfterMs: options.retireAfterMs ?? retireAfterMsFromEnv(),
    acme: () => acmeSettingsFromEnv(options.layout.dataDir),
    log,
    ...(options.removeProvisioned === undefined ? {} : { removeProvisioned: options.removeProvisioned }),
  }).catch((error) => {
    clearInterval(downTimer);
    throw error;
  });
  // Without Internal DNS the loop and the driver still run; new containers then keep Docker's resolver.
  let dns: DnsRunner | undefined;
  let dnsUp = false;
  try {
    dns = options.dns ??
      await defaultDnsRunner({ dockerRoot: DEFAULT_LAYOUT.dockerRoot, ...options.layout }, log);
    await dns.ensure();
    dnsUp = true;
  } catch (error) {
    log(`serving: cannot run Internal DNS: ${(error as Error).message}`);
  }
  const driver: IngressDriver = startIngressDriver({
    engine: options.engine,
    record: options.record,
    holds,
    network: options.network,
    log,
  });
  let stopped: Promise<void> | undefined;
  return {
    holds,
    loop,
    down: () => down,
    dns: (project) => dnsUp ? containerDns(options.gateway, project) : undefined,
    localize: (spec) =>
      localizeIngress(spec, {
        runDir: options.layout.runDir,
        httpPort,
        httpsPort,
        network: options.network,
        migrateRequests,
      }),
    stop(): Promise<void> {
      stopped ??= (async () => {
        clearInterval(downTimer);
        await driver.stop();
        await loop.stop();
        await dns?.close();
      })();
      return stopped;
    },
  };
}
