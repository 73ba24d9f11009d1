/**
 * Rules that hold across a Project's services once each is read: `profiles:` applied, `depends_on` completions
 * and cycles refused.
 *
 * @module
 */

import { child, type Entry, type Reader } from "./reader.ts";
import type { NormalizedService } from "./types.ts";

/**
 * Leaves out the Services none of whose profiles is enabled, as Compose does, and refuses an enabled Service
 * that depends on one left out. Returns the names left out, sorted.
 */
export function applyProfiles(
  reader: Reader,
  list: Entry[],
  services: Record<string, NormalizedService>,
  enabled: readonly string[],
): string[] {
  const all = enabled.includes("*");
  const out = Object.values(services).filter((service) =>
    service.profiles.length > 0 && !all && !service.profiles.some((profile) => enabled.includes(profile))
  ).map((service) => service.name).sort();
  const left = new Set(out);
  for (const service of Object.values(services)) {
    if (left.has(service.name)) continue;
    for (const dependency of service.dependsOn) {
      if (!left.has(dependency)) continue;
      const entry = list.find((item) => item.key === service.name);
      reader.fail(
        entry?.keyNode,
        child(entry?.path ?? "services", "depends_on"),
        `service "${service.name}" depends on "${dependency}", which is left out: enable one of its profiles (${
          services[dependency].profiles.map((profile) => `"${profile}"`).join(", ")
        }) with --profile`,
      );
    }
  }
  for (const name of out) delete services[name];
  return out;
}

/**
 * A Service others wait to complete runs once, to exit 0, before them: it cannot be global or have more than one
 * replica, and it cannot be what a Service waits to be healthy.
 */
export function checkCompletions(
  reader: Reader,
  list: Entry[],
  services: Record<string, NormalizedService>,
): void {
  for (const service of Object.values(services)) {
    for (const [dependency, condition] of Object.entries(service.dependsOnConditions ?? {})) {
      const target = services[dependency];
      if (condition !== "service_completed_successfully" || target === undefined) continue;
      if (target.mode === "global" || (target.replicas ?? 1) > 1) {
        const entry = list.find((item) => item.key === service.name);
        reader.fail(
          entry?.keyNode,
          child(entry?.path ?? "services", "depends_on"),
          `service "${service.name}" waits for "${dependency}" to complete, so "${dependency}" must run once: set its replicas to 1`,
        );
      }
    }
  }
}

/** Refuses a `depends_on` cycle, naming the services in it. */
export function checkCycles(
  reader: Reader,
  list: Entry[],
  dependencies: ReadonlyMap<string, string[]>,
): void {
  const state = new Map<string, "visiting" | "done">();
  const stack: string[] = [];
  const reported = new Set<string>();
  const visitService = (name: string): void => {
    if (state.get(name) === "done") return;
    if (state.get(name) === "visiting") {
      const cycle = [...stack.slice(stack.indexOf(name)), name];
      const key = [...cycle].sort().join(",");
      if (!reported.has(key)) {
        reported.add(key);
        const entry = list.find((item) => item.key === name);
        reader.fail(
          entry?.keyNode,
          entry?.path ?? "",
          `dependency cycle: ${cycle.map((item) => `"${item}"`).join(" -> ")}`,
        );
      }
      return;
    }
    state.set(name, "visiting");
    stack.push(name);
    for (const dependency of dependencies.get(name) ?? []) visitService(dependency);
    stack.pop();
    state.set(name, "done");
  };
  for (const name of [...dependencies.keys()].sort()) visitService(name);
}
