/**
 * Several Compose files as one, the way `docker compose -f a.yaml -f b.yaml` reads them: mappings merge key by key,
 * a later file's scalar wins, `command`, `entrypoint` and `healthcheck.test` are replaced whole, `environment`,
 * `labels`, `extra_hosts`, `sysctls` and `annotations` merge by name in either form, `volumes`, `devices`, `secrets`
 * and `configs` merge by target, and other lists append what they do not hold yet. Merged nodes keep their own
 * file and position, so a problem still names the file, line and column it came from.
 *
 * @module
 */

import { isMap, isScalar, isSeq, type Node, Pair, Scalar, YAMLMap, YAMLSeq } from "yaml";
import type { Reader } from "./reader.ts";

/** Lists replaced whole by a later file. */
const REPLACED = new Set(["command", "entrypoint", "test"]);
/** Lists that are really mappings written as `KEY=VALUE` (or `host:address`). */
const KEYED = new Set(["environment", "labels", "extra_hosts", "sysctls", "annotations"]);
/** Lists whose items are identified by where they mount. */
const BY_TARGET = new Set(["volumes", "devices", "secrets", "configs"]);

function keyText(node: unknown): string {
  if (!isScalar(node)) return "?";
  return String((node as Scalar).source ?? (node as Scalar).value);
}

function scalarText(node: unknown): string | undefined {
  return isScalar(node) && node.value !== null && typeof node.value !== "object"
    ? String(node.value)
    : undefined;
}

/** Gives a node built here the position and file of the node it stands for. */
function like<T extends Node>(reader: Reader, made: T, from: Node | null | undefined): T {
  if (from === null || from === undefined) return made;
  made.range = from.range;
  const origin = reader.origins.get(from);
  if (origin !== undefined) reader.origins.set(made, origin);
  return made;
}

/** A `KEY=VALUE` list as a mapping; mappings are returned as they are. */
function asMapping(reader: Reader, key: string, node: Node): YAMLMap | undefined {
  if (isMap(node)) return node;
  if (!isSeq(node)) return undefined;
  const map = like(reader, new YAMLMap(), node);
  for (const item of node.items) {
    const text = scalarText(item);
    if (text === undefined) return undefined;
    const separator = key === "extra_hosts" ? /[=:]/ : /=/;
    const match = separator.exec(text);
    const name = match === null ? text : text.slice(0, match.index);
    const value = match === null ? null : text.slice(match.index + 1);
    map.items.push(
      new Pair(like(reader, new Scalar(name), item as Node), like(reader, new Scalar(value), item as Node)),
    );
  }
  return map;
}

/** Where a `volumes`/`devices`/`secrets`/`configs` item mounts, to recognise the same mount in two files. */
function targetOf(item: unknown): string {
  if (isMap(item)) {
    const target = item.items.find((pair) => keyText(pair.key) === "target");
    const source = item.items.find((pair) => keyText(pair.key) === "source");
    return scalarText(target?.value) ?? scalarText(source?.value) ?? JSON.stringify(item.toJSON());
  }
  const text = scalarText(item) ?? "";
  const parts = text.split(":");
  return parts.length === 1 ? text : parts[1];
}

function sameItem(a: unknown, b: unknown): boolean {
  const left = scalarText(a);
  if (left !== undefined) return left === scalarText(b);
  return isMap(a) && isMap(b) && JSON.stringify(a.toJSON()) === JSON.stringify(b.toJSON());
}

/** `over` merged onto `base` (both from parsed files, neither changed). */
export function mergeNodes(reader: Reader, key: string, base: Node | null, over: Node | null): Node | null {
  if (over === null || base === null) return over ?? base;
  if (isScalar(over) && over.value === null) return base;
  if (REPLACED.has(key)) return over;
  if (KEYED.has(key) && (isSeq(base) || isSeq(over))) {
    const left = asMapping(reader, key, base);
    const right = asMapping(reader, key, over);
    if (left !== undefined && right !== undefined) return mergeMaps(reader, left, right, false);
    return over;
  }
  if (isMap(base) && isMap(over)) return mergeMaps(reader, base, over, true);
  if (isSeq(base) && isSeq(over)) {
    const list = like(reader, new YAMLSeq(), over);
    if (BY_TARGET.has(key)) {
      const replaced = new Set(over.items.map(targetOf));
      list.items.push(...base.items.filter((item) => !replaced.has(targetOf(item))), ...over.items);
    } else {
      list.items.push(...base.items);
      for (const item of over.items) {
        if (!list.items.some((known) => sameItem(known, item))) list.items.push(item);
      }
    }
    return list;
  }
  return over;
}

function mergeMaps(reader: Reader, base: YAMLMap, over: YAMLMap, deep: boolean): YAMLMap {
  const map = like(reader, new YAMLMap(), over);
  const index = new Map<string, number>();
  for (const pair of base.items) {
    index.set(keyText(pair.key), map.items.length);
    map.items.push(pair);
  }
  for (const pair of over.items) {
    const name = keyText(pair.key);
    const at = index.get(name);
    if (at === undefined || name === "<<") {
      index.set(name, map.items.length);
      map.items.push(pair);
      continue;
    }
    const value = deep
      ? mergeNodes(reader, name, map.items[at].value as Node | null, pair.value as Node | null)
      : pair.value;
    map.items[at] = new Pair(pair.key, value);
  }
  return map;
}
