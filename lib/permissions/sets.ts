import { join } from "node:path";
import { fileURLToPath } from "node:url";
import config from "../../deno.json" with { type: "json" };

/** A permission value as deno.json writes it: all, none, or a list of scopes. */
export type PermissionValue = boolean | string[];

/**
 * A grant with exceptions: `allow` as a plain value, minus `deny` (which wins). Deno applies `deny` when it reads
 * the set (`-P`, `--deny-*` flags); a Worker cannot be denied anything, so a compiled program's Worker gets `allow`
 * alone.
 */
export interface ScopedPermission {
  /** What is granted. */
  allow: PermissionValue;
  /** Scopes refused even though `allow` covers them. */
  deny?: string[];
}

/** The env permission: an allow list, optionally ignoring (not failing on) every other variable. */
export interface EnvPermission {
  /** Variables the program may read; a trailing `*` matches a prefix. */
  allow?: string[];
  /** Whether every other variable reads as unset instead of failing. */
  ignore?: boolean;
}

/** One named permission set, in deno.json's `permissions` shape. */
export interface PermissionSet {
  /** Grants everything (the lab, which drives root tools). */
  all?: boolean;
  /** Paths the program may read. */
  read?: PermissionValue | ScopedPermission;
  /** Paths the program may write. */
  write?: PermissionValue;
  /** Hosts, `host:port`, `cidr:port` and `unix:path` scopes. */
  net?: PermissionValue | ScopedPermission;
  /** Programs the program may spawn. */
  run?: PermissionValue;
  /** Environment variables. */
  env?: PermissionValue | EnvPermission;
  /** System information APIs. */
  sys?: PermissionValue;
  /** Native libraries (never granted). */
  ffi?: PermissionValue;
}

/** The names of the permission sets deno.json defines. */
export type PermissionSetName = keyof typeof config.permissions;

const sets = config.permissions as Record<string, PermissionSet>;

/** The names of every permission set, in deno.json order. */
export function permissionSetNames(): PermissionSetName[] {
  return Object.keys(sets) as PermissionSetName[];
}

// Where deno.json lives: Deno resolves a set's relative paths ("./cmd") against it.
const CONFIG_DIR = fileURLToPath(new URL("../../", import.meta.url));

/**
 * Returns the permission set `name` as deno.json defines it, which is the one source of truth for launchers,
 * compiled binaries, systemd units and tests. Relative paths (`./cmd`, `./lib`: each ployzd subcommand reads its
 * own code, because commands are imported only when they run) come back absolute, as Deno resolves them for
 * `-P`, so flags rendered from the set mean the same wherever the program starts. They resolve against `appDir`
 * (default: the tree this code runs from); a unit rendered for another tree passes that tree.
 */
export function permissionSet(name: string, appDir: string = CONFIG_DIR): PermissionSet {
  const set = sets[name];
  if (set === undefined) {
    throw new RangeError(
      `Cannot find permission set "${name}": deno.json defines ${Object.keys(sets).join(", ")}`,
    );
  }
  const copy = structuredClone(set);
  const absolute = (p: string): string => (p.startsWith("./") ? join(appDir, p) : p);
  if (Array.isArray(copy.read)) copy.read = copy.read.map(absolute);
  else if (copy.read !== undefined && typeof copy.read === "object" && Array.isArray(copy.read.allow)) {
    copy.read = { ...copy.read, allow: copy.read.allow.map(absolute) };
  }
  return copy;
}

/** What a grant allows, its exceptions left out (what a Worker, which cannot be denied anything, is given). */
export function allowedScopes(
  value: PermissionValue | ScopedPermission | undefined,
): PermissionValue | undefined {
  return value !== undefined && typeof value === "object" && !Array.isArray(value) ? value.allow : value;
}
