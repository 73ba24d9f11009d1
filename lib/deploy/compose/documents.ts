/**
 * The compose documents of one Project: each file read and parsed within its bounds, the files named by
 * `include:` followed once each and their resources added, and one pass that refuses duplicate keys and
 * interpolates every scalar value.
 *
 * @module
 */

import { dirname, isAbsolute, join, resolve as resolvePath } from "node:path";
import {
  type Document,
  isAlias,
  isMap,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  type Node,
  Pair,
  parseDocument,
  YAMLMap,
} from "yaml";
import { interpolate } from "./interpolate.ts";
import { ComposeError, type ComposeIssue } from "./issue.ts";
import {
  MAX_COMPOSE_BYTES,
  MAX_FILE_BYTES,
  MAX_UNSET_WARNINGS,
  oversize,
  readBoundedFile,
} from "./limits.ts";
import { child, type Reader } from "./reader.ts";
import { fileErrorReason } from "./service_fields.ts";

/** Reads a compose file from disk, refusing one larger than a compose file may be. */
export function defaultReadFile(path: string): string {
  return readBoundedFile(path, MAX_FILE_BYTES);
}

/** One parsed file of a `-f` list or an `include`. */
interface ParsedFile {
  file: string;
  text: string;
  doc: Document;
  lineCounter: LineCounter;
}

/** Most files one Project may be loaded from, `-f` files and includes together. */
export const MAX_FILES = 32;

/** Reads (unless `text` is given) and parses one compose file; a read, size or YAML problem throws a ComposeError. */
export function parseFile(
  file: string,
  text: string | undefined,
  readFile: (path: string) => string,
): ParsedFile {
  let source = text;
  if (source === undefined) {
    try {
      source = readFile(file);
    } catch (error) {
      throw new ComposeError(file, [issue(file, `cannot read compose file: ${fileErrorReason(error)}`)]);
    }
  }
  const size = oversize(source, MAX_COMPOSE_BYTES);
  if (size !== undefined) {
    throw new ComposeError(file, [
      issue(file, `the compose file is ${size} bytes, more than the limit of ${MAX_COMPOSE_BYTES}`),
    ]);
  }
  const lineCounter = new LineCounter();
  // Duplicate keys are found below in one pass: the library's own check compares every pair of keys.
  const doc = parseDocument(source, { lineCounter, merge: true, prettyErrors: false, uniqueKeys: false });
  if (doc.errors.length > 0) {
    throw new ComposeError(
      file,
      doc.errors.map((error) => {
        const { line, col } = lineCounter.linePos(error.pos[0]);
        return { file, line, column: col, path: "", message: yamlMessage(error.code, error.message) };
      }),
    );
  }
  return { file, text: source, doc, lineCounter };
}

/** The files named by `include:` in `parts` and, in turn, in those files, each parsed once. */
export function readIncludes(
  reader: Reader,
  parts: ParsedFile[],
  env: Readonly<Record<string, string>>,
  readFile: (path: string) => string,
): ParsedFile[] {
  const out: ParsedFile[] = [];
  const seen = new Set(parts.map((part) => resolvePath(part.file)));
  const queue = [...parts];
  while (queue.length > 0) {
    const part = queue.shift()!;
    const root = part.doc.contents as Node | null;
    if (!isMap(root)) continue;
    const pair = root.items.find((item) => isScalar(item.key) && item.key.value === "include");
    if (pair === undefined || pair.value === null) continue;
    const list = isSeq(pair.value) ? pair.value.items : [pair.value];
    list.forEach((item, index) => {
      const where = `include[${index}]`;
      let target: unknown = item;
      if (isMap(item)) {
        const path = item.items.find((entry) => isScalar(entry.key) && entry.key.value === "path");
        target = path?.value;
        for (const entry of item.items) {
          const name = isScalar(entry.key) ? String(entry.key.value) : "?";
          if (name !== "path") {
            reader.fail(entry.key as Node, `${where}.${name}`, `key "${name}" in include is not supported`);
          }
        }
      }
      if (!isScalar(target) || typeof target.value !== "string") {
        reader.fail(item as Node, where, `expected a path to a compose file`);
        return;
      }
      const path = isAbsolute(target.value) ? target.value : join(dirname(part.file), target.value);
      if (seen.has(resolvePath(path))) {
        reader.fail(target, where, `"${target.value}" is already part of this Project: an include cycle`);
        return;
      }
      if (seen.size >= MAX_FILES) {
        reader.fail(target, where, `more than ${MAX_FILES} compose files`);
        return;
      }
      seen.add(resolvePath(path));
      try {
        const loaded = parseFile(path, undefined, readFile);
        out.push(loaded);
        queue.push(loaded);
      } catch (error) {
        if (!(error instanceof ComposeError)) throw error;
        for (const problem of error.issues) {
          if (problem.line > 0) {
            reader.errors.push(problem);
          } else {
            const message = problem.message.replace(
              /^cannot read compose file/,
              `cannot read "${target.value}"`,
            );
            reader.fail(target, where, message);
          }
        }
      }
    });
  }
  void env;
  return out;
}

/**
 * Adds an included file's resources to the Project. Compose refuses a resource defined both by a file and by what
 * it includes; so does this.
 */
export function addIncluded(reader: Reader, root: Node | null, part: ParsedFile): void {
  const included = part.doc.contents as Node | null;
  if (!isMap(root) || !isMap(included)) return;
  for (const section of ["services", "volumes", "secrets", "configs", "networks"]) {
    const from = included.items.find((item) => isScalar(item.key) && item.key.value === section);
    if (from === undefined || !isMap(from.value)) continue;
    let into = root.items.find((item) => isScalar(item.key) && item.key.value === section);
    if (into === undefined || !isMap(into.value)) {
      into = new Pair(from.key, new YAMLMap());
      root.items.push(into);
    }
    const target = into.value as YAMLMap;
    for (const pair of from.value.items) {
      const name = isScalar(pair.key) ? String(pair.key.value) : "?";
      const clash = target.items.find((item) => isScalar(item.key) && String(item.key.value) === name);
      if (clash !== undefined) {
        reader.fail(
          pair.key as Node,
          `${section}.${name}`,
          `${section.replace(/s$/, "")} "${name}" is defined both here and in "${
            reader.origins.get(clash.key)?.file ?? reader.file
          }"`,
        );
        continue;
      }
      // An included file's relative paths resolve against its own directory.
      if (section === "services") reader.serviceDirs.set(pair.key, dirname(part.file));
      target.items.push(pair);
    }
  }
}

/** An issue of a whole file, with no position in it. */
export function issue(file: string, message: string): ComposeIssue {
  return { file, line: 0, column: 0, path: "", message };
}

function yamlMessage(code: string, message: string): string {
  const text = message.replace(/ at line \d+, column \d+.*$/s, "");
  const sentence = text.charAt(0).toUpperCase() + text.slice(1);
  return code === "DUPLICATE_KEY"
    ? "Duplicate key: map keys must be unique"
    : `Invalid YAML: ${sentence.replace(/\.$/, "")}`;
}

/**
 * One pass over the document, without following aliases: refuses duplicate keys and interpolates every scalar
 * value (never keys) once, in place. Iterative, so a deeply nested document cannot exhaust the stack.
 */
export function checkDocument(
  reader: Reader,
  env: Readonly<Record<string, string>>,
  part: ParsedFile,
): number {
  let duplicates = 0;
  // Nodes of the first file are located by the reader itself; those of any other file remember theirs.
  const origin = part.file === reader.file && part.doc === reader.doc
    ? undefined
    : { file: part.file, lineCounter: part.lineCounter };
  const warned = new Set<string>();
  let unwarned = 0;
  let firstUnwarned: { node: Node; path: string } | undefined;
  const stack: { node: unknown; path: string }[] = [{ node: part.doc.contents, path: "" }];
  // Aliases are resolved here, once, in document order: the library's own lookup walks the whole document
  // for every alias.
  const anchors = new Map<string, Node>();
  reader.aliases = new Map();
  while (stack.length > 0) {
    const { node, path } = stack.pop()!;
    if (origin !== undefined && node !== null && typeof node === "object") reader.origins.set(node, origin);
    const anchor = (node as { anchor?: unknown } | null)?.anchor;
    if (typeof anchor === "string") anchors.set(anchor, node as Node);
    if (isAlias(node)) {
      const target = anchors.get(node.source);
      if (target !== undefined) reader.aliases.set(node, target);
    } else if (isMap(node)) {
      const keys = new Set<string>();
      const children: { node: unknown; path: string }[] = [];
      for (const pair of node.items) {
        if (!isPair(pair)) continue;
        const keyNode = pair.key as Node | null;
        if (origin !== undefined && keyNode !== null) reader.origins.set(keyNode, origin);
        const merge = isScalar(keyNode) && (typeof keyNode.value === "symbol" || keyNode.source === "<<");
        const key = !isScalar(keyNode) ? "?" : merge ? "<<" : String(keyNode.value);
        if (isScalar(keyNode) && !merge) {
          if (keys.has(key)) {
            duplicates++;
            reader.fail(keyNode, child(path, key), "Duplicate key: map keys must be unique");
          }
          keys.add(key);
        }
        children.push({ node: pair.value, path: child(path, key) });
      }
      // Pushed last-first so values are interpolated, and unset variables warned about, in file order.
      for (let index = children.length - 1; index >= 0; index--) stack.push(children[index]);
    } else if (isSeq(node)) {
      for (let index = node.items.length - 1; index >= 0; index--) {
        stack.push({ node: node.items[index], path: `${path}[${index}]` });
      }
    } else if (isScalar(node) && typeof node.value === "string") {
      const result = interpolate(node.value, env);
      if (!result.ok) {
        reader.fail(node, path, result.error);
        continue;
      }
      for (const name of result.unset) {
        if (warned.has(name)) continue;
        warned.add(name);
        if (warned.size > MAX_UNSET_WARNINGS) {
          unwarned++;
          firstUnwarned ??= { node, path };
          continue;
        }
        reader.warn(node, path, `variable "${name}" is not set: using an empty string`);
      }
      node.value = result.value;
    }
  }
  if (unwarned > 0 && firstUnwarned !== undefined) {
    reader.warn(
      firstUnwarned.node,
      firstUnwarned.path,
      `${unwarned} more variables are not set: using empty strings`,
    );
  }
  return duplicates;
}
