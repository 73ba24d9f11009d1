// Machine Labels and acceptance flags: the operator names a Machine, and the change is sent to that Machine, which
// writes its own record and row (docs/bets.md, bet 6). Parsing the command's words is pure and lives here too.
import { labelKeyProblem, labelValueProblem } from "../deploy/mod.ts";
import {
  type ConfigureMachineRequest,
  type ListedMachine,
  type ListMachinesResponse,
  type MachineClient,
  type MachineResponse,
} from "../rpc/mod.ts";
import type { Allocation } from "../store/mod.ts";
import { ambiguousMachine, OperatorError } from "./errors.ts";
import { listTargets } from "./targets.ts";

/** Reads `key=value` words and `--rm key` values into a request; a bad word is refused by name. */
export function labelRequest(words: readonly string[], remove: readonly string[]): ConfigureMachineRequest {
  const set: Record<string, string> = {};
  for (const word of words) {
    const at = word.indexOf("=");
    if (at < 0) {
      throw new OperatorError("invalid_argument", `Invalid label "${word}": expected KEY=VALUE`, {
        label: word,
      });
    }
    const key = word.slice(0, at);
    const value = word.slice(at + 1);
    const problem = labelKeyProblem(key) ?? labelValueProblem(key, value);
    if (problem !== undefined) throw new OperatorError("invalid_argument", problem, { label: key });
    set[key] = value;
  }
  for (const key of remove) {
    const problem = labelKeyProblem(key);
    if (problem !== undefined) throw new OperatorError("invalid_argument", problem, { label: key });
    if (key in set) {
      throw new OperatorError("invalid_argument", `Label "${key}" is both set and removed`, { label: key });
    }
  }
  if (words.length === 0 && remove.length === 0) {
    throw new OperatorError("invalid_argument", "Give at least one KEY=VALUE or --rm KEY", {});
  }
  const out: ConfigureMachineRequest = {};
  if (Object.keys(set).length > 0) out["set_labels"] = set;
  if (remove.length > 0) out["remove_labels"] = [...remove];
  return out;
}

/** Reads `on` or `off` for a flag; anything else is refused naming the flag. */
export function onOff(flag: string, value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === "on") return true;
  if (value === "off") return false;
  throw new OperatorError("invalid_argument", `Invalid --${flag} "${value}": expected on or off`, { flag });
}

/**
 * Sends `request` to the one Machine named `wanted` (name, id or id prefix), through the Entry Machine. A Machine
 * the CLI cannot reach is refused, never changed on its behalf.
 */
export async function configureMachine(
  entry: MachineClient,
  wanted: string,
  request: ConfigureMachineRequest,
): Promise<MachineResponse> {
  const { targets, opened } = await listTargets(entry, { machine: wanted });
  try {
    if (targets.length > 1) {
      throw ambiguousMachine(wanted, targets.map((t) => t.id));
    }
    const target = targets[0];
    if (!("client" in target)) {
      throw new OperatorError(
        "unavailable",
        `Cannot change Machine "${target.name}": ${target.omitted} (nothing was changed)`,
        { machine: target.name },
      );
    }
    return await target.client.configureMachine(request);
  } finally {
    for (const c of opened) c.close();
  }
}

/** What {@link retireGone} did. */
export interface RetiredReport {
  /** The retired Machine. */
  machine: { id: string; name: string; subnet?: string };
  /** What its rows said it held: lost with it. */
  containers: string[];
  /** Volumes its rows named. */
  volumes: string[];
  /** The Machine that wrote the mark. */
  retiredBy: string;
  /** What that Machine observed of it when it judged it gone. */
  observed?: string;
}

/**
 * The one Machine `wanted` names in a Machine's observation: its id, else its name. Refused naming the observer
 * when none matches, and naming the ids when several Machines hold the name.
 */
export function listedMachine(list: ListMachinesResponse, wanted: string): ListedMachine {
  const byId = list.machines.filter((m) => m.id === wanted);
  const found = byId.length > 0 ? byId : list.machines.filter((m) => m.name === wanted);
  if (found.length === 0) {
    throw new OperatorError(
      "not_found",
      `Cannot find Machine "${wanted}" in the observation of "${list.observer.machine_name}"`,
      { machine: wanted },
    );
  }
  if (found.length > 1) throw ambiguousMachine(wanted, found.map((m) => m.id));
  return found[0];
}

/**
 * `machine rm M --gone`: has the Entry Machine mark M retired; the Entry Machine refuses while M answers a probe
 * or was heard from lately (a Machine that answers leaves by itself, `machine rm`). The subnet stays in `book`'s
 * allocation history as retired, so it is never handed out again by this operator.
 */
export async function retireGone(
  entry: MachineClient,
  wanted: string,
  options: {
    confirmDataLoss?: string;
    book: { recordAllocation(a: Allocation): void };
    /**
     * The receipt of this request's one leg: a re-run of a request whose retire is known done answers its report
     * again without sending anything. Retiring is idempotent (it names the state it wants), so a `sent` leg is
     * resent.
     */
    receipts?: { load(leg: string): unknown; save(leg: string, receipt: unknown): void };
  },
): Promise<RetiredReport> {
  const prior = options.receipts?.load("retire") as { status?: string; report?: RetiredReport } | undefined;
  if (prior?.status === "succeeded" && prior.report !== undefined) return prior.report;
  const list = await entry.listMachines();
  const row = listedMachine(list, wanted);
  if (row.id === list.observer.machine_id) {
    throw new OperatorError(
      "conflict",
      `Machine "${row.name}" is the Machine this command reaches, so it is not gone: use "ployz machine rm"`,
      { machine: row.name },
    );
  }
  // The Entry Machine decides whether the Machine is gone, from what it observes now (quiet for a while, no answer
  // to a bounded probe over the mesh), and its refusal says what it saw and when it will accept.
  options.receipts?.save("retire", { status: "sent", machine: row.id });
  const retired = await entry.retireMachine({
    "machine_id": row.id,
    ...(options.confirmDataLoss === undefined ? {} : { "confirm_data_loss": options.confirmDataLoss }),
  });
  if (retired.subnet !== undefined) {
    options.book.recordAllocation({
      subnet: retired.subnet,
      machineName: retired.name,
      machineId: retired.machine_id,
      state: "retired",
      savedAt: new Date().toISOString(),
    });
  }
  const report: RetiredReport = {
    machine: {
      id: retired.machine_id,
      name: retired.name,
      ...(retired.subnet === undefined ? {} : { subnet: retired.subnet }),
    },
    containers: retired.containers,
    volumes: retired.volumes,
    retiredBy: retired.retired_by,
    ...(retired.observed === undefined ? {} : { observed: retired.observed }),
  };
  options.receipts?.save("retire", { status: "succeeded", report });
  return report;
}

/**
 * What this operator's allocation history says when the Machine a command reached was removed as gone, for when the
 * Machine was not told yet (no peer reached it since). `undefined` when it was not removed.
 */
export function retiredNotice(history: readonly Allocation[], machineId: string): string | undefined {
  const entry = history.findLast((a) => a.machineId === machineId && a.state === "retired");
  if (entry === undefined) return undefined;
  return `Machine "${entry.machineName}" (${machineId}) was removed from its Cluster with "machine rm --gone" at ` +
    `${entry.savedAt}: its peers refuse it; reset it (a fresh data directory mints a new id) and add it again`;
}
