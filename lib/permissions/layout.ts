/**
 * Where a Machine keeps its files. Permission sets in deno.json name the default paths; a relocated layout
 * (tests, the lab, several Machines on one host) rewrites those roots and nothing else.
 */
export interface Layout {
  /** Machine data: identity, replicated store, Observe Store. Default `/var/lib/ployz`. */
  dataDir: string;
  /** Runtime files: sockets, dns.json. Default `/run/ployz`. */
  runDir: string;
  /** The Docker engine socket. Default `/var/run/docker.sock`. */
  dockerSocket: string;
  /** Docker's data root, whose `containers/` holds the local log files. Default `/var/lib/docker`. */
  dockerRoot: string;
}

/** The layout of an installed Machine. */
export const DEFAULT_LAYOUT: Readonly<Layout> = Object.freeze({
  dataDir: "/var/lib/ployz",
  runDir: "/run/ployz",
  dockerSocket: "/var/run/docker.sock",
  dockerRoot: "/var/lib/docker",
});

const ENV_KEYS: Record<keyof Layout, string> = {
  dataDir: "PLOYZ_DATA_DIR",
  runDir: "PLOYZ_RUN_DIR",
  dockerSocket: "PLOYZ_DOCKER_SOCKET",
  dockerRoot: "PLOYZ_DOCKER_ROOT",
};

/**
 * Reads a layout from `PLOYZ_DATA_DIR`, `PLOYZ_RUN_DIR`, `PLOYZ_DOCKER_SOCKET` and `PLOYZ_DOCKER_ROOT`, falling
 * back to the default for each one unset. Every path must be absolute and free of `..`.
 */
export function layoutFromEnv(get: (key: string) => string | undefined): Layout {
  const layout = { ...DEFAULT_LAYOUT };
  for (const [field, key] of Object.entries(ENV_KEYS) as [keyof Layout, string][]) {
    const value = get(key);
    if (value === undefined || value === "") continue;
    layout[field] = checkLayoutPath(key, value);
  }
  return layout;
}

/**
 * The `PLOYZ_*` variables that carry `layout` to a child process, which reads them back with
 * {@link layoutFromEnv}; with `relocatedOnly`, only the roots that differ from {@link DEFAULT_LAYOUT}.
 */
export function layoutEnv(layout: Layout, options: { relocatedOnly?: boolean } = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [field, key] of Object.entries(ENV_KEYS) as [keyof Layout, string][]) {
    if (options.relocatedOnly !== true || layout[field] !== DEFAULT_LAYOUT[field]) env[key] = layout[field];
  }
  return env;
}

function checkLayoutPath(key: string, value: string): string {
  if (!value.startsWith("/") || value.split("/").includes("..") || /[\0\n]/.test(value)) {
    throw new TypeError(`Cannot use ${key}="${value}": expected an absolute path without ".."`);
  }
  return value.length > 1 ? value.replace(/\/+$/, "") : value;
}
