/**
 * The Cluster lifecycle of one Machine, as a small state machine over its record's `phase`:
 *
 * ```
 * uninitialized --found--> participating
 * uninitialized --join---> joining --caught up--> participating
 * joining | participating --leave--> uninitialized
 * ```
 *
 * While the Machine is in a Cluster (joining or participating) it holds the replicated store, the publisher and
 * the Cluster link; serving infrastructure starts once it participates. Found, join and leave run one at a time
 * through one queue, so two concurrent calls never found two Clusters or leave half-joined. Each transition writes
 * the record durably before it counts.
 *
 * @module
 */

import type {
  ConfigureMachineRequest,
  JoinRequest,
  LeaveRequest,
  LeaveResponse,
  ListMachinesResponse,
  RetireMachineRequest,
  RetireMachineResponse,
} from "../rpc/mod.ts";
import { RpcError } from "../rpc/mod.ts";
import type { RemovalNotice, Store } from "../store/mod.ts";
import { messageOf, sleep } from "../util/mod.ts";
import type { PeerHint } from "./cluster_link.ts";
import { mintId } from "./ids.ts";
import { configuredRecord, type LocalMachine, writeMachineFile } from "./machine_file.ts";
import { listMachines } from "./membership.ts";
import { bootstrapHints, checkFound, checkJoin, checkLeave } from "./cluster_entry.ts";
import type { FoundRequest, LifecycleDeps, LinkPort, Stoppable } from "./cluster_lifecycle_deps.ts";
import {
  leftRecord,
  refuseRetired,
  removedRecord,
  removeStoreFiles,
  setStoreAside,
  storePath,
} from "./cluster_records.ts";
import { retireGoneMachine } from "./retire_machine.ts";
import { type MachineSubnet, parseSubnet } from "./subnet.ts";

/** The pause after a joiner's first failed catch-up round; each next one doubles, up to `catchUpPauseMs`. */
const FIRST_CATCH_UP_PAUSE_MS = 50;

/** The Cluster lifecycle of this Machine; see the module doc for its states. */
export class ClusterLifecycle<S extends Stoppable = Stoppable> {
  readonly #deps: LifecycleDeps<S>;
  readonly #stopping = new AbortController();
  #record: LocalMachine;
  #store: Store | undefined;
  #link: LinkPort | undefined;
  #publisher: (Stoppable & { rescan(): Promise<void> }) | undefined;
  #serving: S | undefined;
  #servingStart: Promise<void> | undefined;
  #catchingUp: Promise<void> | undefined;
  #networkCheck: Promise<unknown> = Promise.resolve();
  #networkProblem: string | undefined;
  // Found, join and leave run one at a time.
  #queue: Promise<unknown> = Promise.resolve();

  /** Starts from the record as read at boot; call {@link resume} to reopen a Cluster it is in. */
  constructor(record: LocalMachine, deps: LifecycleDeps<S>) {
    this.#record = record;
    this.#deps = deps;
  }

  /** The local record as it is now. */
  get record(): LocalMachine {
    return this.#record;
  }

  /** The replicated store while the Machine is in a Cluster. */
  get store(): Store | undefined {
    return this.#store === undefined || this.#store.closed ? undefined : this.#store;
  }

  /** The Cluster link while the Machine is in a Cluster. */
  get link(): LinkPort | undefined {
    return this.#link;
  }

  /** The serving runtime while the Machine serves. */
  get serving(): S | undefined {
    return this.#serving;
  }

  /** Reopens the store and restarts what runs in a Cluster, when the record says the Machine is in one. */
  resume(): void {
    const record = this.#record;
    if ((record.phase !== "participating" && record.phase !== "joining") || record.cluster_id === undefined) {
      return;
    }
    this.#participate(this.#deps.openStore(storePath(this.#deps.dataDir), record.id, record.cluster_id));
  }

  /** Founds a Cluster here; answers the one already founded when nothing asked differs from it. */
  found(req: FoundRequest): Promise<LocalMachine> {
    return this.#serialized(() => this.#found(req));
  }

  /** Joins the Cluster the request names, through its bootstrap peers; the Machine is `joining` until caught up. */
  join(req: JoinRequest): Promise<LocalMachine> {
    return this.#serialized(() => this.#join(req));
  }

  /** Leaves the Cluster: removes this Machine's containers and rows, delivers the tombstone, keeps the old store. */
  leave(req: LeaveRequest): Promise<LeaveResponse> {
    return this.#serialized(() => this.#leave(req));
  }

  /**
   * Changes this Machine's own Labels and acceptance flags: checked, written durably to the record, then
   * published in its row. Nothing running is touched (labels never evict).
   */
  configure(req: ConfigureMachineRequest): Promise<LocalMachine> {
    return this.#serialized(async () => {
      const next = configuredRecord(this.#record, req);
      await writeMachineFile(this.#deps.dataDir, next);
      this.#record = next;
      this.#publish();
      return next;
    });
  }

  /**
   * Records, durably, that a peer proved this Machine was retired from its Cluster: from now on it syncs with
   * nobody (the link already stopped), and `machine ls` on it says who removed it and when. Its containers are left
   * as they are until it leaves the Cluster (`machine rm` on it); its id is never admitted again.
   */
  noteRemoved(notice: RemovalNotice): Promise<void> {
    return this.#serialized(async () => {
      if (this.#record.removed !== undefined || this.#record.phase === "uninitialized") return;
      const next = removedRecord(this.#record, notice, new Date());
      await writeMachineFile(this.#deps.dataDir, next);
      this.#record = next;
    });
  }

  /**
   * Marks a gone Machine retired (`machine rm --gone`): a name-keyed row every Machine's readers honour. The checks
   * (not itself, quiet and unanswering, Data Loss confirmed) are retire_machine.ts.
   */
  async retire(req: RetireMachineRequest): Promise<RetireMachineResponse> {
    const store = this.participatingStore("retire a Machine");
    return await retireGoneMachine({
      store,
      self: this.#record,
      membership: () => this.membership(),
      // Read at call time: the probe may be swapped after construction.
      probePeer: (machineId, signal) => this.#deps.probePeer?.(machineId, signal) ?? Promise.resolve(false),
      quietMs: this.#deps.thresholds.storeUpMs,
      log: (line) => this.#deps.log(line),
    }, req);
  }

  /** The store, or a `conflict` naming the phase when the Machine does not participate. */
  participatingStore(action: string): Store {
    const store = this.store;
    if (store === undefined || this.#record.phase !== "participating") {
      throw new RpcError(
        "conflict",
        `Cannot ${action} on Machine "${this.#record.name}": it is ${this.#record.phase}`,
        {
          details: { phase: this.#record.phase },
        },
      );
    }
    return store;
  }

  /** The Machines this one knows, each with its membership as judged from here. */
  async membership(): Promise<ListMachinesResponse> {
    const store = this.store;
    const link = this.#link;
    const evidence = link === undefined
      ? { handshakes: new Map(), traffic: new Map(), received: new Map() }
      : await link.evidence();
    const members = store === undefined ? [] : store.members.list();
    const removed = this.#record.removed;
    return {
      ...(removed === undefined ? {} : { removed }),
      ...listMachines({
        self: { id: this.#record.id, name: this.#record.name },
        rows: store === undefined ? [] : store.liveMachines(),
        evidence,
        thresholds: this.#deps.thresholds,
        now: Date.now(),
        meshError: link === undefined
          ? "this Machine is not in a Cluster"
          : [link.meshError, this.#networkProblem].filter((e) => e !== undefined).join("; ") || undefined,
      }),
      members: members.map((m) => ({ id: m.machine_id, "signing_key": m.signing_key })),
    };
  }

  /** Machines this Machine observes as Down, from its own membership judgement. */
  async downSet(): Promise<ReadonlySet<string>> {
    if (this.store === undefined || this.#link === undefined) return new Set();
    const listed = await this.membership();
    return new Set(listed.machines.filter((m) => m.membership === "down").map((m) => m.id));
  }

  /**
   * Admits a joiner: records its signing key (when given) so every member accepts its changes, and configures it
   * as a peer on the link. Only a participating Machine admits.
   */
  async admit(hint: PeerHint, signingKey?: string): Promise<{ configured: boolean; error?: string }> {
    if (this.#link === undefined || this.#record.phase !== "participating") {
      throw new RpcError(
        "conflict",
        `Machine "${this.#record.name}" cannot admit a peer: it is ${this.#record.phase}`,
        {
          details: { phase: this.#record.phase },
        },
      );
    }
    refuseRetired(hint.machineId, this.store?.retiredMachines.get(hint.machineId));
    if (signingKey !== undefined) this.store?.admit(hint.machineId, signingKey);
    return await this.#link.admit(hint);
  }

  /** Rescans this Machine's containers into the store now (nothing outside a Cluster). */
  rescan(): Promise<void> {
    return this.#publisher?.rescan() ?? Promise.resolve();
  }

  /** Stops what runs in the Cluster and closes the store; the record and the WireGuard interface stay. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    await this.#stopServing();
    await this.#publisher?.stop();
    await this.#link?.stop();
    await this.#catchingUp;
    await this.#networkCheck;
    this.#store?.close();
  }

  #serialized<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task);
    this.#queue = run.catch(() => {});
    return run;
  }

  async #found(req: FoundRequest): Promise<LocalMachine> {
    const record = this.#record;
    const checked = checkFound(record, req);
    if ("already" in checked) return checked.already;
    const { subnet } = checked;
    // The founder admits itself; every later member is admitted by one already in.
    const admitSelf = (opened: Store): void => {
      if (typeof record.signing_key === "string") opened.admit(record.id, record.signing_key);
    };
    const next = await this.#enter(subnet, admitSelf, {
      ...record,
      name: req.machineName ?? record.name,
      phase: "participating",
      "cluster_id": mintId(),
      "cluster_name": req.clusterName ?? "default",
      subnet: subnet.subnet,
    });
    this.#deps.log(
      `founded Cluster "${next.cluster_name}" (${next.cluster_id}) with subnet ${subnet.subnet}`,
    );
    return next;
  }

  async #join(req: JoinRequest): Promise<LocalMachine> {
    const record = this.#record;
    const checked = checkJoin(record, req);
    if ("already" in checked) return checked.already;
    const { subnet } = checked;
    // The join the operator ran vouches for the Machines the Entry Machine knows; later admissions chain from them.
    const anchor = (opened: Store): void =>
      opened.addAnchors((req.members ?? []).map((m) => ({ id: m.id, signingKey: m.signing_key })));
    const next = await this.#enter(subnet, anchor, {
      ...record,
      name: req.machine_name ?? record.name,
      phase: "joining",
      "cluster_id": req.cluster_id,
      "cluster_name": req.cluster_name,
      subnet: subnet.subnet,
      "bootstrap_peers": req.peers,
    });
    this.#deps.log(`joining Cluster "${req.cluster_name}" (${req.cluster_id}) with subnet ${subnet.subnet}`);
    return next;
  }

  // Found and join alike: the bridge network, a fresh store, the record written, then participation.
  async #enter(
    subnet: MachineSubnet,
    trust: (opened: Store) => void,
    next: LocalMachine,
  ): Promise<LocalMachine> {
    const { dataDir } = this.#deps;
    await this.#deps.engine.ensureNetwork(this.#deps.networkSpec(subnet.subnet));
    const path = storePath(dataDir);
    // An uninitialized Machine has never replicated anything: a store file here is left by a found or join that
    // failed before the record was written, and belongs to no Cluster.
    await removeStoreFiles(path);
    const opened = this.#deps.openStore(path, next.id, next.cluster_id!);
    try {
      trust(opened);
      await writeMachineFile(dataDir, next);
    } catch (error) {
      opened.close();
      throw error;
    }
    this.#record = next;
    this.#participate(opened);
    return next;
  }

  async #leave(req: LeaveRequest): Promise<LeaveResponse> {
    const record = this.#record;
    const opened = this.#store;
    if (opened === undefined || record.phase === "uninitialized") {
      throw new RpcError("conflict", `Machine "${record.name}" is not in a Cluster: nothing to leave`, {
        details: { phase: record.phase },
      });
    }
    const { engine, dataDir } = this.#deps;
    const owned = await engine.listOwned({});
    checkLeave(record, owned, req);
    await this.#stopServing();
    await this.#publisher?.stop();
    this.#publisher = undefined;
    const removed: string[] = [];
    for (const c of owned) {
      await engine.removeContainer(c.id, { force: true });
      removed.push(c.name);
    }
    for (const row of opened.containers.list({ "machine_id": record.id })) opened.containers.delete(row.id);
    opened.machines.delete(record.id);
    const link = this.#link;
    const delivery = await link?.syncWithAll(5_000) ?? { delivered: [], failed: [] };
    await link?.stop();
    const interfaceRemoved = await link?.teardown() ?? false;
    this.#link = undefined;
    this.#store = undefined;
    opened.close();
    await setStoreAside(dataDir, new Date());
    const next = leftRecord(record);
    await writeMachineFile(dataDir, next);
    this.#record = next;
    this.#deps.log(`left the Cluster; tombstone delivered to ${delivery.delivered.length} peer(s)`);
    return {
      "machine_id": next.id,
      "removed_containers": removed,
      "tombstone_delivered_to": delivery.delivered,
      "tombstone_not_delivered_to": delivery.failed,
      "interface_removed": interfaceRemoved,
    };
  }

  #participate(opened: Store): void {
    this.#store = opened;
    this.#publish();
    this.#publisher = this.#deps.startPublisher(opened);
    const link = this.#deps.openLink(opened, this.#record, bootstrapHints(this.#record));
    this.#link = link;
    const linkUp = link.start();
    const signal = this.#stopping.signal;
    this.#networkCheck = this.#deps.watchNetwork(this.#deps.networkSpec(this.#record.subnet!), signal)
      .then((problem) => this.#networkProblem = problem);
    this.#startServing(opened);
    if (this.#record.phase === "joining") this.#catchingUp = this.#catchUp(opened, link, linkUp);
  }

  #publish(): void {
    if (this.#store === undefined || this.#record.cluster_id === undefined) return;
    this.#store.machines.put(this.#deps.machineRow(this.#record));
  }

  // Joining: sync with the bootstrap peers until this copy holds everything the first one answering held when
  // asked; only then does the Machine count as participating (it never acts on a stale copy as if complete).
  // The first round waits for this Machine's own mesh (asked before, it only fails); a round that fails is
  // retried after a pause that starts short (the peer's side of a fresh join is usually a moment behind) and
  // doubles up to catchUpPauseMs, so a peer that stays unreachable is asked at that pace.
  async #catchUp(opened: Store, link: LinkPort, linkUp: Promise<void>): Promise<void> {
    const agent = link.agent;
    const peers = bootstrapHints(this.#record).map((h) =>
      link.peerUrls().find((p) => p.machineId === h.machineId)
    )
      .filter((p) => p !== undefined);
    if (agent === undefined || peers.length === 0) {
      this.#deps.log("joining: no mesh or no bootstrap peer; staying in phase joining");
      return;
    }
    const signal = this.#stopping.signal;
    await linkUp;
    const longestPause = this.#deps.catchUpPauseMs ?? 500;
    let pause = Math.min(FIRST_CATCH_UP_PAUSE_MS, longestPause);
    let reported = "";
    while (!signal.aborted && !opened.closed && this.#store === opened) {
      for (const peer of peers) {
        try {
          const target = await agent.peerVector(peer.url);
          for (let round = 0; round < 50 && !opened.caughtUpWith(target); round++) {
            await agent.syncOnce(peer.url);
          }
          if (!opened.caughtUpWith(target) || this.#store !== opened) continue;
          const next: LocalMachine = { ...this.#record, phase: "participating" };
          delete next.bootstrap_peers;
          await writeMachineFile(this.#deps.dataDir, next);
          this.#record = next;
          this.#publish();
          this.#deps.log(`caught up with ${peer.machineId}: participating`);
          this.#startServing(opened);
          return;
        } catch (error) {
          const message = messageOf(error);
          if (message !== reported) this.#deps.log(`joining: ${message}`);
          reported = message;
        }
      }
      await sleep(pause, signal);
      pause = Math.min(pause * 2, longestPause);
    }
  }

  // Serving infrastructure runs once the Machine participates. It outlives nothing of the daemon but the DNS unit
  // under systemd.
  #startServing(opened: Store): void {
    if (this.#serving !== undefined || this.#servingStart !== undefined) return;
    if (this.#record.phase !== "participating") return;
    const subnet = parseSubnet(this.#record.subnet ?? "");
    if (subnet === undefined) return;
    this.#servingStart = this.#deps.startServing(opened, subnet).then(
      async (runtime) => {
        if (this.#store !== opened || this.#stopping.signal.aborted) await runtime.stop();
        else this.#serving = runtime;
      },
      (error) => this.#deps.log(`serving: cannot start: ${messageOf(error)}`),
    )
      .finally(() => this.#servingStart = undefined);
  }

  async #stopServing(): Promise<void> {
    await this.#servingStart;
    const running = this.#serving;
    this.#serving = undefined;
    await running?.stop();
  }
}
