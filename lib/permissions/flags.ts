import {
  allowedScopes,
  type EnvPermission,
  type PermissionSet,
  type PermissionValue,
  type ScopedPermission,
} from "./sets.ts";

const KINDS = ["read", "write", "net", "run", "sys", "ffi"] as const;

/**
 * Turns a permission set into `deno run` flags, e.g. `--allow-read=/a,/b`. Scopes containing a comma are refused
 * because the flag syntax cannot carry them.
 */
export function permissionFlags(set: PermissionSet): string[] {
  if (set.all) return ["--allow-all"];
  const flags: string[] = [];
  for (const kind of KINDS) {
    const flag = valueFlag(kind, allowedScopes(set[kind]));
    if (flag) flags.push(flag);
    const deny = denied(set[kind]);
    if (deny.length > 0) flags.push(valueFlag(kind, deny)!.replace("--allow-", "--deny-"));
  }
  flags.push(...envFlags(set.env));
  return flags;
}

function denied(value: PermissionValue | ScopedPermission | undefined): string[] {
  return value !== undefined && typeof value === "object" && !Array.isArray(value) ? value.deny ?? [] : [];
}

function valueFlag(kind: string, value: PermissionValue | undefined): string | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return `--allow-${kind}`;
  if (value.length === 0) return undefined;
  for (const scope of value) {
    if (scope.includes(",")) {
      throw new TypeError(`Cannot express --allow-${kind} scope "${scope}": a scope cannot contain ","`);
    }
  }
  return `--allow-${kind}=${value.join(",")}`;
}

function envFlags(env: PermissionValue | EnvPermission | undefined): string[] {
  if (env === undefined || typeof env === "boolean" || Array.isArray(env)) {
    const flag = valueFlag("env", env);
    return flag ? [flag] : [];
  }
  const flags: string[] = [];
  const allow = valueFlag("env", env.allow);
  if (allow) flags.push(allow);
  if (env.ignore) flags.push("--ignore-env");
  return flags;
}

/**
 * The smallest single set that covers every given set: what one compiled `ployzd` must be granted so each
 * subcommand's Worker can be narrowed to its own set.
 */
export function unionOf(sets: PermissionSet[]): PermissionSet {
  if (sets.some((s) => s.all)) return { all: true };
  const out: PermissionSet = {};
  // Exceptions are left out: the union must grant every access any one set grants.
  for (const kind of KINDS) {
    out[kind] = mergeValues(sets.map((s) => allowedScopes(s[kind])));
    if (out[kind] === undefined) delete out[kind];
  }
  const envs = sets.map((s) => s.env).filter((e) => e !== undefined);
  if (envs.length > 0) {
    const values = envs.map((e) => (typeof e === "object" && !Array.isArray(e) ? e.allow : e));
    const allow = mergeValues(values);
    const ignore = envs.some((e) => typeof e === "object" && !Array.isArray(e) && e.ignore);
    out.env = allow === true ? true : { allow: allow === undefined || allow === false ? [] : allow, ignore };
  }
  return out;
}

function mergeValues(values: (PermissionValue | undefined)[]): PermissionValue | undefined {
  if (values.some((v) => v === true)) return true;
  const scopes = new Set<string>();
  for (const v of values) if (Array.isArray(v)) v.forEach((s) => scopes.add(s));
  return scopes.size > 0 ? [...scopes] : undefined;
}
