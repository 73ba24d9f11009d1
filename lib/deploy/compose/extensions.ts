/**
 * The Ployz `x-` extensions on a service: `x-ports` (see ports.ts), `x-machines`, `x-caddy` and
 * `x-pre_deploy` (`ployz/src/compose/extensions.rs`).
 *
 * @module
 */

import { isAbsolute, join, normalize } from "node:path";
import { isScalar, type Node } from "yaml";
import { CADDY_KEYS, checkKeys, checkMapping, PRE_DEPLOY_KEYS } from "./keys.ts";
import { type Reader, sorted } from "./reader.ts";
import { MAX_FILE_BYTES, oversize } from "./limits.ts";
import type { PreDeployHook } from "./types.ts";
import { fileErrorReason, readCommand, readDuration } from "./service_fields.ts";

/** Reads `x-machines`: a list, or a comma-separated string, of Machine names or IDs. */
export function readMachines(reader: Reader, node: Node | null, path: string): string[] {
  const list = reader.textList(node, path, { single: "comma" }) ?? [];
  const out: string[] = [];
  for (const machine of list) {
    if (machine === "" || machine === "*") {
      reader.fail(node, path, `invalid Machine "${machine}": expected a Machine name or ID`);
    } else if (!out.includes(machine)) {
      out.push(machine);
    }
  }
  return out;
}

/**
 * Reads `x-caddy`: inline Caddyfile text (any value with a newline), a path to one relative to the compose
 * file, or `{config: …}`. Returns the trimmed text, or null when empty.
 */
export function readCaddy(
  reader: Reader,
  node: Node | null,
  path: string,
  baseDir: string,
  readFile: (path: string) => string,
  service: string,
): string | null {
  let config: string | undefined;
  let at: Node | null = node;
  if (node === null) return null;
  if (isScalar(node)) {
    config = reader.text(node, path);
  } else {
    const keys = checkMapping(reader, node, path, CADDY_KEYS, {
      strictExtensions: true,
      where: "x-caddy",
    });
    const entry = keys.get("config");
    at = entry?.value ?? node;
    config = entry === undefined || entry.value === null ? "" : reader.text(entry.value, entry.path);
  }
  if (config === undefined) return null;
  if (config !== "" && !config.includes("\n")) {
    // The fragment is served by every Machine's Ingress Proxy: only a file of the Project may become one.
    if (isAbsolute(config) || normalize(config).split(/[\\/]/)[0] === "..") {
      reader.fail(
        at,
        path,
        `Caddy config "${config}" for service "${service}" must be a file inside the compose file's directory`,
      );
      return null;
    }
    const file = join(baseDir, config);
    try {
      config = readFile(file);
    } catch (error) {
      reader.fail(
        at,
        path,
        `cannot read Caddy config "${config}" for service "${service}": ${fileErrorReason(error)}`,
      );
      return null;
    }
  }
  const size = oversize(config);
  if (size !== undefined) {
    reader.fail(
      at,
      path,
      `Caddy config for service "${service}" is ${size} bytes, more than the limit of ${MAX_FILE_BYTES}`,
    );
    return null;
  }
  const trimmed = config.trim();
  return trimmed === "" ? null : trimmed;
}

/** Reads `x-pre_deploy`: `{command, environment, privileged, timeout}`; every other key is refused. */
export function readPreDeploy(
  reader: Reader,
  node: Node | null,
  path: string,
  env: Readonly<Record<string, string>>,
): PreDeployHook | null {
  if (node === null) return null;
  const list = reader.entries(node, path);
  if (list === undefined) return null;
  const keys = checkKeys(reader, list, PRE_DEPLOY_KEYS, { strictExtensions: true, where: "x-pre_deploy" });
  const commandEntry = keys.get("command");
  const command = commandEntry === undefined
    ? null
    : readCommand(reader, commandEntry.value, commandEntry.path);
  if (command === null || command.length === 0) {
    reader.fail(commandEntry?.value ?? node, commandEntry?.path ?? path, `missing required key "command"`);
  }
  const environment: Record<string, string> = {};
  const envEntry = keys.get("environment");
  if (envEntry !== undefined) {
    for (const [key, item] of reader.keyValues(envEntry.value, envEntry.path) ?? []) {
      const value = item.value ?? (Object.hasOwn(env, key) ? env[key] : undefined);
      if (value !== undefined) environment[key] = value;
    }
  }
  const privilegedEntry = keys.get("privileged");
  const privileged = privilegedEntry === undefined || privilegedEntry.value === null
    ? null
    : reader.boolean(privilegedEntry.value, privilegedEntry.path) ?? null;
  const timeoutEntry = keys.get("timeout");
  const timeoutMs = readDuration(reader, timeoutEntry?.value, timeoutEntry?.path ?? path);
  return { command: command ?? [], environment: sorted(environment), privileged, timeoutMs };
}
