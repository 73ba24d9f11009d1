/**
 * Reads a service's `ports` and `x-ports` with positions; the string grammar lives in ports.ts.
 *
 * @module
 */

import { isScalar } from "yaml";
import { checkMapping, PORT_KEYS } from "./keys.ts";
import { parseExtensionPort, parseHostIp, parsePortNumber, parseShortPort, standardPort } from "./ports.ts";
import { child, type Entry, isMapping, type Reader } from "./reader.ts";
import type { NormalizedPort } from "./types.ts";

/** Reads `ports` or `x-ports` (never both). */
export function readPorts(
  reader: Reader,
  ports: Entry | undefined,
  extension: Entry | undefined,
): NormalizedPort[] {
  const hasPorts = ports !== undefined && ports.value !== null;
  const hasExtension = extension !== undefined && extension.value !== null;
  if (hasPorts && hasExtension) {
    reader.fail(extension.keyNode, extension.path, `"ports" and "x-ports" cannot both be set: use one`);
    return [];
  }
  const out: NormalizedPort[] = [];
  if (hasExtension) {
    const node = extension.value;
    const list = isScalar(node)
      ? (reader.text(node, extension.path) ?? "").split(",").map((value) => ({
        value: value.trim(),
        node,
        path: extension.path,
      }))
      : (reader.items(node, extension.path) ?? []).map((item, index) => ({
        value: reader.text(item, child(extension.path, index)),
        node: item,
        path: child(extension.path, index),
      }));
    for (const item of list) {
      if (item.value === undefined) continue;
      const parsed = parseExtensionPort(item.value);
      if (parsed.ok) out.push(parsed.value);
      else reader.fail(item.node, item.path, parsed.error);
    }
    return out;
  }
  if (!hasPorts) return out;
  (reader.items(ports.value, ports.path) ?? []).forEach((item, index) => {
    const path = child(ports.path, index);
    if (isMapping(item)) {
      const port = longPort(reader, item, path);
      if (port !== undefined) out.push(port);
      return;
    }
    const value = reader.text(item, path);
    if (value === undefined) return;
    const parsed = parseShortPort(value);
    if (!parsed.ok) {
      reader.fail(item, path, parsed.error);
      return;
    }
    for (const part of parsed.value) {
      const port = standardPort(part, "host", value);
      if (port.ok) out.push(port.value);
      else reader.fail(item, path, port.error);
    }
  });
  return out;
}

function longPort(
  reader: Reader,
  node: NonNullable<Entry["value"]>,
  path: string,
): NormalizedPort | undefined {
  const keys = checkMapping(reader, node, path, PORT_KEYS, { where: "port" });
  const field = (key: string): string | undefined => {
    const entry = keys.get(key);
    if (entry === undefined || entry.value === null) return undefined;
    return reader.text(entry.value, entry.path);
  };
  const where = (key: string): { node: Entry["value"]; path: string } => ({
    node: keys.get(key)?.value ?? node,
    path: keys.has(key) ? child(path, key) : path,
  });
  const errorsBefore = reader.errors.length;
  const targetText = field("target");
  if (targetText === undefined && !keys.has("target")) {
    reader.fail(node, path, `missing required key "target"`);
  }
  const target = targetText === undefined ? undefined : parsePortNumber(targetText, "container");
  if (target !== undefined && !target.ok) {
    reader.fail(where("target").node, where("target").path, target.error);
  }
  const publishedText = field("published");
  const published = publishedText === undefined ? undefined : parsePortNumber(publishedText, "published");
  if (published !== undefined && !published.ok) {
    reader.fail(where("published").node, where("published").path, published.error);
  }
  const hostIp = parseHostIp(field("host_ip"));
  if (!hostIp.ok) reader.fail(where("host_ip").node, where("host_ip").path, hostIp.error);
  const protocol = field("protocol") ?? "tcp";
  if (protocol !== "tcp" && protocol !== "udp") {
    reader.fail(
      where("protocol").node,
      where("protocol").path,
      `unsupported protocol "${protocol}": expected "tcp" or "udp"`,
    );
  }
  const mode = field("mode") ?? "host";
  if (reader.errors.length > errorsBefore || target === undefined || !target.ok || !hostIp.ok) {
    return undefined;
  }
  const result = standardPort(
    {
      hostIp: hostIp.value,
      published: published?.ok ? published.value : null,
      target: target.value,
      protocol: protocol as "tcp" | "udp",
    },
    mode,
    publishedText === undefined ? targetText ?? "" : `${publishedText}:${targetText}`,
  );
  if (result.ok) return result.value;
  reader.fail(where("mode").node, where("mode").path, result.error);
  return undefined;
}
