// The options several commands take, defined once so that each parses the same way everywhere, and reading a
// command's parsed options the one way: a string option given once is its text, anything else (absent, a boolean,
// a list) is undefined.
import type { ParseArgsOptionsConfig } from "node:util";
import { type CommandContext, UsageError } from "../../lib/cli/mod.ts";

const SHARED_OPTIONS = {
  json: { type: "boolean" },
  machine: { type: "string" },
  "all-machines": { type: "boolean" },
  yes: { type: "boolean", short: "y" },
  "dry-run": { type: "boolean" },
  "request-key": { type: "string" },
  timeout: { type: "string" },
  monitor: { type: "string" },
  "confirm-data-loss": { type: "string", multiple: true },
} as const satisfies ParseArgsOptionsConfig;

/** The name of an option several commands share. */
export type SharedOption = keyof typeof SHARED_OPTIONS;

/** The shared options `names`, in the order given (the order `--help` lists them). */
export function sharedOptions(...names: SharedOption[]): ParseArgsOptionsConfig {
  return Object.fromEntries(names.map((name) => [name, SHARED_OPTIONS[name]]));
}

/** The text of string option `name` in `values`, or undefined when it was not given as a string. */
export function stringFlag(values: CommandContext["values"], name: string): string | undefined {
  const value = values[name];
  return typeof value === "string" ? value : undefined;
}

/** `--timeout SECONDS` (above 0, at most an hour) in ms, or `fallbackSeconds` when it was not given. */
export function timeoutMs(values: CommandContext["values"], fallbackSeconds: number): number {
  const value = values.timeout;
  if (value === undefined) return fallbackSeconds * 1000;
  const n = Number(value);
  if (typeof value !== "string" || !Number.isFinite(n) || n <= 0 || n > 3600) {
    throw new UsageError(`Invalid --timeout "${String(value)}": expected seconds above 0, at most 3600`);
  }
  return n * 1000;
}
