/**
 * A service's environment and the host names it sees: `env_file` overlaid by `environment`, and `extra_hosts`.
 *
 * @module
 */

import { isAbsolute, join } from "node:path";
import { isScalar, type Node } from "yaml";
import { checkMapping, ENV_FILE_KEYS } from "./keys.ts";
import { MAX_FILE_BYTES, oversize } from "./limits.ts";
import { parseEnvFile } from "./env_file.ts";
import { child, type Entry, isList, isMapping, type Reader, sorted } from "./reader.ts";
import { fileErrorReason } from "./service_fields.ts";
import type { ServiceScope } from "./service_scope.ts";

/** `env_file` contents (in order, later files win) overlaid by `environment`. */
export function readEnvironment(
  scope: ServiceScope,
  service: string,
  envFile: Entry | undefined,
  environment: Entry | undefined,
): Record<string, string> {
  const { reader } = scope;
  const merged: Record<string, string> = {};
  if (envFile !== undefined && envFile.value !== null) {
    const node = envFile.value;
    const list: { node: Node | null; path: string }[] = isScalar(node)
      ? [{ node, path: envFile.path }]
      : (reader.items(node, envFile.path) ?? []).map((item, index) => ({
        node: item,
        path: child(envFile.path, index),
      }));
    for (const item of list) {
      let file: string | undefined;
      let required = true;
      if (isMapping(item.node)) {
        const keys = checkMapping(reader, item.node, item.path, ENV_FILE_KEYS, {
          where: "env_file",
        });
        const pathEntry = keys.get("path");
        if (pathEntry === undefined) reader.fail(item.node, item.path, `missing required key "path"`);
        else file = reader.text(pathEntry.value, pathEntry.path);
        const requiredEntry = keys.get("required");
        if (requiredEntry !== undefined && requiredEntry.value !== null) {
          required = reader.boolean(requiredEntry.value, requiredEntry.path) ?? true;
        }
      } else {
        file = reader.text(item.node, item.path);
      }
      if (file === undefined) continue;
      const resolved = isAbsolute(file) ? file : join(scope.baseDir, file);
      let content: string;
      try {
        content = scope.readFile(resolved);
      } catch (error) {
        if (required) {
          reader.fail(
            item.node,
            item.path,
            `cannot read env file "${file}" for service "${service}": ${fileErrorReason(error)}`,
          );
        }
        continue;
      }
      const size = oversize(content);
      if (size !== undefined) {
        reader.fail(
          item.node,
          item.path,
          `cannot read env file "${file}" for service "${service}": it is ${size} bytes, more than the limit of ${MAX_FILE_BYTES}`,
        );
        continue;
      }
      const parsed = parseEnvFile(content, scope.env);
      for (const problem of parsed.problems) {
        reader.errors.push({
          file: resolved,
          line: problem.line,
          column: 1,
          path: "",
          message: problem.message,
        });
      }
      Object.assign(merged, parsed.vars);
    }
  }
  if (environment !== undefined) {
    for (const [key, item] of reader.keyValues(environment.value, environment.path) ?? []) {
      const value = item.value ?? (Object.hasOwn(scope.env, key) ? scope.env[key] : undefined);
      if (value === undefined) delete merged[key];
      else merged[key] = value;
    }
  }
  return sorted(merged);
}

export function readExtraHosts(reader: Reader, node: Node | null, path: string): string[] {
  const out: string[] = [];
  if (isMapping(node)) {
    for (const entry of reader.entries(node, path) ?? []) {
      const addresses = isList(entry.value)
        ? reader.textList(entry.value, entry.path) ?? []
        : [reader.text(entry.value, entry.path)].filter((item): item is string => item !== undefined);
      for (const address of addresses) out.push(`${entry.key}:${address}`);
    }
    return out;
  }
  (reader.items(node, path) ?? []).forEach((item, index) => {
    const itemPath = child(path, index);
    const entry = reader.text(item, itemPath);
    if (entry === undefined) return;
    const match = /^([^=:]+)[=:](.+)$/.exec(entry);
    if (match === null) reader.fail(item, itemPath, `invalid extra host "${entry}": expected HOST:ADDRESS`);
    else out.push(`${match[1]}:${match[2]}`);
  });
  return out;
}
