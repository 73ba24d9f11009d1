/**
 * What the lab benchmarks share: whether this host can run a lab, named series of samples with their percentiles,
 * a benchmark registered only for a host that can run a lab, a lab taken down when the benchmark process ends, and a
 * program's output that must have succeeded.
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import { lacking } from "../../tests/support/needs.ts";
import type { RunResult } from "../../tests/support/spawn.ts";

/** Root, Linux, the Docker socket and every command `ployz lab` runs: a lab benchmark runs only then. */
export const LAB_READY: boolean = lacking("lab") === undefined;

/** The value below which a fraction `p` of `values` fall (nearest rank). */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

/** Named series of measurements, in milliseconds unless a series says otherwise. */
export class Series {
  readonly #values = new Map<string, number[]>();

  /** Adds `values` to the series `name`. */
  record(name: string, ...values: number[]): void {
    this.#values.set(name, [...(this.#values.get(name) ?? []), ...values]);
  }

  /** Every series with its values. */
  entries(): IterableIterator<[string, number[]]> {
    return this.#values.entries();
  }

  /** One line per series: its count, p50, p99 and max with `digits` decimals. */
  print(digits: number): void {
    for (const [name, values] of this.#values) {
      console.log(
        `${name}: n=${values.length} p50=${percentile(values, 0.5).toFixed(digits)} ms p99=${
          percentile(values, 0.99).toFixed(digits)
        } ms max=${Math.max(...values).toFixed(digits)} ms`,
      );
    }
  }
}

/** Takes the lab at `dir` down, synchronously: an `unload` listener cannot wait for a promise. */
export function labDownSync(dir: string): void {
  new Deno.Command(fileURLToPath(new URL("../../bin/ployz", import.meta.url)), {
    args: ["lab", "down", "--dir", dir],
    stdout: "null",
    stderr: "null",
  }).outputSync();
}

/** The stdout of a program that ran, or an error carrying its output when it exited non-zero. */
export async function mustRun(result: Promise<RunResult>): Promise<string> {
  const r = await result;
  if (r.code !== 0) throw new Error(r.stderr + r.stdout);
  return r.stdout;
}

/** Registers a benchmark that needs a lab: ignored unless {@linkcode LAB_READY}. */
export function labBench(definition: Omit<Deno.BenchDefinition, "ignore">): void {
  Deno.bench({ ...definition, ignore: !LAB_READY });
}
