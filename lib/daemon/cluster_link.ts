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
  type CommandRunner,
  EndpointDriver,
  ensureInterface,
  hostRunner,
  managementAddress,
  type MeshPeer,
  parseMachineSubnet,
  peerAllowedIps,
  type QuarantinedPeer,
  readPeers,
  removeInterface,
  removeMeshFirewall,
  setPeerEndpoint,
  setPeers,
  syncRoutes,
} from "../mesh/mod.ts";
import { type RemovalNotice, type Store, SyncAgent } from "../store/mod.ts";
import { messageOf } from "../util/mod.ts";
import { ensureLinkFirewall } from "./cluster_link_firewall.ts";
import { LinkHealth } from "./cluster_link_health.ts";
import { MeshListener, type MeshRpc } from "./cluster_link_listener.ts";
import { DEPARTED_GRACE_MS, LinkPeers } from "./cluster_link_peers.ts";
import { SelfRemoval } from "./cluster_link_removal.ts";
import { type MeshSettings, SYNC_PORT } from "./mesh_settings.ts";
import { touchesMachines } from "./mesh_rpc.ts";
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
  rpc?: MeshRpc;
  /** This Machine was retired from its Cluster, as recorded earlier: it does not sync with anyone. */
  removed?: boolean;
  /** Told once when a peer's refusal proves (signed row checked) that this Machine was retired from its Cluster. */
  onRemoved?: (notice: RemovalNotice) => void;
}

/** The daemon's mesh and replication; see the module comment. */
export class ClusterLink {
  readonly #options: ClusterLinkOptions;
  readonly #runner: CommandRunner;
  readonly #health: LinkHealth;
  readonly #peers: LinkPeers;
  readonly #listener: MeshListener;
  readonly #evidence = new PeerTraffic();
  readonly #controller = new AbortController();
  readonly #agent: SyncAgent | undefined;
  readonly #driver: EndpointDriver | undefined;
  #interfaceUp = false;
  #queue: Promise<void> = Promise.resolve();
  #timer: ReturnType<typeof setInterval> | undefined;
  #watching: Promise<void> = Promise.resolve();
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  readonly #refusals: RefusalLog;
  // Retired Machines kept as quarantined peers, told they were removed on the mesh port and reaching nothing else.
  #quarantine: QuarantinedPeer[] = [];
  // This Machine itself was retired (its record says so, or a peer's refusal proved it): it syncs with nobody.
  readonly #self: SelfRemoval;
  readonly #offCommit: () => void;

  /** A stopped link; {@link ClusterLink.start} runs it. */
  constructor(options: ClusterLinkOptions) {
    this.#options = options;
    this.#self = new SelfRemoval(options.store, options.removed === true, options.log);
    this.#health = new LinkHealth(options.log);
    this.#refusals = new RefusalLog(options.log);
    this.#peers = new LinkPeers({
      store: options.store,
      selfId: options.selfId,
      subnet: options.subnet,
      clusterNetwork: options.settings?.clusterNetwork,
      hints: options.hints,
      log: options.log,
    });
    this.#listener = new MeshListener({
      store: options.store,
      subnet: options.subnet,
      rpc: options.rpc,
      signal: this.#controller.signal,
      health: this.#health,
      refusals: this.#refusals,
      log: options.log,
      quarantine: () => this.#quarantine,
      caller: (address) => this.#peers.caller(address),
      noteAddress: (address) => this.#noteAddress(address),
    });
    const off = options.store.onCommit((event) => {
      if (touchesMachines(event)) this.#peers.changed();
    });
    this.#offCommit = () => void off();
    this.#runner = options.settings?.runner ?? hostRunner();
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
          if (event.type === "round_failed") this.#health.fail("sync", new Error(event.error));
          if (event.type === "refused") {
            this.#refusals.note(event.peer, event.rejected, this.#peers.callerOfUrl(event.peer));
          }
          if (event.type === "removed") {
            const notice = this.#self.learn(event.peer, event.details);
            if (notice !== undefined) this.#options.onRemoved?.(notice);
          }
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
    return this.#health.summary();
  }

  /**
   * Brings the link up in the background: never throws, never blocks the caller. The answer resolves (never
   * rejects) once the first bring-up was tried: the interface, the firewall, the peers and the listener.
   */
  start(): Promise<void> {
    const settings = this.#options.settings;
    if (settings === undefined) return Promise.resolve();
    const broughtUp = this.#enqueue(() => this.#bringUp());
    this.#agent?.start();
    this.#watching = this.#watch();
    this.#timer = setInterval(() => this.#enqueue(() => this.#tick()), settings.tickMs);
    return broughtUp;
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
    await this.#listener.finished();
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
    this.#peers.hint(hint);
    if (this.#options.settings === undefined) return { configured: false, error: this.meshError };
    await this.#enqueue(() => this.#applyPeers());
    const error = this.#health.error("peers") ?? this.#health.error("interface");
    return error === undefined ? { configured: true } : { configured: false, error };
  }

  /** Whether this Machine was retired from its Cluster (recorded, or proved by a peer's refusal). */
  get removed(): boolean {
    return this.#self.removed;
  }

  /**
   * Sync URLs of every peer: rows other than this Machine's, then hints not yet replaced by a row. None once this
   * Machine was retired: nothing it writes goes anywhere.
   */
  peerUrls(): { machineId: string; url: string }[] {
    if (this.#self.removed) return [];
    return this.#peers.current().map((p) => ({
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
    let handshakes = new Map<string, number | undefined>();
    let error: string | undefined;
    try {
      const reports = await readPeers(this.#runner, settings.interfaceName);
      this.#evidence.noteReceived(reports);
      handshakes = new Map(reports.map((p) => [p.publicKey, p.latestHandshake]));
    } catch (thrown) {
      error = messageOf(thrown);
    }
    const received = this.#evidence.received();
    const refused = this.#refusals.byMachine();
    return error === undefined
      ? { handshakes, traffic, received, refused }
      : { handshakes, traffic, received, refused, error };
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
        this.#health.fail("link", error);
      }
    });
    this.#queue = run;
    return run;
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
      this.#health.ok("interface");
    } catch (error) {
      this.#interfaceUp = false;
      this.#health.fail("interface", error);
      return;
    }
    const guarded = await this.#ensureFirewall();
    await this.#applyPeers();
    if (guarded) this.#listener.open();
  }

  /** Checks (and puts back) the firewall; false, with the listener closed, when the mesh port is not guarded. */
  #ensureFirewall(): Promise<boolean> {
    const settings = this.#options.settings!;
    return ensureLinkFirewall(this.#runner, {
      interfaceName: settings.interfaceName,
      subnet: this.#options.subnet,
      clusterNetwork: settings.clusterNetwork,
      quarantined: this.#quarantine.map((q) => q.address),
    }, {
      health: this.#health,
      log: this.#options.log,
      listening: () => this.#listener.listening,
      unguarded: () => this.#listener.close(),
    });
  }

  async #tick(): Promise<void> {
    if (!this.#interfaceUp) {
      await this.#bringUp();
      return;
    }
    if (await this.#ensureFirewall() && !this.#listener.listening) this.#listener.open();
    try {
      // One read of the interface serves both the traffic evidence and endpoint selection.
      const reports = await readPeers(this.#runner, this.#options.settings!.interfaceName);
      this.#evidence.noteReceived(reports);
      await this.#driver?.tick(Date.now(), reports);
    } catch (error) {
      // The interface vanished (deleted by hand, wireguard-go killed): make it again on the next tick.
      this.#interfaceUp = false;
      this.#health.fail("interface", error);
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
      if (!this.#controller.signal.aborted && !store.closed) this.#health.fail("watch", error);
    }
  }

  async #applyPeers(): Promise<void> {
    const settings = this.#options.settings;
    if (settings === undefined || !this.#interfaceUp) return;
    const { peers, newlyDeparted } = this.#peers.apply(Date.now());
    // A departed peer's grace ends on its own: its entry goes at the next apply after it.
    for (const _ of newlyDeparted) {
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        void this.#enqueue(() => this.#applyPeers());
      }, DEPARTED_GRACE_MS + 100);
      this.#timers.add(timer);
    }
    const wanted: MeshPeer[] = peers.map((p) => ({
      publicKey: p.publicKey,
      endpoints: p.endpoints,
      allowedIps: peerAllowedIps(p.subnet, p.publicKey),
    }));
    // Retired Machines come back as quarantined peers, but only once the firewall holds them to the mesh port.
    const quarantine = this.#peers.quarantined(new Set(wanted.map((p) => p.publicKey)));
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
      this.#health.ok("peers");
    } catch (error) {
      this.#health.fail("peers", error);
    }
  }

  #noteUrl(url: string): void {
    try {
      this.#noteAddress(new URL(url).hostname);
    } catch {
      // not a URL of ours
    }
  }

  #noteAddress(address: string): void {
    this.#evidence.noteAddress(address, () => this.#peers.applied());
  }
}
