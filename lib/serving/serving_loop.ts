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
import type { Store } from "../store/mod.ts";
import { challengeAckPointer, challengeConfirmation } from "./challenge_acks.ts";
import { type CaddyAdmin, openCaddyAdmin } from "./caddy_admin.ts";
import type { AcmeSettings } from "./acme_issuer.ts";
import {
  type CertificateKeeper,
  type CertificateKeeperOptions,
  startCertificateKeeper,
} from "./certificate_keeper.ts";
import { dnsUpstreamsFromEnv } from "./dns_projection.ts";
import { DnsSpecWriter } from "./dns_writer.ts";
import { caddyAdminSocket, caddyRunDir } from "./ingress_spec.ts";
import type { IngressState } from "./ingress_load.ts";
import { type PassHost, PassMemory, runPass, type ServingPass } from "./serving_pass.ts";

export type { IngressState } from "./ingress_load.ts";
export type { ServingPass } from "./serving_pass.ts";

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
  const { store } = options;
  const log = options.log ?? (() => {});
  await Deno.mkdir(caddyRunDir(options.runDir), { recursive: true });
  const admin = options.admin?.() ?? openCaddyAdmin(caddyAdminSocket(options.runDir));
  const down = (): ReadonlySet<string> => options.down?.() ?? new Set();
  const controller = new AbortController();
  const memory = new PassMemory();
  const host: PassHost = {
    store,
    engine: options.engine,
    machineId: store.siteId,
    admin,
    writer: new DnsSpecWriter(options.dnsPath ?? `${options.runDir}/dns.json`),
    dnsListen: options.dnsListen,
    dnsUpstreams: options.dnsUpstreams ?? dnsUpstreamsFromEnv(),
    down,
    retireAfterMs: options.retireAfterMs,
    removeProvisioned: options.removeProvisioned,
    signal: controller.signal,
    log,
  };
  const passes = new PassScheduler(async () => {
    const done = await runPass(host, memory);
    passes.armBound([...done.retire.waiting, ...done.held]);
    return done;
  }, { debounceMs: options.debounceMs ?? 100, signal: controller.signal, log });
  host.keeper = options.acme === undefined ? undefined : startCertificateKeeper({
    store,
    settings: options.acme,
    down,
    confirmation: (token) =>
      challengeConfirmation({
        token,
        machines: store.liveMachines(),
        down: down(),
        containers: store.liveContainers(),
        acks: store.acks.list({ pointer: challengeAckPointer(token) }),
      }),
    kick: () => passes.schedule(),
    log,
    ...options.keeper,
  });
  const watching = (async () => {
    for await (const _ of store.watch({ signal: controller.signal })) passes.schedule();
  })();
  const tick = setInterval(() => void passes.pass().catch(() => {}), options.tickMs ?? 5_000);
  async function stop(): Promise<void> {
    await host.keeper?.stop();
    clearInterval(tick);
    controller.abort();
    passes.stop();
    await watching;
    await passes.idle();
    admin.close();
  }
  try {
    await passes.pass();
  } catch (error) {
    // A loop that cannot make its first pass is not started: nothing of it is left running.
    await stop();
    throw error;
  }
  return {
    pass: () => passes.pass(),
    loadedDials: () => [...memory.loaded.dials],
    keeper: host.keeper,
    ingressState: () => ({
      proxyId: memory.loaded.ingress.proxyId,
      routed: [...memory.loaded.ingress.routed],
    }),
    stop,
  };
}

/**
 * When passes run: one at a time, in order; after a quiet time following a change; and when the earliest waiting
 * container's retire bound passes, so it stops then rather than up to a tick later.
 */
class PassScheduler {
  readonly #run: () => Promise<ServingPass>;
  readonly #options: { debounceMs: number; signal: AbortSignal; log: (line: string) => void };
  #tail: Promise<ServingPass> | undefined;
  #debounce: ReturnType<typeof setTimeout> | undefined;
  #bound: ReturnType<typeof setTimeout> | undefined;

  constructor(
    run: () => Promise<ServingPass>,
    options: { debounceMs: number; signal: AbortSignal; log: (line: string) => void },
  ) {
    this.#run = run;
    this.#options = options;
  }

  /** Runs a pass after any running one. */
  pass(): Promise<ServingPass> {
    const run = (this.#tail ?? Promise.resolve()).catch(() => {}).then(this.#run);
    this.#tail = run;
    return run;
  }

  /** A pass once changes stop arriving for the debounce time. */
  schedule(): void {
    if (this.#debounce !== undefined) clearTimeout(this.#debounce);
    this.#debounce = setTimeout(() => {
      this.#debounce = undefined;
      this.#passLogged();
    }, this.#options.debounceMs);
  }

  /** A pass when the earliest of these bounds passes (replacing the one armed before). */
  armBound(waiting: readonly { dueAtMs: number }[]): void {
    if (this.#bound !== undefined) clearTimeout(this.#bound);
    this.#bound = undefined;
    if (waiting.length === 0 || this.#options.signal.aborted) return;
    const dueAtMs = Math.min(...waiting.map((w) => w.dueAtMs));
    this.#bound = setTimeout(() => {
      this.#bound = undefined;
      this.#passLogged();
    }, Math.max(0, dueAtMs - Date.now()) + 10);
  }

  /** Clears the pending timers; a running pass goes on. */
  stop(): void {
    if (this.#debounce !== undefined) clearTimeout(this.#debounce);
    if (this.#bound !== undefined) clearTimeout(this.#bound);
  }

  /** Resolves once the running pass (if any) ended. */
  async idle(): Promise<void> {
    await this.#tail?.catch(() => {});
  }

  #passLogged(): void {
    void this.pass().catch((error) => this.#options.log(`serving: ${(error as Error).message}`));
  }
}
