/**
 * How a service's container starts, is judged and is logged: `healthcheck`, `pull_policy`, `logging` and
 * `depends_on`.
 *
 * @module
 */

import { isScalar, type Node } from "yaml";
import { checkMapping, DEPENDS_ON_KEYS, HEALTHCHECK_KEYS, LOGGING_KEYS } from "./keys.ts";
import { child, type Entry, isMapping, type Reader, sorted } from "./reader.ts";
import { readDuration } from "./service_fields.ts";
import type { NormalizedHealthcheck, NormalizedService } from "./types.ts";
import type { ServiceScope } from "./service_scope.ts";

export function readHealthcheck(reader: Reader, entry: Entry | undefined): NormalizedHealthcheck {
  if (entry === undefined || entry.value === null) return { kind: "image" };
  const keys = checkMapping(reader, entry.value, entry.path, HEALTHCHECK_KEYS, {
    where: "healthcheck",
  });
  const disable = keys.get("disable");
  if (disable !== undefined && disable.value !== null && reader.boolean(disable.value, disable.path)) {
    return { kind: "disabled" };
  }
  const testEntry = keys.get("test");
  let test: string[] = [];
  if (testEntry === undefined || testEntry.value === null) {
    reader.fail(entry.keyNode, entry.path, `missing required key "test"`);
  } else if (isScalar(testEntry.value)) {
    const line = reader.text(testEntry.value, testEntry.path);
    if (line !== undefined) test = ["CMD-SHELL", line];
  } else {
    test = reader.textList(testEntry.value, testEntry.path) ?? [];
    if (test[0] === "NONE") return { kind: "disabled" };
    if (test.length < 2 || (test[0] !== "CMD" && test[0] !== "CMD-SHELL")) {
      reader.fail(
        testEntry.value,
        testEntry.path,
        `invalid healthcheck test: expected a string, ["CMD", …], ["CMD-SHELL", "…"] or ["NONE"]`,
      );
    }
  }
  const duration = (key: string): number | null =>
    readDuration(reader, keys.get(key)?.value, child(entry.path, key));
  const retriesEntry = keys.get("retries");
  // Still read, so its value is checked and a Service's spec hash stays what it was; Docker 20.10 (Engine API
  // v1.41, what Ployz speaks) has no start interval and would drop it without a word.
  const startInterval = keys.get("start_interval");
  if (startInterval !== undefined && startInterval.value !== null) {
    reader.warn(
      startInterval.keyNode,
      startInterval.path,
      `key "start_interval" is not applied: Docker Engine API v1.41 has no start interval, ` +
        `so the check runs every "interval" from the start`,
    );
  }
  return {
    kind: "configured",
    test,
    intervalMs: duration("interval"),
    timeoutMs: duration("timeout"),
    startPeriodMs: duration("start_period"),
    startIntervalMs: duration("start_interval"),
    retries: retriesEntry === undefined || retriesEntry.value === null
      ? null
      : reader.integer(retriesEntry.value, retriesEntry.path, 0) ?? null,
  };
}

export function readPullPolicy(
  reader: Reader,
  entry: Entry | undefined,
  built: boolean,
): NormalizedService["pullPolicy"] {
  if (entry === undefined || entry.value === null) return "missing";
  const policy = reader.text(entry.value, entry.path);
  if (policy === "always" || policy === "never" || policy === "missing") return policy;
  if (policy === "" || policy === "if_not_present") return "missing";
  // "build": the image comes from the Service's own build, never from a registry; it is built whenever its
  // context changes (the tag is the content digest), which is what Compose's rebuild asks for.
  if (policy === "build") {
    if (built) return "never";
    reader.fail(
      entry.value,
      entry.path,
      `pull policy "build" needs a "build:" section to build the image from`,
    );
    return "missing";
  }
  if (policy === "daily" || policy === "weekly" || policy?.startsWith("every_")) {
    reader.fail(
      entry.value,
      entry.path,
      `pull policy "${policy}" is not supported: Ployz resolves tags at each Deploy; use "always" to re-resolve every time`,
    );
    return "missing";
  }
  if (policy !== undefined) {
    reader.fail(
      entry.value,
      entry.path,
      `unsupported pull policy "${policy}": expected "always", "missing" or "never"`,
    );
  }
  return "missing";
}

export function readLogging(reader: Reader, entry: Entry | undefined): NormalizedService["logging"] {
  const fallback = { driver: "local", options: {} };
  if (entry === undefined || entry.value === null) return fallback;
  const keys = checkMapping(reader, entry.value, entry.path, LOGGING_KEYS, {
    where: "logging",
  });
  const driverEntry = keys.get("driver");
  const driver = driverEntry === undefined || driverEntry.value === null
    ? "local"
    : reader.text(driverEntry.value, driverEntry.path) ?? "local";
  const options: Record<string, string> = {};
  const optionsEntry = keys.get("options");
  for (
    const [key, item] of reader.keyValues(optionsEntry?.value ?? null, optionsEntry?.path ?? entry.path) ??
      []
  ) {
    options[key] = item.value ?? "";
  }
  return { driver, options: sorted(options) };
}

export function readDependsOn(
  scope: ServiceScope,
  service: string,
  entry: Entry | undefined,
  conditions: Record<string, "service_healthy" | "service_completed_successfully">,
): string[] {
  const { reader } = scope;
  if (entry === undefined || entry.value === null) return [];
  const found: { name: string; node: Node | null; path: string }[] = [];
  if (isMapping(entry.value)) {
    for (const dependency of reader.entries(entry.value, entry.path) ?? []) {
      found.push({ name: dependency.key, node: dependency.keyNode, path: dependency.path });
      const keys = checkMapping(reader, dependency.value, dependency.path, DEPENDS_ON_KEYS, {
        where: "depends_on",
      });
      const condition = keys.get("condition");
      if (condition === undefined || condition.value === null) continue;
      const value = reader.text(condition.value, condition.path);
      if (value === "service_completed_successfully" || value === "service_healthy") {
        conditions[dependency.key] = value;
      } else if (value !== undefined && value !== "service_started") {
        reader.fail(
          condition.value,
          condition.path,
          `invalid condition "${value}": expected "service_started", "service_healthy" or "service_completed_successfully"`,
        );
      }
    }
  } else {
    (reader.items(entry.value, entry.path) ?? []).forEach((item, index) => {
      const name = reader.text(item, child(entry.path, index));
      if (name !== undefined) found.push({ name, node: item, path: child(entry.path, index) });
    });
  }
  for (const dependency of found) {
    if (dependency.name === service) {
      reader.fail(dependency.node, dependency.path, `service "${service}" cannot depend on itself`);
    } else if (!scope.services.has(dependency.name)) {
      reader.fail(
        dependency.node,
        dependency.path,
        `service "${service}" depends on undefined service "${dependency.name}"`,
      );
    }
  }
  const names = [...new Set(found.map((dependency) => dependency.name))].sort();
  scope.dependencies.set(service, names);
  return names;
}
