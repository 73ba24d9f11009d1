// Machine Labels and acceptance flags: the operator names a Machine, and the change is sent to that Machine, which
// writes its own record and row (DESIGN.md bet 6). Parsing the command's words is pure and lives here too.
import { labelKeyProblem, labelValueProblem } from "../deploy/mod.ts";
import type { ConfigureMachineRequest, ConfigureMachineResponse, MachineClient } from "../rpc/mod.ts";
import { OperatorError } from "./errors.ts";
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
): Promise<ConfigureMachineResponse> {
  const { targets, opened } = await listTargets(entry, { machine: wanted });
  try {
    if (targets.length > 1) {
      throw new OperatorError(
        "ambiguous",
        `Machine name "${wanted}" is held by ${targets.length} Machines (${
          targets.map((t) => t.id).join(", ")
        }): give the id`,
        { machine: wanted },
      );
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
