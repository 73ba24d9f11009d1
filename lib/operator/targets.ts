// The Machines a command fans out to: every Machine row the Entry Machine holds, each with a way to reach it or
// the reason it is not asked (docs/bets.md, bets 1 and 4). Asking, deadlines and the Partial Result are lib/rpc's
// fanOut; this lists who to ask.
import {
  CAPABILITIES,
  type FanOutTarget,
  type ListedMachine,
  type MachineClient,
  type MachineRef,
  viaEntry,
} from "../rpc/mod.ts";
import { OperatorError } from "./errors.ts";

/**
 * How a command reaches a Machine other than the Entry Machine: a client, or `undefined` when it has no route.
 * The default forwards through the Entry Machine when it serves `ployz.machine.forward.v1`.
 */
export type Reach = (machine: ListedMachine, entry: MachineClient) => MachineClient | undefined;

/** No route to any Machine but the Entry Machine. */
export function entryOnly(): MachineClient | undefined {
  return undefined;
}

/** Every call to the Machine is relayed by the Entry Machine over the mesh. */
export function throughEntry(machine: ListedMachine, entry: MachineClient): MachineClient {
  return viaEntry(entry, machine.id, { name: machine.name });
}

/** Options of {@link listTargets}. */
export interface ListTargetsOptions {
  /** Only the Machine with this name, id or id prefix. */
  machine?: string;
  /** How to reach Machines other than the Entry Machine; default through it, when it forwards. */
  reach?: Reach;
  /** Refuse an Entry Machine that is not in a Cluster, naming the connection (`context "x" (host)`). */
  requireClusterVia?: string;
}

/** What {@link listTargets} found. */
export interface ListedTargets {
  /** The Entry Machine. */
  entry: MachineRef;
  /** Every Machine, with a client or the reason it is not asked; the Entry Machine first. */
  targets: FanOutTarget<MachineClient>[];
  /** Clients made for other Machines, for the caller to close. */
  opened: MachineClient[];
}

function matches(m: MachineRef, wanted: string): boolean {
  return m.name === wanted || m.id === wanted || (wanted.length >= 4 && m.id.startsWith(wanted));
}

/**
 * Lists the Cluster's Machines as `entry` observes them. A Machine with no route is an omission with its reason;
 * an Entry Machine outside a Cluster (or one that cannot list Machines) is the only target, unless
 * `requireClusterVia` asks for a Cluster.
 */
export async function listTargets(
  entry: MachineClient,
  options: ListTargetsOptions = {},
): Promise<ListedTargets> {
  const opened: MachineClient[] = [];
  try {
    const [contract, status] = await Promise.all([
      entry.describeContract(),
      options.requireClusterVia === undefined ? Promise.resolve(undefined) : entry.status(),
    ]);
    if (status !== undefined && status.machine.phase !== "participating") {
      throw new OperatorError(
        "conflict",
        `Machine "${status.machine.name}" reached through ${options.requireClusterVia} is not in a Cluster ` +
          `(phase "${status.machine.phase}"): run "ployz machine init" there, or add it with "ployz machine add"`,
        { machine: status.machine.name },
      );
    }
    const self: MachineRef = { id: contract.machine_id, name: contract.machine_name };
    let targets: FanOutTarget<MachineClient>[] = [{ ...self, client: entry }];
    if (contract.capabilities.includes(CAPABILITIES.listMachines)) {
      const listed = await entry.listMachines();
      const reach = options.reach ??
        (contract.capabilities.includes(CAPABILITIES.forward) ? throughEntry : entryOnly);
      for (const m of listed.machines) {
        if (m.id === self.id) continue;
        const client = reach(m, entry);
        if (client !== undefined) {
          opened.push(client);
          targets.push({ id: m.id, name: m.name, client });
          continue;
        }
        targets.push({
          id: m.id,
          name: m.name,
          omitted: `no route to it from this CLI, which reaches only the Entry Machine "${self.name}" ` +
            `(it does not serve "${CAPABILITIES.forward}") ("${self.name}" sees it ${m.membership})`,
        });
      }
    }
    if (options.machine !== undefined) {
      const wanted = options.machine;
      const kept = targets.filter((t) => matches(t, wanted));
      if (kept.length === 0) {
        throw new OperatorError(
          "not_found",
          `No Machine "${wanted}" among the ${targets.length} Machine(s) "${self.name}" observes`,
          { machine: wanted },
        );
      }
      targets = kept;
    }
    return { entry: self, targets, opened };
  } catch (error) {
    for (const c of opened) c.close();
    throw error;
  }
}
