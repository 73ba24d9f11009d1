/**
 * Placement by Machine facts: Machine Labels, the two acceptance flags, and `deploy.placement.constraints` in
 * Swarm's syntax (`node.labels.region == eu`, `node.hostname != m2`, `node.id == …`). One set of pure rules the
 * Compose loader (to refuse a bad constraint at its position), the planner (to pick eligible Machines) and each
 * Machine's admission (to re-check before every create, docs/bets.md, bet 10) all use, so they cannot disagree.
 *
 * @module
 */

/** Longest label key and value, and most labels on one Machine. */
export const LABEL_LIMITS: { readonly key: number; readonly value: number; readonly count: number } = Object
  .freeze({ key: 128, value: 256, count: 64 });

// As Docker and Swarm label keys: letters, digits, and `.`, `-`, `_` inside.
const LABEL_KEY = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/;
// A constraint value is a word: anything printable but spaces and the operators' characters.
const VALUE = /^[^\s=!]+$/;

/** Why `key` cannot be a Machine Label key, or `undefined` when it can. */
export function labelKeyProblem(key: string): string | undefined {
  if (key.length === 0) return "a label key is empty";
  if (key.length > LABEL_LIMITS.key) {
    return `label key "${key.slice(0, 40)}…" is longer than ${LABEL_LIMITS.key}`;
  }
  if (!LABEL_KEY.test(key)) {
    return `invalid label key "${key}": expected letters, digits, ".", "-" or "_", starting and ending with a letter or digit`;
  }
  return undefined;
}

/** Why `value` cannot be a Machine Label value, or `undefined` when it can. */
export function labelValueProblem(key: string, value: string): string | undefined {
  if (value.length > LABEL_LIMITS.value) {
    return `label "${key}" has a value longer than ${LABEL_LIMITS.value}`;
  }
  // deno-lint-ignore no-control-regex
  if (/[\x00-\x1f\x7f]/.test(value)) return `label "${key}" has a control character in its value`;
  return undefined;
}

/** One placement constraint, parsed. */
export interface PlacementConstraint {
  /** What it compares: a Machine Label, the Machine Name, or the Machine id. */
  field: "label" | "hostname" | "id";
  /** The label key, for `field: "label"`. */
  label?: string;
  /** Equal or not equal. */
  op: "==" | "!=";
  /** The value compared against. */
  value: string;
  /** The constraint as normalized text, `node.labels.region == eu`. */
  text: string;
}

/** Parses one Swarm constraint; a string is the reason it is refused. */
export function parseConstraint(raw: string): PlacementConstraint | string {
  const at = raw.search(/==|!=/);
  if (at < 0) return `invalid placement constraint "${raw}": expected "node.labels.KEY == VALUE" or "!="`;
  const left = raw.slice(0, at).trim();
  const op = raw.slice(at, at + 2) as "==" | "!=";
  const value = raw.slice(at + 2).trim();
  if (value === "" || !VALUE.test(value)) {
    return `invalid placement constraint "${raw}": the value "${value}" must be one word`;
  }
  if (left.startsWith("node.labels.")) {
    const label = left.slice("node.labels.".length);
    const problem = labelKeyProblem(label);
    if (problem !== undefined) return `invalid placement constraint "${raw}": ${problem}`;
    return { field: "label", label, op, value, text: `node.labels.${label} ${op} ${value}` };
  }
  if (left === "node.hostname") return { field: "hostname", op, value, text: `node.hostname ${op} ${value}` };
  if (left === "node.id") return { field: "id", op, value, text: `node.id ${op} ${value}` };
  return `unsupported placement constraint "${raw}": Ployz places by "node.labels.KEY", "node.hostname" (the Machine Name) or "node.id"`;
}

/** The facts of one Machine that placement reads. */
export interface MachineFacts {
  /** Machine id. */
  id: string;
  /** Machine Name. */
  name: string;
  /** Its Machine Labels. */
  labels: Readonly<Record<string, string>>;
}

/** Whether `machine` satisfies one constraint; an absent label equals nothing (Swarm's rule). */
export function constraintHolds(constraint: PlacementConstraint, machine: MachineFacts): boolean {
  const actual = constraint.field === "label"
    ? machine.labels[constraint.label!]
    : constraint.field === "hostname"
    ? machine.name
    : machine.id;
  const equal = actual === constraint.value;
  return constraint.op === "==" ? equal : !equal;
}

/** What a Service asks of the Machines it may run on (`x-machines` and `deploy.placement.constraints`). */
export interface PlacementRule {
  /** Machine names or ids; empty or absent means any. */
  machines?: readonly string[];
  /** Constraint texts; each must hold. */
  constraints?: readonly string[];
}

/**
 * The first check `machine` fails for `rule`, as one sentence naming it; `undefined` when it may run there.
 * A constraint that does not parse fails as itself (a row or request from elsewhere is untrusted input).
 */
export function placementRefusal(rule: PlacementRule, machine: MachineFacts): string | undefined {
  const machines = rule.machines ?? [];
  if (machines.length > 0 && !machines.includes(machine.name) && !machines.includes(machine.id)) {
    return `x-machines names ${machines.map((m) => `"${m}"`).join(", ")}, not "${machine.name}"`;
  }
  for (const text of rule.constraints ?? []) {
    const constraint = parseConstraint(text);
    if (typeof constraint === "string") return constraint;
    if (!constraintHolds(constraint, machine)) {
      const shown = constraint.field === "label"
        ? `its label ${constraint.label} is ${
          machine.labels[constraint.label!] === undefined ? "unset" : `"${machine.labels[constraint.label!]}"`
        }`
        : constraint.field === "hostname"
        ? `its name is "${machine.name}"`
        : `its id is "${machine.id}"`;
      return `constraint "${constraint.text}" does not hold (${shown})`;
    }
  }
  return undefined;
}
