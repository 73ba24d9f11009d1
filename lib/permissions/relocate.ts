import { DEFAULT_LAYOUT, type Layout } from "./layout.ts";
import type { PermissionSet, PermissionValue, ScopedPermission } from "./sets.ts";

/** Rewrites the default roots named in a permission set's paths to the roots of `layout`. */
export function relocate(set: PermissionSet, layout: Layout): PermissionSet {
  const roots = (Object.keys(DEFAULT_LAYOUT) as (keyof Layout)[])
    .map((key) => [DEFAULT_LAYOUT[key], layout[key]] as const)
    // Longest first, so a nested default root wins over its parent.
    .sort((a, b) => b[0].length - a[0].length);
  const out: PermissionSet = { ...set };
  out.read = relocateScoped(set.read, roots, "");
  out.write = relocateValue(set.write, roots, "");
  out.net = relocateScoped(set.net, roots, "unix:");
  for (const key of Object.keys(out) as (keyof PermissionSet)[]) {
    if (out[key] === undefined) delete out[key];
  }
  return out;
}

function relocateScoped(
  value: PermissionValue | ScopedPermission | undefined,
  roots: (readonly [string, string])[],
  prefix: string,
): PermissionValue | ScopedPermission | undefined {
  if (value === undefined || typeof value !== "object" || Array.isArray(value)) {
    return relocateValue(value, roots, prefix);
  }
  const out: ScopedPermission = { allow: relocateValue(value.allow, roots, prefix) ?? false };
  if (value.deny !== undefined) out.deny = relocateValue(value.deny, roots, prefix) as string[];
  return out;
}

function relocateValue(
  value: PermissionValue | undefined,
  roots: (readonly [string, string])[],
  prefix: string,
): PermissionValue | undefined {
  if (!Array.isArray(value)) return value;
  return value.map((entry) => {
    if (!entry.startsWith(prefix)) return entry;
    const path = entry.slice(prefix.length);
    for (const [from, to] of roots) {
      if (path === from || path.startsWith(`${from}/`)) return prefix + to + path.slice(from.length);
    }
    return entry;
  });
}
