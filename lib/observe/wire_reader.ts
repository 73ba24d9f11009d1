/**
 * A strict reader for the small JSON bodies observe.sock accepts. Hand-written rather than zod: zod adds about
 * 10 MB of resident memory to `ployzd observe`, which reads three flat objects of strings and integers.
 *
 * @module
 */

/** One field of a flat request object. */
export type FieldRule =
  | { kind: "string"; min: number; max: number; optional?: boolean }
  | { kind: "int"; min: number; max: number; optional?: boolean }
  | { kind: "true"; optional?: boolean };

/** What a body broke: the field's name (`""` for the body itself) and why. */
export interface WireIssue {
  path: string;
  message: string;
}

/** What reading a body gives: the object, or the first issue and every issue found. */
export type WireRead<T> = { ok: true; value: T } | { ok: false; issues: WireIssue[] };

function fieldIssue(rule: FieldRule, value: unknown): string | undefined {
  switch (rule.kind) {
    case "string":
      if (typeof value !== "string") return "expected a string";
      if (value.length < rule.min) return `expected at least ${rule.min} characters`;
      if (value.length > rule.max) return `expected at most ${rule.max} characters`;
      return undefined;
    case "int":
      if (typeof value !== "number" || !Number.isInteger(value)) return "expected an integer";
      if (value < rule.min || value > rule.max) return `expected an integer from ${rule.min} to ${rule.max}`;
      return undefined;
    case "true":
      return value === true ? undefined : "expected true";
  }
}

/** Reads `body` as an object with exactly the fields of `rules` (unknown fields refused, missing ones named). */
export function readWire<T>(body: unknown, rules: Record<string, FieldRule>): WireRead<T> {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    return { ok: false, issues: [{ path: "", message: "expected an object" }] };
  }
  const issues: WireIssue[] = [];
  const record = body as Record<string, unknown>;
  for (const [name, rule] of Object.entries(rules)) {
    const value = record[name];
    if (value === undefined) {
      if (rule.optional !== true) issues.push({ path: name, message: "required" });
      continue;
    }
    const issue = fieldIssue(rule, value);
    if (issue !== undefined) issues.push({ path: name, message: issue });
  }
  for (const name of Object.keys(record)) {
    if (!Object.hasOwn(rules, name)) issues.push({ path: name, message: "unknown field" });
  }
  return issues.length === 0 ? { ok: true, value: body as T } : { ok: false, issues };
}
