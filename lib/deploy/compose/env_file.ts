/**
 * The `KEY=VALUE` format of Compose `env_file` entries: blank lines and `#` comments are skipped, `export` is
 * allowed, single quotes are literal, double quotes take `\n`-style escapes, unquoted values lose a trailing
 * ` # comment`. Unquoted and double-quoted values are interpolated with the variables defined above them,
 * then with the caller's environment. A bare `KEY` takes its value from the caller's environment and is
 * left out when that has none.
 *
 * @module
 */

import { interpolate } from "./interpolate.ts";

/** A problem on one line of an env file. */
export interface EnvFileProblem {
  /** 1-based line number. */
  line: number;
  /** What is wrong. */
  message: string;
}

/** The variables an env file defines, in file order, and any problems. */
export interface ParsedEnvFile {
  /** Variables by name, in file order. */
  vars: Record<string, string>;
  /** Lines that could not be read. */
  problems: EnvFileProblem[];
}

const KEY = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
const ESCAPES: Record<string, string> = { n: "\n", r: "\r", t: "\t", "\\": "\\", '"': '"', $: "$$" };

/** Parses env file text; `env` supplies values for bare keys and interpolation. */
export function parseEnvFile(text: string, env: Readonly<Record<string, string>>): ParsedEnvFile {
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  const vars: Record<string, string> = {};
  const problems: EnvFileProblem[] = [];
  // Variables defined so far over the caller's: updated in place, not copied per line.
  const scope: Record<string, string> = { ...env };
  const define = (key: string, value: string): void => {
    vars[key] = value;
    scope[key] = value;
  };
  for (let index = 0; index < lines.length; index++) {
    const lineNumber = index + 1;
    const trimmed = lines[index].trim();
    if (trimmed === "" || trimmed.startsWith("#")) continue;
    const statement = trimmed.replace(/^export\s+/, "");
    const equals = statement.indexOf("=");
    const key = (equals < 0 ? statement : statement.slice(0, equals)).trim();
    if (!KEY.test(key)) {
      // The line is not echoed: a malformed line of an env file is often a secret.
      problems.push({ line: lineNumber, message: `invalid variable name: expected KEY=VALUE` });
      continue;
    }
    if (equals < 0) {
      if (Object.hasOwn(env, key)) define(key, env[key]);
      continue;
    }
    let raw = statement.slice(equals + 1).trimStart();
    const quote = raw[0];
    if (quote === "'" || quote === '"') {
      // Each further line is scanned on its own and joined once: growing one string and indexing into it
      // would flatten it on every line, quadratic for a quote left open over a long file.
      const parts = [raw];
      let close = findClose(raw, quote, 1);
      let offset = 0;
      while (close < 0 && index + 1 < lines.length) {
        offset += parts[parts.length - 1].length + 1;
        index++;
        parts.push(lines[index]);
        const found = findClose(lines[index], quote, 0);
        if (found >= 0) close = offset + found;
      }
      raw = parts.join("\n");
      if (close < 0) {
        problems.push({ line: lineNumber, message: `unterminated ${quote} quote in value of "${key}"` });
        continue;
      }
      const after = raw.slice(close + 1).trim();
      if (after !== "" && !after.startsWith("#")) {
        problems.push({ line: lineNumber, message: `unexpected text after the closing quote of "${key}"` });
        continue;
      }
      const inner = raw.slice(1, close);
      if (quote === "'") {
        define(key, inner);
        continue;
      }
      const unescaped = inner.replace(/\\(.)/gs, (all, char: string) => ESCAPES[char] ?? all);
      const result = interpolate(unescaped, scope);
      if (!result.ok) problems.push({ line: lineNumber, message: interpolationProblem(key, result.error) });
      else define(key, result.value);
      continue;
    }
    const value = raw.replace(/\s+#.*$/, "").trimEnd();
    const result = interpolate(value, scope);
    if (!result.ok) problems.push({ line: lineNumber, message: interpolationProblem(key, result.error) });
    else define(key, result.value);
  }
  return { vars, problems };
}

/**
 * The problem with a value, without the value: an env file holds secrets, and the interpolation error
 * quotes the text it could not read. A `${VAR:?message}` message is the file author's own and is kept.
 */
function interpolationProblem(key: string, error: string): string {
  if (error.startsWith("required variable")) return `value of "${key}": ${error}`;
  if (error.startsWith("interpolation nested")) return `value of "${key}": ${error}`;
  return `invalid interpolation in the value of "${key}": write a literal "$" as "$$"`;
}

function findClose(raw: string, quote: string, from: number): number {
  for (let i = from; i < raw.length; i++) {
    if (quote === '"' && raw[i] === "\\") {
      i++;
      continue;
    }
    if (raw[i] === quote) return i;
  }
  return -1;
}
