// The Machines a read fans out to: every Machine row the Entry Machine (the local daemon) holds, each with a way to
// reach it or the reason it is not asked. Asking, deadlines and the Partial Result are lib/rpc's fanOut.
import { CliError } from "../../lib/cli/mod.ts";
import {
  CAPABILITIES,
  fanOut,
  type FanOutOptions,
  type FanOutTarget,
  type ListedMachine,
  type MachineClient,
  type MachineRef,
  type PartialResult,
  viaEntry,
} from "../../lib/rpc/mod.ts";
import { describeChoice } from "../../lib/operator/mod.ts";
import { choiceOf, cliError, entryMachine } from "./connect.ts";

/**
 * How this CLI reaches a Machine other than the Entry Machine: a client, or `undefined` when it has no route.
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

/** The Machines to ask, and the Entry Machine they were listed by. */
export interface ClusterTargets extends Disposable {
  /** The Machine the CLI is attached to. */
  entry: MachineRef;
  /** Every Machine, with a client or the reason it is not asked. */
  targets: FanOutTarget<MachineClient>[];
}

/** Options of {@link clusterTargets}. */
export interface TargetOptions {
  /** Only the Machine with this name, id or id prefix. */
  machine?: string;
  /** How to reach Machines other than the Entry Machine; default through it, when it forwards. */
  reach?: Reach;
  /** The Compose file's `x-context`, for `deploy`. */
  composeContext?: string;
}

function matches(m: MachineRef, wanted: string): boolean {
  return m.name === wanted || m.id === wanted || (wanted.length >= 4 && m.id.startsWith(wanted));
}

/**
 * Lists the Cluster's Machines as the Entry Machine observes them. A Machine with no route is an omission with
 * its reason; an Entry Machine outside a Cluster (or one that cannot list Machines) is the only target.
 */
export async function clusterTargets(options: TargetOptions = {}): Promise<ClusterTargets> {
  const entry = entryMachine({ composeContext: options.composeContext });
  const opened: MachineClient[] = [];
  try {
    const choice = choiceOf(entry);
    const remote = choice !== undefined && choice.source !== "default";
    // A CLI attached to its own Machine may act on it alone; one that names a context wants a Cluster.
    const [contract, status] = await Promise.all([
      entry.describeContract(),
      remote ? entry.status() : Promise.resolve(undefined),
    ]);
    if (status !== undefined && status.machine.phase !== "participating") {
      throw new CliError(
        "conflict",
        `Machine "${status.machine.name}" reached through ${describeChoice(choice!)} is not in a Cluster ` +
          `(phase "${status.machine.phase}"): run "ployz machine init" there, or add it with "ployz machine add"`,
        { details: { context: choice!.context, machine: status.machine.name } },
      );
    }
    const self: MachineRef = { id: contract.machine_id, name: contract.machine_name };
    let targets: FanOutTarget<MachineClient>[] = [{ ...self, client: entry }];
    if (contract.capabilities.includes(CAPABILITIES.listMachines)) {
      const listed = await entry.listMachines();
      const others = listed.machines.filter((m) => m.id !== self.id);
      const reach = options.reach ??
        (contract.capabilities.includes(CAPABILITIES.forward) ? throughEntry : entryOnly);
      targets = [
        { ...self, client: entry },
        ...others.map((m): FanOutTarget<MachineClient> => {
          const client = reach(m, entry);
          if (client !== undefined) {
            opened.push(client);
            return { id: m.id, name: m.name, client };
          }
          return {
            id: m.id,
            name: m.name,
            omitted: `no route to it from this CLI, which reaches only the Entry Machine "${self.name}" ` +
              `(it does not serve "${CAPABILITIES.forward}") ` +
              `("${self.name}" sees it ${m.membership})`,
          };
        }),
      ];
    }
    if (options.machine !== undefined) {
      const wanted = options.machine;
      const kept = targets.filter((t) => matches(t, wanted));
      if (kept.length === 0) {
        throw new CliError(
          "not_found",
          `No Machine "${wanted}" among the ${targets.length} Machine(s) "${self.name}" observes`,
          { details: { machine: wanted } },
        );
      }
      targets = kept;
    }
    return {
      entry: self,
      targets,
      [Symbol.dispose](): void {
        entry.close();
        for (const c of opened) c.close();
      },
    };
  } catch (error) {
    entry.close();
    for (const c of opened) c.close();
    throw cliError(error);
  }
}

/** Asks every reachable target, each within `deadlineMs`. */
export function askAll<T>(
  targets: ClusterTargets,
  call: (client: MachineClient, machine: MachineRef, signal: AbortSignal) => Promise<T>,
  deadlineMs?: number,
  onOutcome?: FanOutOptions<T>["onOutcome"],
): Promise<PartialResult<T>> {
  return fanOut(targets.targets, call, { deadlineMs, onOutcome });
}

/** Lines naming the Machines that did not answer and those not asked; empty when every Machine answered. */
export function partialLines(result: PartialResult<unknown>): string[] {
  const lines: string[] = [];
  const answered = result.successes.map((s) => `"${s.machine.name}"`);
  const total = result.successes.length + result.failures.length + result.omissions.length;
  if (result.failures.length > 0 || result.omissions.length > 0) {
    lines.push(
      `Partial result: ${result.successes.length} of ${total} Machine(s) answered${
        answered.length > 0 ? ` (${answered.join(", ")})` : ""
      }`,
    );
  }
  for (const f of result.failures) {
    lines.push(`Machine "${f.machine.name}" (${f.machine.id}) did not answer: ${f.code}: ${f.message}`);
  }
  for (const o of result.omissions) {
    lines.push(`Machine "${o.machine.name}" (${o.machine.id}) was not asked: ${o.reason}`);
  }
  return lines;
}

/** The Partial Result's failures and omissions for `--json`. */
export function partialJson(result: PartialResult<unknown>): Record<string, unknown> {
  return {
    answered: result.successes.map((s) => ({ "machine_id": s.machine.id, "machine_name": s.machine.name })),
    failures: result.failures.map((f) => ({
      "machine_id": f.machine.id,
      "machine_name": f.machine.name,
      code: f.code,
      message: f.message,
    })),
    omissions: result.omissions.map((o) => ({
      "machine_id": o.machine.id,
      "machine_name": o.machine.name,
      reason: o.reason,
    })),
  };
}

/**
 * Exit rule of fan-out reads: an answer from at least one Machine is a result (exit 0, failures listed); no answer
 * at all is an error naming why.
 */
export function requireAnyAnswer(result: PartialResult<unknown>, what: string): void {
  if (result.successes.length > 0) return;
  const reasons = partialLines(result).filter((l) => !l.startsWith("Partial result"));
  const codes = new Set(result.failures.map((f) => f.code));
  const code = codes.size === 1 && result.omissions.length === 0 ? [...codes][0] : "unavailable";
  throw new CliError(
    code,
    `Cannot ${what}: no Machine answered${reasons.length > 0 ? `: ${reasons.join("; ")}` : ""}`,
  );
}
