/**
 * `enrollMachine`: the operator's side of adding a Machine to a Cluster (client-first, operator-driven, bet 6).
 *
 * 1. Observe through the Entry Machine: its record (Cluster id and name) and its `machines` rows.
 * 2. Read the joiner's record: it must be uninitialized, or already joining or in this Cluster (then this resumes).
 * 3. Pick the joiner's /24 from the observation plus the operator's durable allocation history, and SAVE the pick
 *    before anything is published. A pick saved earlier for the same Machine is reused when nothing observed claims
 *    it. Picks are never removed, also after a failure.
 * 4. Admit the joiner on the Entry Machine (`ployz.machine.admit_peer.v1`): a local peer hint, so the Entry Machine
 *    accepts the joiner's first handshake before the joiner's row can reach it, and a replicated admission of the
 *    joiner's signing key, so every member accepts the joiner's changes.
 * 5. Join (`ployz.machine.join.v1`): the joiner creates its network, opens its store trusting the signing keys of
 *    the Machines the Entry Machine knows, brings up WireGuard with the Entry Machine as first peer, writes its own
 *    row, and catches up with the Entry Machine's store.
 * 6. Wait, bounded, until the joiner reports `participating` (caught up), then read the Entry Machine's rows once
 *    more: whether it holds the joiner's row, and any subnet collision, are reported as observed.
 *
 * Two operators adding Machines at once, from observations missing each other's picks, can choose the same /24.
 * That is reported (see {@link subnetCollisions}), never repaired.
 *
 * @module
 */

import { CAPABILITIES, type ListedMachine, type MachineClient, type MachineRecord } from "../rpc/mod.ts";
import { clusterNetworkOf } from "./addressing.ts";
import { chooseSubnet, type SubnetClaim } from "./allocation.ts";
import { networksOverlap, parseIpv4Network } from "./cidr.ts";
import { type SubnetCollision, subnetCollisions } from "./collisions.ts";
import { MeshError } from "./errors.ts";
import { pollUntil } from "../util/mod.ts";

/** The operator's durable allocation history, as enrollment uses it. */
export interface AllocationHistory {
  /** Every allocation ever saved (no expiry). */
  list(): { subnet: string; machineId: string; machineName: string; state: string }[];
  /** Appends one; must be durable when it returns. */
  save(allocation: { subnet: string; machineId: string; machineName: string; state: string }): void;
}

/** What {@link configHistory} needs of the operator's Config Store (lib/store's `ConfigStore` fits). */
export interface AllocationTable {
  /** Every allocation recorded, oldest first. */
  allocations(): { subnet: string; machineId: string; machineName: string; state: string }[];
  /** Appends one, durably. */
  recordAllocation(
    allocation: { subnet: string; machineId: string; machineName: string; state: string; savedAt: string },
  ): void;
}

/** The operator's Config Store as allocation history (its `allocations` table). */
export function configHistory(config: AllocationTable): AllocationHistory {
  return {
    list: () => config.allocations(),
    save: (a) => config.recordAllocation({ ...a, savedAt: new Date().toISOString() }),
  };
}

/** Options of {@link enrollMachine}. */
export interface EnrollOptions {
  /** The Entry Machine, already in the Cluster. */
  entry: MachineClient;
  /** The Machine to add. */
  joiner: MachineClient;
  /** The operator's allocation history. */
  history: AllocationHistory;
  /** Machine Name the joiner takes; default its current name. */
  machineName?: string;
  /** The Cluster network; default the Entry Machine's (see {@linkcode clusterNetworkOf}). */
  network?: string;
  /** How long to wait for the joiner to catch up; default 60 000 ms. */
  timeoutMs?: number;
  /** Progress lines. */
  progress?: (line: string) => void;
  /** Called once the joiner took the join (or was in the Cluster already), before the wait for it to catch up. */
  joined?: () => void;
}

/** What {@link enrollMachine} observed and did. */
export interface EnrollResult {
  /** The joiner's record as it last reported it. */
  machine: MachineRecord;
  /** The Entry Machine's record. */
  entry: MachineRecord;
  /** The subnet allocated (and saved) for the joiner. */
  subnet: string;
  /** Whether the subnet came from an earlier saved pick for this Machine. */
  reusedAllocation: boolean;
  /** Whether the joiner reported `participating` within the timeout. */
  participating: boolean;
  /** Milliseconds from the join call until the joiner reported `participating`. */
  participatingAfterMs?: number;
  /** Whether the Entry Machine held the joiner's row when last asked. */
  entryHoldsRow: boolean;
  /** Subnet collisions in the Entry Machine's last observation. */
  collisions: SubnetCollision[];
  /** Whether the joiner was already in this Cluster (nothing was allocated or joined). */
  alreadyMember: boolean;
}

function overlaps(a: string, b: string): boolean {
  try {
    return networksOverlap(parseIpv4Network(a), parseIpv4Network(b));
  } catch {
    return false;
  }
}

/** Adds the joiner to the Entry Machine's Cluster; see the module comment for the steps. */
export async function enrollMachine(options: EnrollOptions): Promise<EnrollResult> {
  const progress = options.progress ?? (() => {});
  const { entry, joiner, history } = options;
  const entryRecord = (await entry.status()).machine;
  if (entryRecord.phase !== "participating" || entryRecord.cluster_id === undefined) {
    throw new MeshError(
      "conflict",
      `Cannot add a Machine through "${entryRecord.name}": it is not in a Cluster (phase "${entryRecord.phase}"); run "ployz machine init" there first`,
    );
  }
  const clusterId = entryRecord.cluster_id;
  // Capabilities decide, never versions: an older daemon refuses with the capability it lacks named.
  await entry.requireCapability(CAPABILITIES.listMachines);
  await entry.requireCapability(CAPABILITIES.admitPeer);
  const observed = await entry.listMachines();
  const entryRow = observed.machines.find((m) => m.id === entryRecord.id);
  if (entryRow === undefined || entryRow.public_key === undefined || entryRow.subnet === undefined) {
    throw new MeshError(
      "unavailable",
      `Cannot add a Machine through "${entryRecord.name}": its own row (key, subnet) is not in its store yet`,
    );
  }
  if (entryRow.endpoints.length === 0) {
    throw new MeshError(
      "unavailable",
      `Cannot add a Machine through "${entryRecord.name}": it advertises no WireGuard endpoint (set PLOYZ_ADVERTISE_ENDPOINTS there)`,
    );
  }
  const joinerRecord = (await joiner.status()).machine;
  if (joinerRecord.id === entryRecord.id) {
    throw new MeshError("invalid_argument", `Cannot add Machine "${joinerRecord.name}" to itself`);
  }
  if (joinerRecord.cluster_id !== undefined && joinerRecord.cluster_id !== clusterId) {
    throw new MeshError(
      "conflict",
      `Cannot add Machine "${joinerRecord.name}": it belongs to another Cluster "${joinerRecord.cluster_name}" (id "${joinerRecord.cluster_id}")`,
    );
  }
  if (joinerRecord.public_key === undefined) {
    throw new MeshError(
      "unavailable",
      `Cannot add Machine "${joinerRecord.name}": it reports no WireGuard key`,
    );
  }
  await joiner.requireCapability(CAPABILITIES.joinMachine);
  const name = options.machineName ?? joinerRecord.name;
  const alreadyMember = joinerRecord.cluster_id === clusterId && joinerRecord.subnet !== undefined;

  let subnet: string;
  let reusedAllocation = false;
  if (alreadyMember) {
    subnet = joinerRecord.subnet!;
    progress(
      `Machine "${joinerRecord.name}" is already in Cluster "${entryRecord.cluster_name}" (${subnet})`,
    );
  } else {
    const others = observed.machines.filter((m) => m.id !== joinerRecord.id && m.subnet !== undefined);
    const saved = history.list();
    const prior = saved.filter((a) => a.machineId === joinerRecord.id).at(-1);
    if (prior !== undefined && !others.some((m) => overlaps(m.subnet!, prior.subnet))) {
      subnet = prior.subnet;
      reusedAllocation = true;
    } else {
      const claims: SubnetClaim[] = saved.map((a) => ({ subnet: a.subnet }));
      subnet = chooseSubnet({
        // The Entry Machine's Cluster network, also for a Cluster founded outside the default one.
        network: options.network ?? clusterNetworkOf(entryRow.subnet),
        observed: others.map((m) => ({ subnet: m.subnet! })),
        history: claims,
      }).subnet;
      // Saved before anything publishes it, and kept whatever happens next.
      history.save({ subnet, machineId: joinerRecord.id, machineName: name, state: "saved" });
    }
    progress(`allocated ${subnet} for "${name}"${reusedAllocation ? " (saved earlier)" : ""}`);
    const admitted = await entry.admitPeer({
      "machine_id": joinerRecord.id,
      "public_key": joinerRecord.public_key,
      subnet,
      ...(joinerRecord.signing_key === undefined ? {} : { "signing_key": joinerRecord.signing_key }),
    });
    if (!admitted.configured) {
      progress(
        `warning: "${entryRecord.name}" could not configure the peer yet: ${admitted.error ?? "unknown"}`,
      );
    }
  }

  const started = Date.now();
  let machine = joinerRecord;
  if (!alreadyMember || joinerRecord.phase !== "participating") {
    const joined = await joiner.joinMachine({
      "cluster_id": clusterId,
      "cluster_name": entryRecord.cluster_name ?? "default",
      subnet,
      ...(options.machineName === undefined ? {} : { "machine_name": options.machineName }),
      peers: [{
        id: entryRow.id,
        name: entryRow.name,
        "public_key": entryRow.public_key,
        endpoints: entryRow.endpoints,
        subnet: entryRow.subnet,
      }],
      // The joiner trusts the Machines the Entry Machine accepts changes from (also those that left, whose old
      // changes it still holds); each later admission chains from them.
      members: (observed.members ?? observed.machines.filter((m) => m.signing_key !== undefined)).map((
        m,
      ) => ({
        id: m.id,
        "signing_key": m.signing_key!,
      })),
    });
    machine = joined.machine;
    if (!alreadyMember) {
      history.save({ subnet, machineId: joinerRecord.id, machineName: name, state: "published" });
    }
    progress(`"${machine.name}" is ${machine.phase}; waiting for it to catch up`);
  }

  options.joined?.();
  const deadline = started + (options.timeoutMs ?? 60_000);
  const participating = await pollUntil(async () => {
    machine = (await joiner.status()).machine;
    return machine.phase === "participating";
  }, { timeoutMs: deadline - Date.now(), intervalMs: 200 });
  const participatingAfterMs = participating ? Date.now() - started : undefined;

  let last: ListedMachine[] = observed.machines;
  const entryHoldsRow = await pollUntil(async () => {
    last = (await entry.listMachines()).machines;
    return last.some((m) => m.id === machine.id);
  }, { timeoutMs: participating ? 10_000 : 0, intervalMs: 200 }) === true;
  return {
    machine,
    entry: entryRecord,
    subnet,
    reusedAllocation,
    participating: participatingAfterMs !== undefined,
    participatingAfterMs,
    entryHoldsRow,
    collisions: subnetCollisions(last),
    alreadyMember,
  };
}
