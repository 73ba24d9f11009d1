/**
 * Field readers shared by services, builds, volumes and extensions: commands, durations, byte sizes, labels.
 *
 * @module
 */

import { isScalar, type Node } from "yaml";
import { child, describe, type Reader, sorted } from "./reader.ts";
import { parseBytes, parseDurationMs } from "./units.ts";
import { messageOf } from "../../util/mod.ts";

/**
 * Splits a command string into words the way a POSIX shell would, without expanding anything: whitespace
 * separates words, single quotes are literal, double quotes and backslashes escape. Returns undefined when a
 * quote is left open.
 */
export function shellSplit(line: string): string[] | undefined {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  for (let i = 0; i < line.length; i++) {
    const char = line[i];
    if (char === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) return undefined;
      word += line.slice(i + 1, end);
      inWord = true;
      i = end;
    } else if (char === '"') {
      inWord = true;
      i++;
      for (; i < line.length && line[i] !== '"'; i++) {
        if (line[i] === "\\" && i + 1 < line.length && '"\\$`'.includes(line[i + 1])) i++;
        word += line[i];
      }
      if (i >= line.length) return undefined;
    } else if (char === "\\") {
      if (i + 1 < line.length) word += line[++i];
      inWord = true;
    } else if (/\s/.test(char)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
    } else {
      word += char;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/**
 * Reads `command`/`entrypoint`: a string split into words, or a list of strings, as the Compose schema says
 * (`command: 42` is refused, not run as `["42"]`). Null means "use the image's".
 */
export function readCommand(reader: Reader, node: Node | null, path: string): string[] | null {
  if (node === null) return null;
  if (isScalar(node)) {
    if (typeof node.value !== "string") {
      reader.fail(node, path, `expected a string or a list of strings, got ${describe(node)}`);
      return null;
    }
    const line = node.value;
    const words = shellSplit(line);
    if (words === undefined) {
      reader.fail(node, path, `invalid command "${line}": unterminated quote`);
      return null;
    }
    return words;
  }
  const list = reader.items(node, path);
  if (list === undefined) return null;
  const out: string[] = [];
  list.forEach((item, index) => {
    if (item !== null && isScalar(item) && typeof item.value === "string") {
      out.push(item.value);
    } else {
      reader.fail(item, child(path, index), `expected a string, got ${describe(item)}`);
    }
  });
  return out;
}

/** Reads an optional duration into milliseconds. */
export function readDuration(reader: Reader, node: Node | null | undefined, path: string): number | null {
  return readQuantity(reader, node, path, parseDurationMs);
}

/** Reads an optional byte size. */
export function readBytes(reader: Reader, node: Node | null | undefined, path: string): number | null {
  return readQuantity(reader, node, path, parseBytes);
}

/** Reads an optional scalar with `parse`, failing with the reason it gives. */
function readQuantity(
  reader: Reader,
  node: Node | null | undefined,
  path: string,
  parse: (raw: string) => number | { error: string },
): number | null {
  if (node === undefined || node === null) return null;
  const raw = reader.text(node, path);
  if (raw === undefined) return null;
  const parsed = parse(raw);
  if (typeof parsed === "number") return parsed;
  reader.fail(node, path, parsed.error);
  return null;
}

/** A short reason a file could not be read, without a stack trace. */
export function fileErrorReason(error: unknown): string {
  if (error instanceof Deno.errors.NotFound) return "no such file";
  if (error instanceof Error && "code" in error && error.code === "ENOENT") return "no such file";
  if (error instanceof Deno.errors.PermissionDenied) return "permission denied";
  return messageOf(error);
}

/** `labels:` as a map or a `KEY=VALUE` list, sorted; the `ployz.` prefix is refused, as Ployz owns it. */
export function readLabels(reader: Reader, node: Node | null, path: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, item] of reader.keyValues(node, path) ?? []) {
    if (key.startsWith("ployz.")) {
      reader.fail(
        item.node,
        item.path,
        `label "${key}" is reserved: the "ployz." prefix marks what Ployz owns`,
      );
      continue;
    }
    out[key] = item.value ?? "";
  }
  return sorted(out);
}
