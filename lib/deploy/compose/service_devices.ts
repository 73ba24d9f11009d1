/**
 * What a service's container is given of its Machine beyond volumes: `tmpfs:` mounts, `devices:`, `gpus:` and
 * device requests.
 *
 * @module
 */

import { isScalar, type Node } from "yaml";
import { checkMapping, DEVICE_REQUEST_KEYS } from "./keys.ts";
import { absolutePathProblem } from "./names.ts";
import { child, isMapping, type Reader, sorted } from "./reader.ts";
import type { NormalizedDevice, NormalizedDeviceRequest, TmpfsMount } from "./types.ts";
import { parseBytes } from "./units.ts";

/** `tmpfs:` as a path or a list of `PATH[:size=…,mode=…]`. */
export function readTmpfs(reader: Reader, node: Node | null, path: string): TmpfsMount[] {
  const out: TmpfsMount[] = [];
  const list = reader.textList(node, path, { single: "one" }) ?? [];
  for (const entry of list) {
    const [target, options] = splitOnce(entry, ":");
    const problem = absolutePathProblem("tmpfs target", target);
    if (problem !== undefined) {
      reader.fail(node, path, problem);
      continue;
    }
    let sizeBytes: number | null = null;
    let mode: number | null = null;
    for (const option of options === undefined || options === "" ? [] : options.split(",")) {
      const [name, raw] = splitOnce(option, "=");
      if (name === "size" && raw !== undefined) {
        const parsed = parseBytes(raw);
        if (typeof parsed === "number") sizeBytes = parsed;
        else reader.fail(node, path, parsed.error);
      } else if (name === "mode" && raw !== undefined && /^[0-7]{1,4}$/.test(raw)) {
        mode = parseInt(raw, 8);
      } else {
        reader.fail(node, path, `unsupported tmpfs option "${option}": expected size=… or mode=…`);
      }
    }
    out.push({ type: "tmpfs", target, readOnly: false, sizeBytes, mode });
  }
  return out;
}

function splitOnce(text: string, separator: string): [string, string | undefined] {
  const at = text.indexOf(separator);
  return at < 0 ? [text, undefined] : [text.slice(0, at), text.slice(at + 1)];
}

/** `devices:` as `HOST[:CONTAINER[:PERMISSIONS]]` or `{source, target, permissions}`. */
export function readDevices(reader: Reader, node: Node | null, path: string): NormalizedDevice[] {
  const out: NormalizedDevice[] = [];
  (reader.items(node, path) ?? []).forEach((item, index) => {
    const itemPath = child(path, index);
    let host: string | undefined;
    let container: string | undefined;
    let permissions = "rwm";
    if (isMapping(item)) {
      for (const entry of reader.entries(item, itemPath) ?? []) {
        const value = reader.text(entry.value, entry.path);
        if (entry.key === "source") host = value;
        else if (entry.key === "target") container = value;
        else if (entry.key === "permissions") permissions = value ?? permissions;
        else reader.fail(entry.keyNode, entry.path, `unknown key "${entry.key}" in a device`);
      }
    } else {
      const value = reader.text(item, itemPath);
      if (value === undefined) return;
      const parts = value.split(":");
      host = parts[0];
      container = parts[1] ?? parts[0];
      permissions = parts[2] ?? permissions;
      if (parts.length > 3) host = undefined;
    }
    container ??= host;
    if (
      host === undefined || container === undefined || !host.startsWith("/") || !container.startsWith("/")
    ) {
      reader.fail(item, itemPath, `invalid device: expected /HOST/PATH[:/CONTAINER/PATH[:rwm]]`);
      return;
    }
    if (!/^[rwm]{1,3}$/.test(permissions)) {
      reader.fail(item, itemPath, `invalid device permissions "${permissions}": expected letters of "rwm"`);
      return;
    }
    out.push({ host, container, permissions });
  });
  return out;
}

/** `gpus: all` or a list of device requests. */
export function readGpus(reader: Reader, node: Node | null, path: string): NormalizedDeviceRequest[] {
  if (node === null) return [];
  if (isScalar(node)) {
    const value = reader.text(node, path);
    if (value === "all") return [{ count: -1, capabilities: [["gpu"]] }];
    const count = value === undefined ? NaN : Number(value);
    if (Number.isSafeInteger(count) && count > 0) return [{ count, capabilities: [["gpu"]] }];
    reader.fail(node, path, `invalid gpus "${value}": expected "all", a count, or a list of requests`);
    return [];
  }
  return readDeviceRequests(reader, node, path, [["gpu"]]);
}

/** Device requests, as under `deploy.resources.reservations.devices` (`capabilities` required unless given). */
export function readDeviceRequests(
  reader: Reader,
  node: Node | null,
  path: string,
  defaultCapabilities?: string[][],
): NormalizedDeviceRequest[] {
  const out: NormalizedDeviceRequest[] = [];
  (reader.items(node, path) ?? []).forEach((item, index) => {
    const itemPath = child(path, index);
    const keys = checkMapping(reader, item, itemPath, DEVICE_REQUEST_KEYS, {
      where: "a device request",
    });
    const request: NormalizedDeviceRequest = { capabilities: defaultCapabilities ?? [] };
    const capabilities = keys.get("capabilities");
    if (capabilities !== undefined) {
      request.capabilities = [reader.textList(capabilities.value, capabilities.path) ?? []];
    } else if (defaultCapabilities === undefined) {
      reader.fail(item, itemPath, `missing required key "capabilities"`);
    }
    const driver = keys.get("driver");
    if (driver !== undefined && driver.value !== null) {
      request.driver = reader.text(driver.value, driver.path);
    }
    const count = keys.get("count");
    if (count !== undefined && count.value !== null) {
      const value = isScalar(count.value) && count.value.value === "all"
        ? -1
        : reader.integer(count.value, count.path, 1);
      if (value !== undefined) request.count = value;
    }
    const ids = keys.get("device_ids");
    if (ids !== undefined && ids.value !== null) {
      request.deviceIds = reader.textList(ids.value, ids.path) ?? [];
      if (request.count !== undefined) {
        reader.fail(ids.keyNode, ids.path, `"count" and "device_ids" cannot both be set`);
      }
    }
    const options = keys.get("options");
    if (options !== undefined && options.value !== null) {
      const map: Record<string, string> = {};
      for (const [key, entry] of reader.keyValues(options.value, options.path) ?? []) {
        map[key] = entry.value ?? "";
      }
      request.options = sorted(map);
    }
    if (request.count === undefined && request.deviceIds === undefined) request.count = -1;
    out.push(request);
  });
  return out;
}
