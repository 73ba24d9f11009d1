/**
 * The daemon's link to the rest of its Cluster: its WireGuard interface, peers rebuilt from the replicated
 * `machines` rows (on every change the store reports, never by polling the table), routes to peers' subnets, the
 * firewall keeping port 51000 mesh-only, the store sync listener on the Machine Gateway, and the `SyncAgent`
 * replicating with peers at their gateways.
 *
 * The firewall (lib/mesh's) is re-checked on every tick, so a firewall reload is undone within one tick; the sync
 * and RPC listener runs only while its INPUT rules are in place (closed when they cannot be put back), and the rules
 * that let containers reach each other across the mesh under Docker's default networking are kept the same way.
 *
 * Nothing here may take the daemon down: a failure (no WireGuard, no `iptables`, a gateway address not there yet)
 * is logged once, reported as `meshError`, and retried on the next tick. The tick (default 5 s) reads the
 * interface once for handshakes and steps endpoint selection; it is Machine-local networking, not a reconciler of
 * anything another Machine owns.
 *
 * The interface outlives the daemon: `stop` leaves it up (a `wireguard-go` backing it runs in its own process
 * group), so a daemon restart keeps the mesh and the containers' traffic flowing. Only `teardown` (leaving the
 * Cluster) removes it.
 *
 * @module
 */

import {
  clusterNetworkOf,
  type CommandRunner,
  DEFAULT_CLUSTER_NETWORK,
  EndpointDriver,
  ensureContainerForwarding,
  ensureInterface,
  ensureMeshFirewall,
  hostRunner,
  managementAddress,
  type MeshPeer,
  parseMachineSubnet,
  peerAllowedIps,
  type QuarantinedPeer,
  quarantinedPeers,
  readFirewall,
  readPeers,
  removeInterface,
  removeMeshFirewall,
  setPeerEndpoint,
  setPeers,
  syncRoutes,
  usablePeers,
} from "../mesh/mod.ts";
import {
  createSyncApp,
  type Machine,
  readRemovalNotice,
  type RemovalNotice,
  removedRefusal,
  type Store,
  SyncAgent,
} from "../store/mod.ts";
import { type MeshSettings, SYNC_PORT } from "./mesh_settings.ts";
import { CallerIndex, touchesMachines } from "./mesh_rpc.ts";
import { type PeerEvidence, PeerTraffic, RefusalLog } from "./peer_evidence.ts";

/** A peer known before its row arrives: the Entry Machine to a joiner, a joiner admitted on the Entry Machine. */
export interface PeerHint {
  /** Its Machine id. */
  machineId: string;
  /** Its WireGuard public key. */
  publicKey: string;
  /** Its Machine Subnet. */
  subnet: string;
  /** Its Advertised Endpoints (may be empty: its endpoint is then learned from its handshake). */
  endpoints: string[];
}

/** Options of {@link ClusterLink}. */
export interface ClusterLinkOptions {
  /** This Machine's store. */
  store: Store;
  /** Mesh settings; `undefined` runs without WireGuard or sync (a single Machine). */
  settings?: MeshSettings;
  /** The WireGuard private key file. */
  keyPath: string;
  /** This Machine's id. */
  selfId: string;
  /** This Machine's subnet. */
  subnet: string;
  /** Peers to use until their rows arrive. */
  hints?: PeerHint[];
  /** One line per notable event. */
  log: (line: string) => void;
  /** Machine RPC on the mesh listener (paths under `/rpc/`), given the caller's address; absent: sync only. */
  rpc?: (request: Request, remoteAddress: string, signal: AbortSignal) => Response | Promise<Response>;
  /** This Machine was retired from its Cluster, as recorded earlier: it does not sync with anyone. */
  removed?: boolean;
  /** Told once when a peer's refusal proves (signed row checked) that this Machine was retired from its Cluster. */
  onRemoved?: (notice: RemovalNotice) => void;
}

interface Peer {
  machineId: string;
  publicKey: string;
  subnet: string;
  endpoints: string[];
}

/** How long a peer whose row was tombstoned stays configured, so the answer to its last request still reaches it. */
const DEPARTED_GRACE_MS = 30_000;

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The daemon's mesh and replication; see the module comment. */
export class ClusterLink {
  readonly #options: ClusterLinkOptions;
  readonly #runner: CommandRunner;
  readonly #hints = new Map<string, PeerHint>();
  readonly #evidence = new PeerTraffic();
  readonly #controller = new AbortController();
  readonly #agent: SyncAgent | undefined;
  readonly #driver: EndpointDriver | undefined;
  #interfaceUp = false;
  #server: Deno.HttpServer | undefined;
  #serverAbort: AbortController | undefined;
  readonly #closing: Promise<void>[] = [];
  #errors = new Map<string, string>();
  #queue: Promise<void> = Promise.resolve();
  #timer: ReturnType<typeof setInterval> | undefined;
  #watching: Promise<void> = Promise.resolve();
  #peers: Peer[] = [];
  readonly #departed = new Map<string, { peer: Peer; until: number }>();
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  readonly #skipped = new Map<string, string>();
  readonly #refusals = new RefusalLog((line) => this.#options.log(line));
  // The Machine each sync request came from, by its caller address: a push names its sender's site itself.
  readonly #callers = new WeakMap<Request, string>();
  // Retired Machines kept as quarantined peers, told they were removed on the mesh port and reaching nothing else.
  #quarantine: QuarantinedPeer[] = [];
  // This Machine itself was retired (its record says so, or a peer's refusal proved it): it syncs with nobody.
  #removed: boolean;
  readonly #doubted = new Set<string>();
  // What #currentPeers worked out, kept until something it reads changes: a `machines` or `retired_machines` row
  // (the store's commits say), a hint, or the peers applied. Sync rounds and requests then read no rows.
  #peerView: Peer[] | undefined;
  readonly #callerIndex = new CallerIndex(() =>
    [...this.#currentPeers(), ...[...this.#departed.values()].map((d) => d.peer)].map((p) => ({
      id: p.machineId,
      subnet: p.subnet,
      "public_key": p.publicKey,
    }))
  );
  readonly #offCommit: () => void;

  /** A stopped link; {@link ClusterLink.start} runs it. */
  constructor(options: ClusterLinkOptions) {
    this.#options = options;
    this.#removed = options.removed === true;
    const off = options.store.onCommit((event) => {
      if (touchesMachines(event)) this.#peersChanged();
    });
    this.#offCommit = () => void off();
    this.#runner = options.settings?.runner ?? hostRunner();
    for (const hint of options.hints ?? []) this.#hints.set(hint.publicKey, hint);
    const settings = options.settings;
    if (settings !== undefined) {
      this.#driver = new EndpointDriver(this.#runner, settings.interfaceName);
      this.#agent = new SyncAgent(options.store, {
        peers: () => this.peerUrls().map((p) => p.url),
        antiEntropyMs: settings.antiEntropyMs,
        // A round waiting on a partitioned peer delays the next one: keep it short, the mesh is one hop.
        timeoutMs: 3_000,
        onEvent: (event) => {
          if (event.type === "apply_done") this.#noteUrl(event.peer);
          if (event.type === "round_failed") this.#fail("sync", new Error(event.error));
          if (event.type === "refused") {
            this.#refusals.note(event.peer, event.rejected, this.#peerOfUrl(event.peer));
          }
          if (event.type === "removed") this.#learnRemoved(event.peer, event.details);
          if (event.type === "full_sync") {
            this.#options.log(
              `took a full copy of the store from ${event.peer} (behind its compaction): ${event.received} changes, ${event.removed} rows deleted there meanwhile`,
            );
          }
        },
      });
    }
  }

  /** The sync agent, when the mesh is on. */
  get agent(): SyncAgent | undefined {
    return this.#agent;
  }

  /** Replicated changes this Machine refused since it started (forged, unsigned, unadmitted, malformed). */
  get refusedChanges(): number {
    return this.#refusals.count;
  }

  /** Why the mesh is not fully working now, if it is not (interface, firewall, listener). */
  get meshError(): string | undefined {
    if (this.#options.settings === undefined) return "the mesh is off (PLOYZ_WG_INTERFACE is not set)";
    const errors = [...this.#errors].map(([what, message]) => `${what}: ${message}`);
    return errors.length === 0 ? undefined : errors.join("; ");
  }

  /** Brings the link up in the background: never throws, never blocks the caller. */
  start(): void {
    const settings = this.#options.settings;
    if (settings === undefined) return;
    this.#enqueue(() => this.#bringUp());
    this.#agent?.start();
    this.#watching = this.#watch();
    this.#timer = setInterval(() => this.#enqueue(() => this.#tick()), settings.tickMs);
  }

  /** Stops replication, the listener and the timers; leaves the interface up. */
  async stop(): Promise<void> {
    this.#offCommit();
    clearInterval(this.#timer);
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    this.#controller.abort();
    await this.#agent?.stop();
    await this.#watching;
    await this.#queue;
    await this.#server?.finished;
    await Promise.all(this.#closing);
    this.#server = undefined;
  }

  /** Removes the interface and the firewall chain (leaving the Cluster). Call after {@link ClusterLink.stop}. */
  async teardown(): Promise<boolean> {
    const settings = this.#options.settings;
    if (settings === undefined) return false;
    await removeMeshFirewall(this.#runner).catch(() => {});
    try {
      return await removeInterface(this.#runner, settings.interfaceName);
    } catch (error) {
      this.#options.log(`cannot remove interface "${settings.interfaceName}": ${messageOf(error)}`);
      return false;
    }
  }

  /** Accepts a joiner's handshakes before its row arrives; resolves once tried. */
  async admit(hint: PeerHint): Promise<{ configured: boolean; error?: string }> {
    this.#hints.set(hint.publicKey, hint);
    this.#peersChanged();
    if (this.#options.settings === undefined) return { configured: false, error: this.meshError };
    await this.#enqueue(() => this.#applyPeers());
    const error = this.#errors.get("peers") ?? this.#errors.get("interface");
    return error === undefined ? { configured: true } : { configured: false, error };
  }

  /** Whether this Machine was retired from its Cluster (recorded, or proved by a peer's refusal). */
  get removed(): boolean {
    return this.#removed;
  }

  /**
   * Sync URLs of every peer: rows other than this Machine's, then hints not yet replaced by a row. None once this
   * Machine was retired: nothing it writes goes anywhere.
   */
  peerUrls(): { machineId: string; url: string }[] {
    if (this.#removed) return [];
    return this.#currentPeers().map((p) => ({
      machineId: p.machineId,
      url: `http://${parseMachineSubnet(p.subnet).gateway}:${SYNC_PORT}`,
    }));
  }

  /** Reads the handshakes now, with the store traffic seen so far. */
  async evidence(): Promise<PeerEvidence> {
    const settings = this.#options.settings;
    const traffic = this.#evidence.traffic();
    if (settings === undefined) {
      return {
        handshakes: new Map(),
        traffic,
        received: new Map(),
        refused: new Map(),
        error: this.meshError,
      };
    }
    try {
      const reports = await readPeers(this.#runner, settings.interfaceName);
      this.#evidence.noteReceived(reports);
      return {
        handshakes: new Map(reports.map((p) => [p.publicKey, p.latestHandshake])),
        traffic,
        received: this.#evidence.received(),
        refused: this.#refusals.byMachine(),
      };
    } catch (error) {
      return {
        handshakes: new Map(),
        traffic,
        received: this.#evidence.received(),
        refused: this.#refusals.byMachine(),
        error: messageOf(error),
      };
    }
  }

  /** One anti-entropy exchange with every peer at once, bounded; which peers took part and which did not. */
  async syncWithAll(timeoutMs: number): Promise<{ delivered: string[]; failed: string[] }> {
    const agent = this.#agent;
    const peers = this.peerUrls();
    if (agent === undefined) return { delivered: [], failed: peers.map((p) => p.machineId) };
    const results = await Promise.all(peers.map(async (p) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error("timed out")), timeoutMs);
      });
      try {
        await Promise.race([agent.syncOnce(p.url), timeout]);
        return { id: p.machineId, ok: true };
      } catch (error) {
        this.#options.log(`sync with ${p.machineId} failed: ${messageOf(error)}`);
        return { id: p.machineId, ok: false };
      } finally {
        clearTimeout(timer);
      }
    }));
    return {
      delivered: results.filter((r) => r.ok).map((r) => r.id),
      failed: results.filter((r) => !r.ok).map((r) => r.id),
    };
  }

  #enqueue(task: () => Promise<void>): Promise<void> {
    const run = this.#queue.then(async () => {
      if (this.#controller.signal.aborted) return;
      try {
        await task();
      } catch (error) {
        this.#fail("link", error);
      }
    });
    this.#queue = run;
    return run;
  }

  #fail(what: string, error: unknown): void {
    const message = messageOf(error);
    if (this.#errors.get(what) !== message) this.#options.log(`mesh: ${what}: ${message}`);
    this.#errors.set(what, message);
  }

  #ok(what: string): void {
    if (this.#errors.delete(what)) this.#options.log(`mesh: ${what}: working again`);
  }

  async #bringUp(): Promise<void> {
    const settings = this.#options.settings!;
    const publicKey = this.#options.store.machines.get(this.#options.selfId)?.public_key;
    try {
      const made = await ensureInterface(this.#runner, {
        name: settings.interfaceName,
        privateKeyPath: this.#options.keyPath,
        listenPort: settings.listenPort,
        addresses: publicKey === undefined ? [] : [`${managementAddress(publicKey)}/128`],
      });
      if (made.created) {
        this.#options.log(`mesh: created interface "${settings.interfaceName}" (${made.backend})`);
      }
      this.#interfaceUp = true;
      this.#ok("interface");
    } catch (error) {
      this.#interfaceUp = false;
      this.#fail("interface", error);
      return;
    }
    const guarded = await this.#ensureFirewall();
    await this.#applyPeers();
    if (guarded) this.#listen();
  }

  /** Checks (and puts back) the firewall; false, with the listener closed, when the mesh port is not guarded. */
  async #ensureFirewall(): Promise<boolean> {
    const settings = this.#options.settings!;
    let guarded = false;
    // Each table read once for both checks below; only a part found out of place costs more commands.
    const snapshot = await readFirewall(this.#runner);
    try {
      const repaired = await ensureMeshFirewall(this.#runner, {
        interfaceName: settings.interfaceName,
        ports: [SYNC_PORT],
        quarantined: this.#quarantine.map((q) => q.address),
      }, snapshot);
      if (repaired.length > 0 && this.#server !== undefined) {
        this.#options.log(`mesh: firewall: put back ${repaired.join(", ")}`);
      }
      guarded = true;
      this.#ok("firewall");
    } catch (error) {
      this.#fail("firewall", error);
      this.#closeListener();
    }
    try {
      const repaired = await ensureContainerForwarding(this.#runner, {
        interfaceName: settings.interfaceName,
        subnet: this.#options.subnet,
        // A Cluster founded on another network (`machine init --subnet`) forwards and exempts from masquerade
        // its own network, not the default one.
        clusterNetwork: clusterNetworkOf(this.#options.subnet, settings.clusterNetwork),
        quarantined: this.#quarantine.map((q) => q.address),
      }, snapshot);
      if (repaired.length > 0 && this.#server !== undefined) {
        this.#options.log(`mesh: container forwarding: put back ${repaired.join(", ")}`);
      }
      this.#ok("container forwarding");
    } catch (error) {
      this.#fail("container forwarding", error);
    }
    return guarded;
  }

  #closeListener(): void {
    if (this.#server === undefined) return;
    this.#serverAbort?.abort();
    this.#closing.push(this.#server.finished);
    this.#server = undefined;
    this.#options.log(`mesh: listener closed: the firewall does not guard port ${SYNC_PORT}`);
  }

  #listen(): void {
    if (this.#server !== undefined || this.#controller.signal.aborted) return;
    const gateway = parseMachineSubnet(this.#options.subnet).gateway;
    const app = createSyncApp(this.#options.store, {
      onRejected: (site, rejected, request) =>
        this.#refusals.note(`Machine "${site.slice(0, 64)}"`, rejected, this.#callers.get(request)),
    });
    const abort = new AbortController();
    try {
      this.#server = Deno.serve({
        hostname: gateway,
        port: SYNC_PORT,
        signal: AbortSignal.any([this.#controller.signal, abort.signal]),
        onListen: () => {},
      }, (request, info) => {
        const remote = (info.remoteAddr as Deno.NetAddr).hostname;
        this.#noteAddress(remote);
        const quarantined = this.#quarantine.find((q) => q.address === `${remote}/32`);
        const path = new URL(request.url).pathname;
        if (quarantined !== undefined) {
          return this.#refuseRemoved(quarantined.machineId, path.startsWith("/rpc/"));
        }
        const rpc = this.#options.rpc;
        // Store sync is answered only to the Cluster's Machines, by the same caller check as Machine RPC.
        const caller = path.startsWith("/rpc/") ? undefined : this.#peerCaller(remote);
        if (!path.startsWith("/rpc/") && caller === undefined) {
          return Response.json({
            code: "unauthenticated",
            message: `Store sync is served only to this Cluster's Machines: "${remote}" is not one`,
          }, { status: 401 });
        }
        if (rpc !== undefined && path.startsWith("/rpc/")) {
          // Ends follows and relays once the answer is delivered or the caller went away.
          const call = new AbortController();
          info.completed.then(() => call.abort(), () => call.abort());
          return rpc(request, remote, call.signal);
        }
        this.#callers.set(request, caller!);
        return app.fetch(request);
      });
      this.#serverAbort = abort;
      this.#ok("listener");
      this.#options.log(
        `mesh: store sync${
          this.#options.rpc === undefined ? "" : " and Machine RPC"
        } listening on ${gateway}:${SYNC_PORT}`,
      );
    } catch (error) {
      this.#fail("listener", new Error(`cannot listen on ${gateway}:${SYNC_PORT}: ${messageOf(error)}`));
    }
  }

  // Every request of a retired Machine gets one answer: who retired it and when, with the signed row.
  // Machine RPC wraps its error body in `error`; store sync does not.
  async #refuseRemoved(machineId: string, rpc: boolean): Promise<Response> {
    const store = this.#options.store;
    const refusal = (store.closed ? undefined : await removedRefusal(store, machineId)) ??
      { code: "unauthenticated", message: `Machine "${machineId}" was removed from this Cluster` };
    return Response.json(rpc ? { error: refusal } : refusal, { status: 401 });
  }

  // A peer says this Machine was retired: believed only when the signed row checks out (see removal_notice.ts).
  #learnRemoved(peer: string, details: Record<string, unknown>): void {
    if (this.#removed || this.#options.store.closed) return;
    const notice = readRemovalNotice(this.#options.store, details);
    if ("reason" in notice) {
      if (this.#doubted.size < 64 && !this.#doubted.has(notice.reason)) {
        this.#doubted.add(notice.reason);
        this.#options.log(`mesh: ${peer} refused this Machine as removed, not believed: ${notice.reason}`);
      }
      return;
    }
    this.#removed = true;
    this.#options.log(
      `mesh: this Machine was removed from its Cluster by Machine "${
        notice.retiredByName ?? notice.retiredBy
      }" at ${
        notice.retiredAt ?? "an unknown time"
      } ("machine rm --gone"), as ${peer} proved: it no longer syncs`,
    );
    this.#options.onRemoved?.(notice);
  }

  async #tick(): Promise<void> {
    if (!this.#interfaceUp) {
      await this.#bringUp();
      return;
    }
    if (await this.#ensureFirewall() && this.#server === undefined) this.#listen();
    try {
      // One read of the interface serves both the traffic evidence and endpoint selection.
      const reports = await readPeers(this.#runner, this.#options.settings!.interfaceName);
      this.#evidence.noteReceived(reports);
      await this.#driver?.tick(Date.now(), reports);
    } catch (error) {
      // The interface vanished (deleted by hand, wireguard-go killed): make it again on the next tick.
      this.#interfaceUp = false;
      this.#fail("interface", error);
    }
  }

  async #watch(): Promise<void> {
    const store = this.#options.store;
    try {
      for await (const changes of store.watch({ signal: this.#controller.signal })) {
        if (changes.tables.machines !== undefined || changes.tables.retired_machines !== undefined) {
          void this.#enqueue(() => this.#applyPeers());
        }
      }
    } catch (error) {
      if (!this.#controller.signal.aborted && !store.closed) this.#fail("watch", error);
    }
  }

  // Rows (then hints not yet replaced by a row) this Machine can use as peers. A row it cannot use (no key, a
  // subnet that is not a /24 inside the Cluster network, or overlapping its own or another's) is skipped and
  // reported once per reason: it never takes over a route or stops the others from being configured.
  #currentPeers(): Peer[] {
    this.#peerView ??= this.#readPeers();
    return this.#peerView;
  }

  // Something #readPeers reads changed: the next question works the peers out again.
  #peersChanged(): void {
    this.#peerView = undefined;
    this.#callerIndex.invalidate();
  }

  #readPeers(): Peer[] {
    // A retired Machine is no peer: its handshakes are no longer accepted (machine rm --gone).
    const rows: Machine[] = this.#options.store.closed ? [] : this.#options.store.liveMachines();
    const keys = new Set(rows.filter((r) => r.id !== this.#options.selfId).map((r) => r.public_key));
    for (const key of this.#hints.keys()) if (keys.has(key)) this.#hints.delete(key);
    const verdict = usablePeers([
      ...rows.map((r) => ({
        machineId: r.id,
        publicKey: r.public_key,
        subnet: r.subnet,
        endpoints: r.endpoints,
      })),
      ...this.#hints.values(),
    ], {
      selfId: this.#options.selfId,
      ownSubnet: this.#options.subnet,
      clusterNetwork: clusterNetworkOf(
        this.#options.subnet,
        this.#options.settings?.clusterNetwork ?? DEFAULT_CLUSTER_NETWORK,
      ),
      incumbents: new Map(this.#peers.map((p) => [p.subnet, p.machineId])),
    });
    const seen = new Set<string>();
    for (const { machineId, reason } of verdict.skipped) {
      seen.add(machineId);
      if (this.#skipped.get(machineId) === reason) continue;
      this.#skipped.set(machineId, reason);
      this.#options.log(`mesh: skipping Machine "${machineId}" as a peer: ${reason}`);
    }
    for (const id of this.#skipped.keys()) if (!seen.has(id)) this.#skipped.delete(id);
    return verdict.peers;
  }

  // The Machine id a sync caller's address belongs to, when it is a current (or just departed) peer.
  #peerCaller(address: string): string | undefined {
    return this.#callerIndex.caller(address, this.#options.selfId)?.id;
  }

  #peerOfUrl(url: string): string | undefined {
    try {
      return this.#peerCaller(new URL(url).hostname);
    } catch {
      return undefined;
    }
  }

  async #applyPeers(): Promise<void> {
    const settings = this.#options.settings;
    if (settings === undefined || !this.#interfaceUp) return;
    const live = this.#currentPeers();
    const now = Date.now();
    // A Machine that left (its row tombstoned) keeps its peer entry a little longer: the tombstone reached us
    // inside its own request, and our answer still has to travel back to it. A retired Machine is gone: no grace.
    const retired = this.#options.store.closed ? new Set<string>() : this.#options.store.retiredIds();
    for (const [key, d] of this.#departed) if (retired.has(d.peer.machineId)) this.#departed.delete(key);
    for (const p of this.#peers) {
      if (live.some((l) => l.publicKey === p.publicKey) || this.#departed.has(p.publicKey)) continue;
      if (retired.has(p.machineId)) continue;
      this.#departed.set(p.publicKey, { peer: p, until: now + DEPARTED_GRACE_MS });
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        void this.#enqueue(() => this.#applyPeers());
      }, DEPARTED_GRACE_MS + 100);
      this.#timers.add(timer);
    }
    for (const [key, d] of this.#departed) {
      if (d.until <= now || live.some((l) => l.publicKey === key)) this.#departed.delete(key);
    }
    this.#peers = live;
    // The incumbents and the departed peers #readPeers and #peerCaller read may have moved.
    this.#peersChanged();
    const peers = [...live, ...[...this.#departed.values()].map((d) => d.peer)];
    const wanted: MeshPeer[] = peers.map((p) => ({
      publicKey: p.publicKey,
      endpoints: p.endpoints,
      allowedIps: peerAllowedIps(p.subnet, p.publicKey),
    }));
    // Retired Machines come back as quarantined peers, but only once the firewall holds them to the mesh port.
    const quarantine = this.#quarantined(new Set(wanted.map((p) => p.publicKey)));
    const before = this.#quarantine.map((q) => q.address).join(",");
    this.#quarantine = quarantine;
    if (quarantine.map((q) => q.address).join(",") !== before && !(await this.#ensureFirewall())) {
      this.#quarantine = [];
    }
    for (const q of this.#quarantine) {
      // No endpoint and no keepalive: this Machine never starts a conversation with it, only answers.
      wanted.push({ publicKey: q.publicKey, endpoints: [], allowedIps: [q.address], keepaliveSeconds: 0 });
    }
    try {
      await setPeers(this.#runner, settings.interfaceName, wanted);
      const destinations = [...new Set(wanted.flatMap((p) => p.allowedIps))];
      await syncRoutes(this.#runner, settings.interfaceName, destinations, {
        src: parseMachineSubnet(this.#options.subnet).gateway,
      });
      const changes = this.#driver?.setCandidates(peers) ?? [];
      for (const change of changes) {
        await setPeerEndpoint(this.#runner, settings.interfaceName, change.publicKey, change.endpoint);
      }
      this.#ok("peers");
    } catch (error) {
      this.#fail("peers", error);
    }
  }

  #quarantined(liveKeys: ReadonlySet<string>): QuarantinedPeer[] {
    const store = this.#options.store;
    if (store.closed) return [];
    const candidates = store.retiredMachines.list().flatMap((r) => {
      const row = store.machines.get(r.machine_id);
      return row === undefined ? [] : [{
        machineId: row.id,
        publicKey: row.public_key,
        subnet: row.subnet ?? r.subnet,
      }];
    });
    return quarantinedPeers(candidates, {
      selfId: this.#options.selfId,
      clusterNetwork: clusterNetworkOf(
        this.#options.subnet,
        this.#options.settings?.clusterNetwork ?? DEFAULT_CLUSTER_NETWORK,
      ),
      liveKeys,
      ownKey: store.machines.get(this.#options.selfId)?.public_key,
    });
  }

  #noteUrl(url: string): void {
    try {
      this.#noteAddress(new URL(url).hostname);
    } catch {
      // not a URL of ours
    }
  }

  #noteAddress(address: string): void {
    this.#evidence.noteAddress(address, () => this.#peers.length > 0 ? this.#peers : this.#currentPeers());
  }
}
