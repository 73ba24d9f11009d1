import { CodedError, messageOf } from "./errors.ts";

/**
 * Imports a module the process needs only for a rarely used path, on first use, so the process does not carry
 * it from the start. `load` calls `import()` with a literal specifier, so `deno compile` and bundles still include
 * the module; Deno caches it after the first call. A module that cannot be loaded (a release
 * tree with a file missing or damaged) is one `internal` {@linkcode CodedError} naming `name` and the module Deno
 * could not load.
 */
export async function importOnFirstUse<T>(name: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    throw new CodedError("internal", damagedRelease(`module "${name}"`, error), {
      details: { module: name },
      cause: error,
    });
  }
}

/**
 * The one-line refusal for code of this release that cannot be loaded: `Cannot load <what>: <the first line of
 * Deno's message>; this installation is damaged, reinstall the release`.
 */
export function damagedRelease(what: string, error: unknown): string {
  const message = messageOf(error).split("\n")[0].trim().replace(/\.$/, "");
  return `Cannot load ${what}: ${message}; this installation is damaged, reinstall the release`;
}
