/**
 * Typed reads from a parsed YAML document that keep every key's position, so each problem is reported with
 * its file, line and column and loading continues to find the next one.
 *
 * @module
 */

import {
  type Document,
  isAlias,
  isMap,
  isScalar,
  isSeq,
  type LineCounter,
  type Node,
  type YAMLMap,
  type YAMLSeq,
} from "yaml";
import type { ComposeIssue } from "./issue.ts";
import { MAX_NODE_VISITS } from "./limits.ts";

/** A mapping key and its value before the path is known. */
interface RawEntry {
  key: string;
  keyNode: Node;
  value: Node | null;
}

/**
 * Thrown when a file makes the loader visit more nodes than {@linkcode MAX_NODE_VISITS} (alias and merge-key
 * expansion); the loader turns it into one problem at `node`.
 */
export class TooComplex extends Error {
  /** Where the limit was reached. */
  readonly node: Node | null;
  /** Builds the error for `node`. */
  constructor(node: Node | null) {
    super(
      `the file expands to more than ${MAX_NODE_VISITS} keys and items through aliases and merge keys`,
    );
    this.node = node;
  }
}

/** One key of a YAML mapping with its value (null for an explicit or missing null). */
export interface Entry {
  key: string;
  keyNode: Node;
  value: Node | null;
  path: string;
}

/**
 * Where problems and warnings for one file are collected, with the typed reads that report to it: each read
 * records a problem at the node's position and returns undefined when the node is not what it expects.
 */
export class Reader {
  readonly file: string;
  readonly doc: Document;
  readonly lineCounter: LineCounter;
  readonly errors: ComposeIssue[] = [];
  readonly warnings: ComposeIssue[] = [];
  /** The file of each node that came from another file than `file` (`-f` lists, `include`). */
  readonly origins: Map<unknown, { file: string; lineCounter: LineCounter }> = new Map();
  /** The directory relative paths of a Service resolve against, when it is not the first file's. */
  readonly serviceDirs: Map<unknown, string> = new Map();
  /** Each alias's anchored node, found in one pass over the document. */
  aliases?: Map<unknown, Node>;
  /** `line:column` of every error recorded, so a position is reported once without scanning the list. */
  #errorAt = new Set<string>();
  /** Mapping entries and list items visited so far; bounded by {@linkcode MAX_NODE_VISITS}. */
  #visits = 0;
  /** Each mapping's own and merged entries, computed once however often aliases and merge keys name it. */
  #merged = new Map<Node, RawEntry[]>();

  /** A reader of `doc`, the parsed text of `file`. */
  constructor(file: string, doc: Document, lineCounter: LineCounter) {
    this.file = file;
    this.doc = doc;
    this.lineCounter = lineCounter;
  }

  /** Counts `count` visits against the file's budget. */
  spend(count: number, node: Node | null): void {
    this.#visits += count;
    if (this.#visits > MAX_NODE_VISITS) throw new TooComplex(node);
  }

  #position(node: Node | null | undefined): { file: string; line: number; column: number } {
    // A node from another file of a `-f` list or an `include` is located in that file.
    const origin = node === null || node === undefined ? undefined : this.origins.get(node);
    const file = origin?.file ?? this.file;
    const offset = node?.range?.[0];
    if (offset === undefined) return { file, line: 0, column: 0 };
    const { line, col } = (origin?.lineCounter ?? this.lineCounter).linePos(offset);
    return { file, line, column: col };
  }

  /** Records a problem at `node`. */
  fail(node: Node | null | undefined, path: string, message: string): void {
    const at = this.#position(node);
    // One problem per position: a value that failed interpolation is not reported again as a bad port.
    const key = `${at.file}:${at.line}:${at.column}`;
    if (at.line > 0 && this.#errorAt.has(key)) return;
    this.#errorAt.add(key);
    this.errors.push({ ...at, path, message });
  }

  /** Records a warning at `node`. */
  warn(node: Node | null | undefined, path: string, message: string): void {
    this.warnings.push({ ...this.#position(node), path, message });
  }

  /** Follows an alias to the node it names; turns a null scalar into null. */
  resolve(node: unknown): Node | null {
    let current = node;
    for (let hops = 0; isAlias(current) && hops < 100; hops++) {
      current = this.aliases?.get(current) ?? current.resolve(this.doc);
    }
    if (current === undefined || current === null) return null;
    if (isScalar(current) && current.value === null) return null;
    return current as Node;
  }

  /**
   * The entries of a mapping in file order, with `<<` merge keys applied (explicit keys win). Reports and
   * returns undefined when the node is not a mapping.
   */
  entries(node: Node | null, path: string): Entry[] | undefined {
    if (node === null) return [];
    if (!isMap(node)) {
      this.fail(node, path, `expected a mapping, got ${describe(node)}`);
      return undefined;
    }
    const raw = this.#rawEntries(node, path);
    this.spend(raw.length, node);
    return raw.map((entry) => ({ ...entry, path: child(path, entry.key) }));
  }

  /** A mapping's entries with merge keys applied, computed once per mapping node. */
  #rawEntries(node: YAMLMap, path: string): RawEntry[] {
    const known = this.#merged.get(node);
    if (known !== undefined) return known;
    // A merge-key cycle (an anchor merging itself) finds this empty list instead of recursing forever.
    this.#merged.set(node, []);
    this.spend(node.items.length, node);
    const own: RawEntry[] = [];
    const merged: RawEntry[] = [];
    for (const pair of node.items) {
      const keyNode = pair.key as Node;
      if (isScalar(keyNode) && (typeof keyNode.value === "symbol" || keyNode.source === "<<")) {
        const sources = this.resolve(pair.value);
        const list = isSeq(sources) ? sources.items.map((item) => this.resolve(item)) : [sources];
        this.spend(list.length, sources);
        for (const source of list) {
          if (!isMap(source)) {
            this.fail(source, path, `expected a mapping, got ${describe(source)}`);
            continue;
          }
          merged.push(...this.#rawEntries(source, path));
        }
        continue;
      }
      const keyValue = isScalar(keyNode) ? keyNode.value : undefined;
      if (typeof keyValue !== "string" && typeof keyValue !== "number" && typeof keyValue !== "boolean") {
        this.fail(keyNode, path, `expected a string key, got ${describe(this.resolve(keyNode))}`);
        continue;
      }
      own.push({ key: scalarText(keyNode), keyNode, value: this.resolve(pair.value) });
    }
    const seen = new Set(own.map((entry) => entry.key));
    const result = [...own];
    for (const entry of merged) {
      if (seen.has(entry.key)) continue;
      seen.add(entry.key);
      result.push(entry);
    }
    this.#merged.set(node, result);
    return result;
  }

  /** The items of a list, resolved. Reports and returns undefined when the node is not a list. */
  items(node: Node | null, path: string): (Node | null)[] | undefined {
    if (node === null) return [];
    if (!isSeq(node)) {
      this.fail(node, path, `expected a list, got ${describe(node)}`);
      return undefined;
    }
    this.spend(node.items.length, node);
    return node.items.map((item) => this.resolve(item));
  }

  /** A scalar as text (numbers and booleans as written). Reports and returns undefined otherwise. */
  text(node: Node | null, path: string): string | undefined {
    if (node !== null && isScalar(node) && node.value !== null && typeof node.value !== "object") {
      return scalarText(node);
    }
    this.fail(node, path, `expected a string, got ${describe(node)}`);
    return undefined;
  }

  /** A whole number at least `min` (and at most `max` when given), from a number or a string of digits. */
  integer(node: Node | null, path: string, min: number, max?: number): number | undefined {
    if (node !== null && isScalar(node)) {
      const value = node.value;
      const number = typeof value === "number"
        ? value
        : typeof value === "string" && /^\s*-?\d+\s*$/.test(value)
        ? Number(value)
        : undefined;
      if (number !== undefined && Number.isSafeInteger(number) && number >= min) {
        if (max === undefined || number <= max) return number;
        this.fail(node, path, `expected a whole number from ${min} to ${max}, got ${describe(node)}`);
        return undefined;
      }
    }
    this.fail(node, path, `expected a whole number of at least ${min}, got ${describe(node)}`);
    return undefined;
  }

  /** A number, from a number or a numeric string. */
  decimal(node: Node | null, path: string): number | undefined {
    if (node !== null && isScalar(node)) {
      const value = node.value;
      const number = typeof value === "number"
        ? value
        : typeof value === "string" && /^\s*\d+(\.\d+)?\s*$/.test(value)
        ? Number(value)
        : undefined;
      if (number !== undefined && Number.isFinite(number) && number >= 0) return number;
    }
    this.fail(node, path, `expected a non-negative number, got ${describe(node)}`);
    return undefined;
  }

  /** A boolean, from `true`/`false` or those words as strings. */
  boolean(node: Node | null, path: string): boolean | undefined {
    if (node !== null && isScalar(node)) {
      if (typeof node.value === "boolean") return node.value;
      if (node.value === "true") return true;
      if (node.value === "false") return false;
    }
    this.fail(node, path, `expected true or false, got ${describe(node)}`);
    return undefined;
  }

  /** A list of scalars as text. A single string is accepted as a one-item list when `single` is set. */
  textList(
    node: Node | null,
    path: string,
    options: { single?: "one" | "comma" } = {},
  ): string[] | undefined {
    if (node !== null && isScalar(node) && options.single !== undefined) {
      const value = this.text(node, path);
      if (value === undefined) return undefined;
      return options.single === "one" ? [value] : value.split(",").map((part) => part.trim());
    }
    const list = this.items(node, path);
    if (list === undefined) return undefined;
    const out: string[] = [];
    let ok = true;
    list.forEach((item, index) => {
      const value = this.text(item, child(path, index));
      if (value === undefined) ok = false;
      else out.push(value);
    });
    return ok ? out : undefined;
  }

  /**
   * A `KEY=VALUE` list or a mapping, as Compose writes `environment` and `labels`. A key with no value maps to
   * undefined so the caller can decide (environment takes it from the caller's env).
   */
  keyValues(
    node: Node | null,
    path: string,
  ): Map<string, { value: string | undefined; node: Node | null; path: string }> | undefined {
    const out = new Map<string, { value: string | undefined; node: Node | null; path: string }>();
    if (node !== null && isSeq(node)) {
      const list = this.items(node, path) ?? [];
      list.forEach((item, index) => {
        const itemPath = child(path, index);
        const entry = this.text(item, itemPath);
        if (entry === undefined) return;
        const equals = entry.indexOf("=");
        const key = equals < 0 ? entry : entry.slice(0, equals);
        if (key === "") {
          this.fail(item, itemPath, `invalid entry "${entry}": expected KEY=VALUE`);
          return;
        }
        out.set(key, { value: equals < 0 ? undefined : entry.slice(equals + 1), node: item, path: itemPath });
      });
      return out;
    }
    const list = this.entries(node, path);
    if (list === undefined) return undefined;
    for (const entry of list) {
      if (entry.value === null) {
        out.set(entry.key, { value: undefined, node: entry.keyNode, path: entry.path });
        continue;
      }
      const value = this.text(entry.value, entry.path);
      if (value !== undefined) out.set(entry.key, { value, node: entry.value, path: entry.path });
    }
    return out;
  }
}

/** Appends `key` (or an index) to a dotted path. */
export function child(path: string, key: string | number): string {
  if (typeof key === "number") return `${path}[${key}]`;
  return path === "" ? key : `${path}.${key}`;
}

/** Names a node's type for error messages. */
export function describe(node: Node | null): string {
  if (node === null) return "null";
  if (isMap(node)) return "a mapping";
  if (isSeq(node)) return "a list";
  if (isScalar(node)) {
    const value = node.value;
    if (typeof value === "string") return `the string "${value}"`;
    if (typeof value === "number") return `the number ${scalarText(node)}`;
    if (typeof value === "boolean") return `the boolean ${value}`;
  }
  return "an unsupported value";
}

/** The text of a scalar as written (so `1.0` stays `1.0`), or its value when it has no source text. */
function scalarText(node: Node): string {
  if (!isScalar(node)) return "";
  if (typeof node.value === "string") return node.value;
  const source = (node as { source?: unknown }).source;
  return typeof source === "string" ? source : String(node.value);
}

/** True when the node is a mapping. */
export function isMapping(node: Node | null | undefined): node is YAMLMap {
  return isMap(node);
}

/** True when the node is a list. */
export function isList(node: Node | null | undefined): node is YAMLSeq {
  return isSeq(node);
}

/** A plain object with keys sorted, for stable JSON. */
export function sorted<T>(record: Record<string, T> | Map<string, T>): Record<string, T> {
  const pairs = record instanceof Map ? [...record.entries()] : Object.entries(record);
  pairs.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(pairs);
}
