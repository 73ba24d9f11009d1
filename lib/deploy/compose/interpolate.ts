/**
 * Compose variable interpolation: `$VAR`, `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?message}`,
 * `${VAR?message}`, `${VAR:+replacement}`, `${VAR+replacement}` and `$$` for a literal `$`. Defaults,
 * messages and replacements may themselves contain interpolations.
 *
 * @module
 */

import { MAX_INTERPOLATION_DEPTH } from "./limits.ts";

/** The outcome of interpolating one string. */
export type Interpolated =
  | { ok: true; value: string; unset: string[] }
  | { ok: false; error: string };

class InterpolationFailure extends Error {}

const NAME_START = /[A-Za-z_]/;
const NAME_PART = /[A-Za-z0-9_]/;

/**
 * Interpolates `text` with `env`. `unset` lists variables used without a default that have no value; Compose
 * substitutes an empty string for those and warns.
 */
export function interpolate(text: string, env: Readonly<Record<string, string>>): Interpolated {
  const unset: string[] = [];
  try {
    return { ok: true, value: expand(text, env, unset, 0), unset };
  } catch (error) {
    if (error instanceof InterpolationFailure) return { ok: false, error: error.message };
    throw error;
  }
}

/** Escapes every `$` as `$$`, so that interpolating the result gives `text` back unchanged. */
export function escapeInterpolation(text: string): string {
  return text.replaceAll("$", "$$$$");
}

function lookup(env: Readonly<Record<string, string>>, name: string): string | undefined {
  return Object.hasOwn(env, name) ? env[name] : undefined;
}

function invalid(text: string): InterpolationFailure {
  return new InterpolationFailure(
    `invalid interpolation format in "${text}": write a literal "$" as "$$"`,
  );
}

function expand(
  text: string,
  env: Readonly<Record<string, string>>,
  unset: string[],
  depth: number,
): string {
  if (depth > MAX_INTERPOLATION_DEPTH) {
    throw new InterpolationFailure(
      `interpolation nested more than ${MAX_INTERPOLATION_DEPTH} levels deep: simplify the default values`,
    );
  }
  let out = "";
  let i = 0;
  while (i < text.length) {
    const char = text[i];
    if (char !== "$") {
      out += char;
      i++;
      continue;
    }
    const next = text[i + 1];
    if (next === "$") {
      out += "$";
      i += 2;
    } else if (next === "{") {
      const end = closingBrace(text, i + 2);
      if (end < 0) throw invalid(text);
      out += braced(text.slice(i + 2, end), text, env, unset, depth);
      i = end + 1;
    } else if (next !== undefined && NAME_START.test(next)) {
      let j = i + 1;
      while (j < text.length && NAME_PART.test(text[j])) j++;
      const name = text.slice(i + 1, j);
      const value = lookup(env, name);
      if (value === undefined) unset.push(name);
      out += value ?? "";
      i = j;
    } else {
      throw invalid(text);
    }
  }
  return out;
}

/** Index of the `}` closing a `${` whose body starts at `start`, or -1. */
function closingBrace(text: string, start: number): number {
  let depth = 1;
  let j = start;
  while (j < text.length) {
    if (text[j] === "$" && (text[j + 1] === "{" || text[j + 1] === "$")) {
      if (text[j + 1] === "{") depth++;
      j += 2;
      continue;
    }
    if (text[j] === "}" && --depth === 0) return j;
    j++;
  }
  return -1;
}

function braced(
  body: string,
  whole: string,
  env: Readonly<Record<string, string>>,
  unset: string[],
  depth: number,
): string {
  let j = 0;
  if (!NAME_START.test(body[0] ?? "")) throw invalid(whole);
  while (j < body.length && NAME_PART.test(body[j])) j++;
  const name = body.slice(0, j);
  const rest = body.slice(j);
  const value = lookup(env, name);
  if (rest === "") {
    if (value === undefined) unset.push(name);
    return value ?? "";
  }
  const operator = /^(:-|-|:\?|\?|:\+|\+)/.exec(rest)?.[1];
  if (operator === undefined) throw invalid(whole);
  const argument = rest.slice(operator.length);
  const missing = operator.startsWith(":") ? value === undefined || value === "" : value === undefined;
  switch (operator) {
    case ":-":
    case "-":
      return missing ? expand(argument, env, unset, depth + 1) : value as string;
    case ":+":
    case "+":
      return missing ? "" : expand(argument, env, unset, depth + 1);
    default: {
      if (!missing) return value as string;
      const message = expand(argument, env, unset, depth + 1);
      const requirement = operator === ":?" ? "is unset or empty" : "is unset";
      throw new InterpolationFailure(
        message === ""
          ? `required variable "${name}" ${requirement}`
          : `required variable "${name}" ${requirement}: ${message}`,
      );
    }
  }
}
