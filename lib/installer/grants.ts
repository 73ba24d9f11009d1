/**
 * What one `ployzd install` invocation may reach beyond the fixed install set: the host of its http(s) release
 * source, or its directory source, and the artifact it was handed. The launcher (`bin/ployzd`) asks for these grants before it starts the installer, so the installer is
 * never granted the network wholesale.
 *
 * @module
 */

import { isAbsolute, join } from "node:path";
import { parseArgs } from "node:util";
import type { PermissionSet, PermissionValue, ScopedPermission } from "../permissions/mod.ts";
import { attemptsDir, type InstallPaths, installStateDir } from "./paths.ts";

/** The options of `ployzd install`, shared with the command so both read an invocation the same way. */
export const INSTALL_OPTIONS = {
  from: { type: "string" },
  source: { type: "string" },
  version: { type: "string" },
  channel: { type: "string" },
  upgrade: { type: "boolean" },
  attempt: { type: "string" },
  status: { type: "string" },
  json: { type: "boolean" },
  wait: { type: "boolean" },
  "request-key": { type: "string" },
  "ready-timeout": { type: "string" },
  "record-source": { type: "string" },
  "install-prerequisites": { type: "boolean" },
  "skip-prerequisites": { type: "boolean" },
} as const;

/** What an invocation reaches: the release source it fetches from and the artifact it installs, if any. */
export interface InstallReach {
  /** A directory or an `http(s)://` base URL. */
  source?: string;
  /** The local artifact of `--from`. */
  tarball?: string;
}

/**
 * The release source `args` (the arguments after `install`) will fetch from: `--source`, else for `--upgrade` the
 * source this Machine last installed from, for `--attempt ID` the source in that attempt's record. An invocation
 * the command will refuse reaches nothing; the command's own parsing reports it.
 */
export async function installReach(paths: InstallPaths, args: string[]): Promise<InstallReach> {
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({ args, options: INSTALL_OPTIONS, allowPositionals: true, strict: true }).values;
  } catch {
    return {};
  }
  if (typeof values.from === "string") {
    return { tarball: values.from, ...(typeof values.source === "string" ? { source: values.source } : {}) };
  }
  if (typeof values.source === "string") return { source: values.source };
  if (values.upgrade === true) {
    return { source: await readSourceField(join(installStateDir(paths), "source.json")) };
  }
  if (typeof values.attempt === "string" && /^[a-z0-9]{6,32}$/.test(values.attempt)) {
    return { source: await readSourceField(join(attemptsDir(paths), `${values.attempt}.json`)) };
  }
  return {};
}

async function readSourceField(path: string): Promise<string | undefined> {
  try {
    const source = (JSON.parse(await Deno.readTextFile(path)) as { source?: unknown }).source;
    return typeof source === "string" ? source : undefined;
  } catch {
    return undefined;
  }
}

/** `host:port` of an http(s) release source (credentials and path left out); undefined for anything else. */
export function sourceNetScope(source: string): string | undefined {
  if (!/^https?:\/\//.test(source)) return undefined;
  let url: URL;
  try {
    url = new URL(source);
  } catch {
    return undefined;
  }
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  return `${url.hostname}:${port}`;
}

/**
 * The install set widened by exactly `reach`: an http(s) source's `host:port` added to its net scopes, a directory
 * source and the artifact to its read scopes. The set's own exceptions still win over what is added.
 */
export function withReach(set: PermissionSet, reach: InstallReach): PermissionSet {
  const out = { ...set };
  const host = reach.source === undefined ? undefined : sourceNetScope(reach.source);
  if (host !== undefined) out.net = addScopes(set.net, [host]);
  // A directory source as openReleaseSource accepts it; the artifact as named (Deno resolves a relative one
  // against the working directory, as the command does).
  const directory = host === undefined && reach.source !== undefined && isAbsolute(reach.source) &&
      !reach.source.split("/").includes("..")
    ? [reach.source]
    : [];
  const files = [...(reach.tarball ? [reach.tarball] : []), ...directory];
  if (files.length > 0) out.read = addScopes(set.read, files);
  return out;
}

function addScopes(
  value: PermissionValue | ScopedPermission | undefined,
  scopes: string[],
): PermissionValue | ScopedPermission {
  if (value === true) return true;
  if (value === undefined || value === false) return scopes;
  if (Array.isArray(value)) return [...value, ...scopes];
  return { ...value, allow: addScopes(value.allow, scopes) as PermissionValue };
}
