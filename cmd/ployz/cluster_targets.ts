// The Machines a command fans out to, listed by the Entry Machine this command talks to (lib/operator's
// listTargets), and the printing of Partial Results. Asking, deadlines and the Partial Result are lib/rpc's fanOut.
import { CliError } from "../../lib/cli/mod.ts";
import { describeChoice, listTargets, type Reach } from "../../lib/operator/reach/mod.ts";
import {
  fanOut,
  type FanOutOptions,
  type FanOutTarget,
  type MachineClient,
  type MachineRef,
  type PartialResult,
} from "../../lib/rpc/mod.ts";
import { choiceOf, cliError, entryMachine } from "./connect.ts";

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

/**
 * Lists the Cluster's Machines as the Entry Machine observes them (lib/operator's listTargets). A CLI attached to
 * its own Machine may act on it alone; one that names a context or URL wants a Cluster.
 */
export async function clusterTargets(options: TargetOptions = {}): Promise<ClusterTargets> {
  const entry = entryMachine({ composeContext: options.composeContext });
  try {
    const choice = choiceOf(entry);
    const listed = await listTargets(entry, {
      machine: options.machine,
      reach: options.reach,
      requireClusterVia: choice !== undefined && choice.source !== "default"
        ? describeChoice(choice)
        : undefined,
    });
    return {
      entry: listed.entry,
      targets: listed.targets,
      [Symbol.dispose](): void {
        entry.close();
        for (const c of listed.opened) c.close();
      },
    };
  } catch (error) {
    entry.close();
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
