/**
 * The daemon's serving loop: on each store change (debounced), on a tick and when a retire bound passes, one pass
 * re-derives everything from rows and Docker — the retire decision, dns.json (single writer), the local Ingress
 * Proxy's Caddy config, this Machine's acks, and the stops of retired containers. A pass only stops this Machine's
 * own containers, and only after its local proxy's loaded config dropped them; it never starts, creates, places or
 * moves one.
 *
 * Stopping marks live in this loop's memory: a retired container is excluded from both projections at once, and
 * stopped on a later pass once Caddy's read-back config no longer dials it (remote proxies already dropped it by
 * acking the pointer, or are Down, or the bound passed).
 *
 * @module
 */

import type { Engine } from "../deploy/machine/mod.ts";
import type { Container, Store } from "../store/mod.ts";
import { challengeAckPointer, challengeConfirmation } from "./challenge_acks.ts";
import { type CaddyAdmin, openCaddyAdmin } from "./caddy_admin.ts";
import { type CaddyLoadReport, canonical, configDials, loadCaddy } from "./caddy_loader.ts";
import { projectCaddy, type ServingProblem } from "./caddy_projection.ts";
import type { AcmeSettings } from "./acme_issuer.ts";
import {
  type CertificateKeeper,
  type CertificateKeeperOptions,
  startCertificateKeeper,
} from "./certificate_keeper.ts";
import { type UsableCertificate, usableCertificate } from "./certificates.ts";
import { dnsUpstreamsFromEnv, projectDns } from "./dns_projection.ts";
import { DnsSpecWriter } from "./dns_writer.ts";
import { caddyAdminSocket, caddyRunDir, INGRESS_PROJECT, INGRESS_SERVICE } from "./ingress_spec.ts";
import { ingressRoutes } from "./labels.ts";
import { servingGroups } from "./serving_set.ts";
import {
  type PassContext,
  removeCovered,
  removeMarkVolumes,
  stopRetired,
  writeChallengeAcks,
  writeServingAcks,
} from "./serving_actions.ts";
import { type RemovalDecision, removalDecision } from "./removal.ts";
import { DEFAULT_RETIRE_AFTER_MS, type RetireDecision, retireDecision } from "./retire.ts";

/** Options of {@link startServingLoop}. */
export interface ServingLoopOptions {
  /** This Machine's store; its site id is the Machine id. */
  store: Store;
  /** This Machine's Docker. */
  engine: Engine;
  /** The run dir (`/run/ployz`); the admin socket is `<runDir>/caddy/admin.sock`. */
  runDir: string;
  /** dns.json path; default `<runDir>/dns.json`. */
  dnsPath?: string;
  /** Addresses the DNS process answers on. */
  dnsListen: string[];
  /** Explicit DNS upstreams; default {@link dnsUpstreamsFromEnv}, else the host's resolv.conf. */
  dnsUpstreams?: string[];
  /** Machines this Machine observes as Down. */
  down?: () => ReadonlySet<string>;
  /** Retire bound; default 300 s. */
  retireAfterMs?: number;
  /** Quiet time after a change before a pass; default 100 ms. */
  debounceMs?: number;
  /** Pass period without changes (the retire bound, a proxy restart); default 5 s. */
  tickMs?: number;
  /** Admin client factory (tests); default over the socket. */
  admin?: () => CaddyAdmin;
  /** One line per notable event. */
  log?: (line: string) => void;
  /**
   * Destroys this Machine's copy of a Provisioned Volume a removal mark names, for the mark's Project (true when
   * there was one); absent on a Machine without Pools, where only Docker volumes are removed.
   */
  removeProvisioned?: (volume: string, project: string) => Promise<boolean>;
  /** ACME settings for https routes; without them no certificate is obtained here (certificates still load). */
  acme?: () => Promise<AcmeSettings>;
  /** Keeper overrides (tests): the ACME client, the bound on answer confirmations. */
  keeper?: Pick<CertificateKeeperOptions, "obtain" | "confirmMs" | "random">;
}

/** What one pass did. */
export interface ServingPass {
  /** dns.json holds this pass's projection. */
  dnsWritten: boolean;
  /** The local proxy's state: `absent` (no running Ingress Proxy here), `loaded`, `unchanged` or `failed`. */
  caddy: "absent" | "loaded" | "unchanged" | "failed";
  /** The load report when a load ran. */
  caddyReport?: CaddyLoadReport;
  /** Projection problems (skipped routes and fragments). */
  problems: ServingProblem[];
  /** Acks written. */
  acks: number;
  /** The retire decision. */
  retire: RetireDecision;
  /** Containers stopped by this pass. */
  stopped: string[];
  /** The removal decision (removal marks this Machine honours for its own containers). */
  removal: RemovalDecision;
  /** Containers removed by this pass. */
  removed: string[];
  /** Errors met. */
  errors: string[];
}

/** What the local Ingress Proxy serves, as its last confirmed load left it. */
export interface IngressState {
  /** The Ingress Proxy container the config was loaded into; null when none runs here. */
  proxyId: string | null;
  /** `project/service` of each Service with ingress routes and at least one upstream in that config. */
  routed: string[];
}

/** A running serving loop. */
export interface ServingLoop {
  /** Runs a pass now (after any running one). */
  pass(): Promise<ServingPass>;
  /** The dials of the config the local proxy last confirmed loaded. */
  loadedDials(): string[];
  /** The certificate keeper, when ACME settings were given. */
  readonly keeper: CertificateKeeper | undefined;
  /** What the local Ingress Proxy serves now, as last confirmed loaded. */
  ingressState(): IngressState;
  /** Stops watching; resolves after the running pass. */
  stop(): Promise<void>;
}

/** Starts the loop: a first pass at once, then on store changes and the tick. */
export async function startServingLoop(options: ServingLoopOptions): Promise<ServingLoop> {
  const { store, engine } = options;
  const machineId = store.siteId;
  const log = options.log ?? (() => {});
  const writer = new DnsSpecWriter(options.dnsPath ?? `${options.runDir}/dns.json`);
  const upstreams = options.dnsUpstreams ?? dnsUpstreamsFromEnv();
  await Deno.mkdir(caddyRunDir(options.runDir), { recursive: true });
  const socket = caddyAdminSocket(options.runDir);
  const admin = options.admin?.() ?? openCaddyAdmin(socket);
  const marks = new Set<string>();
  const firstSeen = new Map<string, number>();
  const removalFirstSeen = new Map<string, number>();
  // Volumes of a removal mark this daemon already removed or tried: each is tried once per daemon run, never on a
  // timer; a refusal is logged and `rm --status` still lists the mark.
  const volumesTried = new Set<string>();
  let lastKey: string | undefined;
  let dials: string[] = [];
  let answered = new Set<string>();
  const keeper = options.acme === undefined ? undefined : startCertificateKeeper({
    store,
    settings: options.acme,
    down: () => options.down?.() ?? new Set(),
    confirmation: (token) =>
      challengeConfirmation({
        token,
        machines: store.liveMachines(),
        down: options.down?.() ?? new Set(),
        containers: store.liveContainers(),
        acks: store.acks.list({ pointer: challengeAckPointer(token) }),
      }),
    kick: () => schedule(),
    log,
    ...options.keeper,
  });
  let ingress: IngressState = { proxyId: null, routed: [] };
  const controller = new AbortController();
  let tail: Promise<ServingPass> | undefined;

  function localProxy(rows: Container[]): Container | undefined {
    return rows.find((r) =>
      r.machine_id === machineId && r.project === INGRESS_PROJECT && r.service === INGRESS_SERVICE &&
      r.state === "running"
    );
  }

  async function passOnce(): Promise<ServingPass> {
    const errors: string[] = [];
    // A retired Machine's rows are no upstream, no name and no one to wait for.
    const containers = store.liveContainers();
    const pointers = store.servingPointers.list();
    const retire = retireDecision({
      machineId,
      nowMs: Date.now(),
      containers,
      pointers,
      acks: store.acks.list(),
      machines: store.liveMachines().map((m) => m.id),
      down: options.down?.() ?? new Set(),
      firstSeen,
      retireAfterMs: options.retireAfterMs,
    });
    for (const item of retire.retire) marks.add(item.containerId);
    const removals = store.removals.list();
    const removal = removalDecision({
      machineId,
      nowMs: Date.now(),
      containers,
      removals,
      acks: store.acks.list(),
      machines: store.liveMachines().map((m) => m.id),
      down: options.down?.() ?? new Set(),
      firstSeen: removalFirstSeen,
      boundMs: options.retireAfterMs ?? DEFAULT_RETIRE_AFTER_MS,
    });
    const live = new Set(
      containers.filter((r) => r.state === "running" || r.state === "restarting").map((r) => r.id),
    );
    for (const id of [...marks]) if (!live.has(id)) marks.delete(id);

    // Covered by a removal mark or retired: out of both projections at once.
    const leaving = new Set([...marks, ...removal.leaving]);
    let dnsWritten = false;
    try {
      dnsWritten = await writer.write(projectDns(containers, pointers, {
        machineId,
        listen: options.dnsListen,
        upstreams,
        stopping: leaving,
        now: new Date(),
      }));
    } catch (error) {
      errors.push(`cannot write "${writer.path}": ${(error as Error).message}`);
    }

    const now = new Date();
    const certificates = new Map<string, UsableCertificate>();
    for (const row of store.certificates.list()) {
      const read = usableCertificate(row, now);
      if (read.ok) certificates.set(read.cert.hostname, read.cert);
    }
    const projection = projectCaddy(containers, pointers, {
      machineId,
      stopping: leaving,
      certificates,
      challenges: store.acmeChallenges.list(),
      now,
    });
    const proxy = localProxy(containers);
    let caddy: ServingPass["caddy"] = "absent";
    let caddyReport: CaddyLoadReport | undefined;
    const routed = servingGroups(containers, pointers, { stopping: leaving }).filter((g) =>
      g.serving.some((r) => ingressRoutes(r).length > 0)
    ).map((g) => g.key);
    if (proxy === undefined) {
      dials = [];
      answered = new Set();
      lastKey = undefined;
      ingress = { proxyId: null, routed: [] };
    } else {
      const key = canonical({
        proxy: proxy.id,
        started: proxy.started_at,
        base: projection.base,
        f: projection.fragments,
        tls: projection.tls.map((c) => `${c.hostname}/${c.serial}`),
      });
      if (key === lastKey) caddy = "unchanged";
      else {
        caddyReport = await loadCaddy(admin, projection, { signal: controller.signal });
        if (caddyReport.loaded) {
          caddy = "loaded";
          lastKey = key;
          dials = configDials(caddyReport.config);
          answered = new Set(projection.answered);
          ingress = { proxyId: proxy.id, routed };
          for (const s of caddyReport.skipped) log(`serving: skipped ${s.service}: ${s.message}`);
        } else {
          caddy = "failed";
          lastKey = undefined;
          errors.push(`Caddy load failed after ${caddyReport.attempts} attempts: ${caddyReport.error}`);
        }
      }
    }

    // An Ingress Proxy about to serve here (created or restarting, none running) has loaded nothing yet: this Machine
    // acks nothing until it has, so no retire loop or client stop counts it as having dropped anything.
    const starting = proxy === undefined &&
      containers.some((r) =>
        r.machine_id === machineId && r.project === INGRESS_PROJECT && r.service === INGRESS_SERVICE &&
        (r.state === "created" || r.state === "restarting")
      );
    const ctx: PassContext = { store, engine, machineId, signal: controller.signal, log, errors };
    const acks = dnsWritten && caddy !== "failed" && !starting
      ? writeServingAcks(ctx, pointers, removals, containers)
      : 0;
    // Challenge acks follow what the local proxy confirmed loaded; without a proxy this Machine answers none.
    if (caddy !== "failed") writeChallengeAcks(ctx, [...answered]);
    const stopped = await stopRetired(ctx, retire, containers, dials);
    const removed = await removeCovered(ctx, removal, containers, dials);
    await removeMarkVolumes(ctx, removals, volumesTried, options.removeProvisioned);
    for (const e of errors) log(`serving: ${e}`);
    armBound(retire.waiting);
    if (caddy === "loaded" || caddy === "unchanged") keeper?.consider(projection.httpsHostnames);
    return {
      dnsWritten,
      caddy,
      caddyReport,
      problems: projection.problems,
      acks,
      retire,
      stopped,
      removal,
      removed,
      errors,
    };
  }

  function pass(): Promise<ServingPass> {
    const run = (tail ?? Promise.resolve()).catch(() => {}).then(passOnce);
    tail = run;
    return run;
  }

  // A pass when the earliest waiting container's bound passes, so it stops then rather than up to a tick later.
  let bound: ReturnType<typeof setTimeout> | undefined;
  function armBound(waiting: readonly { dueAtMs: number }[]): void {
    if (bound !== undefined) clearTimeout(bound);
    bound = undefined;
    if (waiting.length === 0 || controller.signal.aborted) return;
    const dueAtMs = Math.min(...waiting.map((w) => w.dueAtMs));
    bound = setTimeout(() => {
      bound = undefined;
      void pass().catch((error) => log(`serving: ${(error as Error).message}`));
    }, Math.max(0, dueAtMs - Date.now()) + 10);
  }

  let debounce: ReturnType<typeof setTimeout> | undefined;
  function schedule(): void {
    if (debounce !== undefined) clearTimeout(debounce);
    debounce = setTimeout(() => {
      debounce = undefined;
      void pass().catch((error) => log(`serving: ${(error as Error).message}`));
    }, options.debounceMs ?? 100);
  }

  const watching = (async () => {
    for await (const _ of store.watch({ signal: controller.signal })) schedule();
  })();
  const tick = setInterval(() => void pass().catch(() => {}), options.tickMs ?? 5_000);
  await pass();
  return {
    pass,
    loadedDials: () => [...dials],
    keeper,
    ingressState: () => ({ proxyId: ingress.proxyId, routed: [...ingress.routed] }),
    async stop(): Promise<void> {
      await keeper?.stop();
      clearInterval(tick);
      if (debounce !== undefined) clearTimeout(debounce);
      controller.abort();
      if (bound !== undefined) clearTimeout(bound);
      await watching;
      await tail?.catch(() => {});
      admin.close();
    },
  };
}
