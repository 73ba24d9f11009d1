/**
 * Files a container gets from the operator's side: Compose `secrets` and `configs` (from `file:`, `environment:` or,
 * for configs, `content:`), and relative bind mounts (`./nginx.conf:/etc/nginx/nginx.conf:ro`, or a directory up to
 * {@linkcode MAX_SHIPPED_BYTES}). A Machine has no copy of the directory the compose file sits in, so each file's
 * content travels with the create request to every Machine that runs the slot. The normalized Project keeps only
 * each file's digest and size — never its content — so Saved State and Deployment records hold no secret, and a
 * changed content is a changed spec.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { isAbsolute, join, normalize, relative } from "node:path";
import { isScalar, type Node } from "yaml";
import { absolutePathProblem } from "./names.ts";
import { child, isMapping, type Reader } from "./reader.ts";
import type { NormalizedFile } from "./types.ts";
import { fileErrorReason } from "./service_fields.ts";

/**
 * Most bytes one Service's shipped files (secrets, configs, relative binds) may hold, counted before anything is
 * sent: they travel base64-encoded inside one Machine RPC request, whose body is capped at 4 MiB.
 */
export const MAX_SHIPPED_BYTES = 2 * 1024 * 1024;
/** Most files one relative directory bind may hold. */
const MAX_DIRECTORY_FILES = 1000;

/** A top-level secret or config: where its content comes from. */
export interface FileSource {
  /** The content, or undefined when it could not be read (already reported). */
  content: Uint8Array | undefined;
  /** The YAML node naming it, for problems. */
  node: Node | null;
}

/** The content of every shipped file of a load, by digest; never saved anywhere. */
export type FileContents = Map<string, Uint8Array>;

function digestOf(content: Uint8Array): string {
  return `sha256:${createHash("sha256").update(content).digest("hex")}`;
}

/** Reads a regular file as bytes, refusing anything larger than `limit`. */
function readBytesBounded(path: string, limit: number): Uint8Array {
  const info = Deno.statSync(path);
  if (!info.isFile) throw new Error("not a regular file");
  if (info.size > limit) throw new Error(`it is ${info.size} bytes, more than the limit of ${limit}`);
  return Deno.readFileSync(path);
}

/**
 * Reads top-level `secrets` or `configs`. `external: true` is refused: Ployz has no store of its own to look a
 * name up in.
 */
export function readFileSources(
  reader: Reader,
  node: Node | null,
  path: string,
  kind: "secret" | "config",
  baseDir: string,
  env: Readonly<Record<string, string>>,
): Map<string, FileSource> {
  const out = new Map<string, FileSource>();
  for (const entry of reader.entries(node, path) ?? []) {
    if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(entry.key)) {
      reader.fail(entry.keyNode, entry.path, `invalid ${kind} name "${entry.key}"`);
      continue;
    }
    const fields = new Map((reader.entries(entry.value, entry.path) ?? []).map((item) => [item.key, item]));
    const sources = ["file", "environment", "content", "external"].filter((key) => fields.has(key));
    for (const key of fields.keys()) {
      if (!["file", "environment", "content", "external", "name"].includes(key) && !key.startsWith("x-")) {
        const field = fields.get(key)!;
        reader.fail(field.keyNode, field.path, `unknown key "${key}" in a ${kind}`);
      }
    }
    if (sources.length !== 1 || (kind === "secret" && sources[0] === "content")) {
      reader.fail(
        entry.keyNode,
        entry.path,
        `${kind} "${entry.key}" needs exactly one of "file", "environment"${
          kind === "config" ? ', "content"' : ""
        }`,
      );
      continue;
    }
    const field = fields.get(sources[0])!;
    if (sources[0] === "external") {
      reader.fail(
        field.keyNode,
        field.path,
        `external ${kind}s are not supported: Ployz keeps no ${kind} store; give its "file" or "environment"`,
      );
      continue;
    }
    const value = reader.text(field.value, field.path);
    if (value === undefined) continue;
    let content: Uint8Array | undefined;
    if (sources[0] === "environment") {
      if (!Object.hasOwn(env, value)) {
        reader.fail(field.value, field.path, `${kind} "${entry.key}": variable "${value}" is not set`);
        continue;
      }
      content = new TextEncoder().encode(env[value]);
    } else if (sources[0] === "content") {
      content = new TextEncoder().encode(value);
    } else {
      const file = isAbsolute(value) ? value : join(baseDir, value);
      try {
        content = readBytesBounded(file, MAX_SHIPPED_BYTES);
      } catch (error) {
        reader.fail(
          field.value,
          field.path,
          `cannot read ${kind} "${entry.key}" from "${value}": ${fileErrorReason(error)}`,
        );
        continue;
      }
    }
    out.set(entry.key, { content, node: field.value });
  }
  return out;
}

function mode(reader: Reader, node: Node | null, path: string): number | null {
  if (node === null) return null;
  // Compose writes modes in octal (0440) or decimal (288); YAML reads 0440 as a string or an octal number.
  const written = isScalar(node) ? String((node as { source?: unknown }).source ?? node.value) : "";
  if (/^0o?[0-7]{1,4}$/.test(written)) return parseInt(written.replace(/^0o?/, ""), 8);
  const value = reader.integer(node, path, 0, 0o7777);
  return value ?? null;
}

/** Reads a Service's `secrets` or `configs` references into shipped files. */
export function readFileRefs(
  reader: Reader,
  node: Node | null,
  path: string,
  kind: "secret" | "config",
  sources: ReadonlyMap<string, FileSource>,
  contents: FileContents,
): NormalizedFile[] {
  const out: NormalizedFile[] = [];
  (reader.items(node, path) ?? []).forEach((item, index) => {
    const itemPath = child(path, index);
    let source: string | undefined;
    let target: string | undefined;
    let uid: string | null = null;
    let gid: string | null = null;
    let fileMode: number | null = null;
    let at: Node | null = item;
    if (isMapping(item)) {
      for (const entry of reader.entries(item, itemPath) ?? []) {
        if (entry.key === "source") {
          source = reader.text(entry.value, entry.path);
          at = entry.value;
        } else if (entry.key === "target") target = reader.text(entry.value, entry.path);
        else if (entry.key === "uid") uid = reader.text(entry.value, entry.path) ?? null;
        else if (entry.key === "gid") gid = reader.text(entry.value, entry.path) ?? null;
        else if (entry.key === "mode") fileMode = mode(reader, entry.value, entry.path);
        else reader.fail(entry.keyNode, entry.path, `unknown key "${entry.key}" in a ${kind} reference`);
      }
    } else {
      source = reader.text(item, itemPath);
    }
    if (source === undefined) {
      reader.fail(item, itemPath, `missing required key "source"`);
      return;
    }
    const found = sources.get(source);
    if (found === undefined) {
      reader.fail(at, itemPath, `${kind} "${source}" is not declared under top-level "${kind}s"`);
      return;
    }
    // Compose's paths: a secret at /run/secrets/<name> (or a relative target under it), a config at /<name>.
    const base = kind === "secret" ? "/run/secrets" : "/";
    const resolved = target === undefined
      ? join(base, source)
      : isAbsolute(target)
      ? target
      : join(base, target);
    const problem = absolutePathProblem(`${kind} target`, resolved);
    if (problem !== undefined) {
      reader.fail(item, itemPath, problem);
      return;
    }
    for (const id of [uid, gid]) {
      if (id !== null && !/^\d{1,10}$/.test(id)) {
        reader.fail(item, itemPath, `invalid ${kind} owner "${id}": expected a numeric uid or gid`);
        return;
      }
    }
    if (found.content === undefined) return;
    const digest = digestOf(found.content);
    contents.set(digest, found.content);
    out.push({
      kind,
      name: source,
      target: resolved,
      uid,
      gid,
      mode: fileMode ?? (kind === "secret" ? 0o444 : 0o444),
      digest,
      size: found.content.length,
    });
  });
  return out;
}

/**
 * A relative bind mount shipped as files: one file, or every regular file under a directory (up to
 * {@linkcode MAX_SHIPPED_BYTES} in all, counted before anything is read whole).
 */
export function shipBind(
  reader: Reader,
  node: Node | null,
  path: string,
  source: string,
  target: string,
  baseDir: string,
  contents: FileContents,
): NormalizedFile[] {
  const root = normalize(join(baseDir, source));
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(root);
  } catch (error) {
    reader.fail(node, path, `cannot read bind mount source "${source}": ${fileErrorReason(error)}`);
    return [];
  }
  const files: { path: string; target: string; size: number; mode: number }[] = [];
  if (info.isFile) {
    files.push({ path: root, target, size: info.size, mode: (info.mode ?? 0o644) & 0o777 });
  } else if (info.isDirectory) {
    const stack = [root];
    while (stack.length > 0) {
      const dir = stack.pop()!;
      for (const entry of Deno.readDirSync(dir)) {
        const full = join(dir, entry.name);
        if (entry.isDirectory) stack.push(full);
        else if (entry.isFile) {
          const stat = Deno.statSync(full);
          files.push({
            path: full,
            target: join(target, relative(root, full)),
            size: stat.size,
            mode: (stat.mode ?? 0o644) & 0o777,
          });
        }
        if (files.length > MAX_DIRECTORY_FILES) {
          reader.fail(
            node,
            path,
            `bind mount source "${source}" holds more than ${MAX_DIRECTORY_FILES} files`,
          );
          return [];
        }
      }
    }
  } else {
    reader.fail(node, path, `bind mount source "${source}" is not a regular file or a directory`);
    return [];
  }
  const total = files.reduce((sum, file) => sum + file.size, 0);
  if (total > MAX_SHIPPED_BYTES) {
    reader.fail(
      node,
      path,
      `bind mount source "${source}" is ${total} bytes, more than the ${MAX_SHIPPED_BYTES} Ployz ships with a container: put it in the image or a volume`,
    );
    return [];
  }
  const out: NormalizedFile[] = [];
  for (const file of files.sort((a, b) => a.target < b.target ? -1 : 1)) {
    let content: Uint8Array;
    try {
      content = readBytesBounded(file.path, MAX_SHIPPED_BYTES);
    } catch (error) {
      reader.fail(node, path, `cannot read "${relative(baseDir, file.path)}": ${fileErrorReason(error)}`);
      return [];
    }
    const digest = digestOf(content);
    contents.set(digest, content);
    out.push({
      kind: "bind",
      name: relative(baseDir, file.path),
      target: file.target,
      uid: null,
      gid: null,
      mode: file.mode,
      digest,
      size: content.length,
    });
  }
  return out;
}
