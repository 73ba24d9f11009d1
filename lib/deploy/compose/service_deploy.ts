/**
 * A service's `deploy:` section and the short keys that stand for parts of it (`scale`, `cpus`, `mem_limit`,
 * `ulimits`, …): mode, replicas, update order, resources and placement constraints.
 *
 * @module
 */

import { isScalar } from "yaml";
import {
  checkMapping,
  DEPLOY_KEYS,
  LIMITS_KEYS,
  PLACEMENT_KEYS,
  RESERVATIONS_KEYS,
  RESOURCES_KEYS,
  UPDATE_CONFIG_KEYS,
} from "./keys.ts";
import { MAX_MONITOR_MS, MAX_REPLICAS, MAX_UPDATE_DELAY_MS } from "./limits.ts";
import { parseConstraint } from "./placement.ts";
import { child, describe, type Entry, isMapping, type Reader, sorted } from "./reader.ts";
import { readBytes, readDuration } from "./service_fields.ts";
import { formatDurationMs } from "./units.ts";
import type { NormalizedDeviceRequest, NormalizedResources, NormalizedService } from "./types.ts";
import { readDeviceRequests } from "./service_devices.ts";

/** The `update_config` duration `entry`, or null when unset; longer than `maxMs` is a problem of the file. */
function boundedDuration(
  reader: Reader,
  entry: Entry | undefined,
  key: string,
  maxMs: number,
): number | null {
  const ms = readDuration(reader, entry?.value, entry?.path ?? "");
  if (entry === undefined || ms === null || ms <= maxMs) return ms;
  reader.fail(
    entry.value,
    entry.path,
    `update ${key} must be at most ${formatDurationMs(maxMs)}, got ${formatDurationMs(ms)}`,
  );
  return null;
}

interface ResourceKeys {
  cpus: Entry | undefined;
  memLimit: Entry | undefined;
  memReservation: Entry | undefined;
  shmSize: Entry | undefined;
  ulimits: Entry | undefined;
  pidsLimit: Entry | undefined;
}

interface DeployFields {
  mode: NormalizedService["mode"];
  replicas: number | null;
  update: NormalizedService["update"];
  resources: NormalizedResources;
  pidsLimit: number | null;
  deviceRequests: NormalizedDeviceRequest[];
  constraints: string[];
}

/** `deploy.placement.constraints`: each parsed now, so a bad one is refused at its position. */
function readPlacement(reader: Reader, placement: Entry | undefined): string[] {
  if (placement === undefined || placement.value === null) return [];
  const keys = checkMapping(reader, placement.value, placement.path, PLACEMENT_KEYS, {
    where: "placement",
  });
  const entry = keys.get("constraints");
  if (entry === undefined || entry.value === null) return [];
  const out: string[] = [];
  const nodes = reader.items(entry.value, entry.path) ?? [];
  nodes.forEach((node, i) => {
    const path = child(entry.path, i);
    const raw = reader.text(node, path);
    if (raw === undefined) return;
    const parsed = parseConstraint(raw);
    if (typeof parsed === "string") reader.fail(node, path, parsed);
    else if (!out.includes(parsed.text)) out.push(parsed.text);
  });
  return out;
}

export function readDeploy(
  reader: Reader,
  deploy: Entry | undefined,
  scale: Entry | undefined,
  resourceKeys: ResourceKeys,
): DeployFields {
  const keys = deploy === undefined
    ? new Map<string, Entry>()
    : checkMapping(reader, deploy.value, deploy.path, DEPLOY_KEYS, { where: "deploy" });
  const constraints = readPlacement(reader, keys.get("placement"));
  const modeEntry = keys.get("mode");
  const modeText = modeEntry === undefined || modeEntry.value === null
    ? "replicated"
    : reader.text(modeEntry.value, modeEntry.path) ?? "replicated";
  let mode: NormalizedService["mode"] = "replicated";
  if (modeText === "global") mode = "global";
  else if (modeText !== "replicated" && modeText !== "") {
    reader.fail(
      modeEntry?.value,
      modeEntry?.path ?? "",
      `unsupported deploy mode "${modeText}": expected "replicated" or "global"`,
    );
  }
  const replicasEntry = keys.get("replicas");
  let replicas: number | null = replicasEntry === undefined || replicasEntry.value === null
    ? null
    : reader.integer(replicasEntry.value, replicasEntry.path, 1, MAX_REPLICAS) ?? null;
  if (scale !== undefined && scale.value !== null) {
    const scaled = reader.integer(scale.value, scale.path, 1, MAX_REPLICAS) ?? null;
    if (replicas !== null && scaled !== null && scaled !== replicas) {
      reader.fail(
        scale.value,
        scale.path,
        `"scale" is ${scaled} but "deploy.replicas" is ${replicas}: set only one`,
      );
    }
    replicas ??= scaled;
  }
  if (mode === "global") {
    if (replicas !== null) {
      // A contradiction, not a preference: Compose refuses it too.
      reader.fail(
        replicasEntry?.keyNode ?? scale?.keyNode,
        replicasEntry?.path ?? scale?.path ?? "",
        `"${
          replicasEntry !== undefined ? "deploy.replicas" : "scale"
        }" cannot be set with "deploy.mode: global": a global Service runs one container per Machine`,
      );
    }
    replicas = null;
  } else {
    replicas ??= 1;
  }

  const update: NormalizedService["update"] = {
    order: null,
    monitorMs: null,
    parallelism: null,
    delayMs: null,
  };
  const updateEntry = keys.get("update_config");
  if (updateEntry !== undefined && updateEntry.value !== null) {
    const updateKeys = checkMapping(reader, updateEntry.value, updateEntry.path, UPDATE_CONFIG_KEYS, {
      where: "update_config",
    });
    const order = updateKeys.get("order");
    if (order !== undefined && order.value !== null) {
      const value = reader.text(order.value, order.path);
      if (value === "start-first" || value === "stop-first") update.order = value;
      else if (value !== undefined && value !== "") {
        reader.fail(
          order.value,
          order.path,
          `invalid update order "${value}": expected "start-first" or "stop-first"`,
        );
      }
    }
    update.monitorMs = boundedDuration(reader, updateKeys.get("monitor"), "monitor", MAX_MONITOR_MS);
    const parallelism = updateKeys.get("parallelism");
    if (parallelism !== undefined && parallelism.value !== null) {
      update.parallelism = reader.integer(parallelism.value, parallelism.path, 0, MAX_REPLICAS) ?? null;
    }
    update.delayMs = boundedDuration(reader, updateKeys.get("delay"), "delay", MAX_UPDATE_DELAY_MS);
  }

  const resources: NormalizedResources = {
    nanoCpus: null,
    memoryBytes: readBytes(reader, resourceKeys.memLimit?.value, resourceKeys.memLimit?.path ?? ""),
    memoryReservationBytes: readBytes(
      reader,
      resourceKeys.memReservation?.value,
      resourceKeys.memReservation?.path ?? "",
    ),
    shmSizeBytes: readBytes(reader, resourceKeys.shmSize?.value, resourceKeys.shmSize?.path ?? ""),
    ulimits: readUlimits(reader, resourceKeys.ulimits),
  };
  const cpus = (entry: Entry | undefined): number | null => {
    if (entry === undefined || entry.value === null) return null;
    const value = reader.decimal(entry.value, entry.path);
    return value === undefined ? null : Math.round(value * 1e9);
  };
  resources.nanoCpus = cpus(resourceKeys.cpus);
  const pids = (entry: Entry | undefined): number | null =>
    entry === undefined || entry.value === null ? null : reader.integer(entry.value, entry.path, -1) ?? null;
  let pidsLimit = pids(resourceKeys.pidsLimit);
  let deviceRequests: NormalizedDeviceRequest[] = [];
  const resourcesEntry = keys.get("resources");
  if (resourcesEntry !== undefined && resourcesEntry.value !== null) {
    const resourceEntries = checkMapping(reader, resourcesEntry.value, resourcesEntry.path, RESOURCES_KEYS, {
      where: "resources",
    });
    const limits = resourceEntries.get("limits");
    if (limits !== undefined && limits.value !== null) {
      const limitKeys = checkMapping(reader, limits.value, limits.path, LIMITS_KEYS, {
        where: "limits",
      });
      resources.nanoCpus = cpus(limitKeys.get("cpus")) ?? resources.nanoCpus;
      const memory = limitKeys.get("memory");
      resources.memoryBytes = readBytes(reader, memory?.value, memory?.path ?? "") ?? resources.memoryBytes;
      pidsLimit = pids(limitKeys.get("pids")) ?? pidsLimit;
    }
    const reservations = resourceEntries.get("reservations");
    if (reservations !== undefined && reservations.value !== null) {
      const reservationKeys = checkMapping(reader, reservations.value, reservations.path, RESERVATIONS_KEYS, {
        where: "reservations",
      });
      const memory = reservationKeys.get("memory");
      resources.memoryReservationBytes = readBytes(reader, memory?.value, memory?.path ?? "") ??
        resources.memoryReservationBytes;
      const devices = reservationKeys.get("devices");
      if (devices !== undefined) deviceRequests = readDeviceRequests(reader, devices.value, devices.path);
    }
  }
  return { mode, replicas, update, resources, pidsLimit, deviceRequests, constraints };
}

function readUlimits(reader: Reader, entry: Entry | undefined): NormalizedResources["ulimits"] {
  const out: NormalizedResources["ulimits"] = {};
  if (entry === undefined || entry.value === null) return out;
  for (const limit of reader.entries(entry.value, entry.path) ?? []) {
    if (isMapping(limit.value)) {
      const parts = new Map((reader.entries(limit.value, limit.path) ?? []).map((part) => [part.key, part]));
      const soft = parts.get("soft");
      const hard = parts.get("hard");
      for (const key of parts.keys()) {
        if (key !== "soft" && key !== "hard") {
          const part = parts.get(key);
          reader.fail(
            part?.keyNode,
            part?.path ?? limit.path,
            `unknown key "${key}" in ulimit: expected "soft" and "hard"`,
          );
        }
      }
      if (soft === undefined || hard === undefined) {
        reader.fail(limit.value, limit.path, `ulimit "${limit.key}" needs both "soft" and "hard"`);
        continue;
      }
      const softValue = reader.integer(soft.value, soft.path, -1);
      const hardValue = reader.integer(hard.value, hard.path, -1);
      if (softValue !== undefined && hardValue !== undefined) {
        out[limit.key] = { soft: softValue, hard: hardValue };
      }
    } else if (limit.value !== null && isScalar(limit.value)) {
      const value = reader.integer(limit.value, limit.path, -1);
      if (value !== undefined) out[limit.key] = { soft: value, hard: value };
    } else {
      reader.fail(limit.value, limit.path, `expected a number or {soft, hard}, got ${describe(limit.value)}`);
    }
  }
  return sorted(out);
}
