/**
 * The state of this Machine's Ployz containers, read from Docker's `config.v2.json` files (the Observe Store has no
 * Docker socket), and the markers a change of state between two scans means: a start, a death, an OOM kill, a
 * health change. A file is parsed again only when it changed, since Docker rewrites it on state changes only.
 *
 * @module
 */

import { join } from "node:path";
import { type ContainerIdentity, identityFromConfig } from "../containers.ts";

/** One container's identity and the state fields the sampler uses. */
export interface ContainerState {
  /** Who the container is. */
  identity: ContainerIdentity;
  /** `State.Running`. */
  running: boolean;
  /** `State.Pid`: the init process, 0 when none. */
  pid: number;
  /** `State.StartedAt`, RFC 3339. */
  startedAt: string;
  /** `State.FinishedAt`, RFC 3339. */
  finishedAt: string;
  /** `State.ExitCode`. */
  exitCode: number;
  /** `State.OOMKilled`. */
  oomKilled: boolean;
  /** `State.Health.Status`, `""` without a health check. */
  health: string;
  /** `RestartCount`: restarts by the restart policy. */
  restartCount: number;
}

/** What a scan found. */
export interface StateScan {
  /** Ployz containers by id. */
  containers: Map<string, ContainerState>;
  /** Container directories whose config could not be read or parsed this time. */
  unreadable: Set<string>;
}

/** A state change seen between two scans. */
export interface Marker {
  /** What happened. */
  kind: "start" | "die" | "oom" | "health";
  /** When Docker says it happened, ms since the epoch (the scan's time when Docker does not say). */
  atMs: number;
  /** Exit code of a death, new status of a health change; `""` otherwise. */
  detail: string;
}

interface Cached {
  stamp: string;
  state: ContainerState | undefined;
}

/** Zero time as Docker writes it. */
const ZERO_TIME = "0001-01-01T00:00:00Z";

/** Scans `<dockerRoot>/containers`, parsing only files that changed since the previous scan. */
export class StateScanner {
  readonly #dir: string;
  readonly #cache = new Map<string, Cached>();

  /** A scanner of `<dockerRoot>/containers`. */
  constructor(dockerRoot: string) {
    this.#dir = join(dockerRoot, "containers");
  }

  /** Reads the Ployz containers' state now. A missing `containers/` is an empty scan. */
  scan(): StateScan {
    const scan: StateScan = { containers: new Map(), unreadable: new Set() };
    let names: string[];
    try {
      names = [...Deno.readDirSync(this.#dir)].filter((e) => e.isDirectory).map((e) => e.name);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return scan;
      throw error;
    }
    const seen = new Set(names);
    for (const name of this.#cache.keys()) if (!seen.has(name)) this.#cache.delete(name);
    for (const name of names) {
      const path = join(this.#dir, name, "config.v2.json");
      let stamp: string;
      try {
        const info = Deno.statSync(path);
        stamp = `${info.ino}:${info.mtime?.getTime()}:${info.size}`;
      } catch (error) {
        // Removed between the listing and the stat, or not written yet.
        if (!(error instanceof Deno.errors.NotFound)) scan.unreadable.add(name);
        continue;
      }
      let cached = this.#cache.get(name);
      if (cached?.stamp !== stamp) {
        try {
          cached = { stamp, state: stateFromConfig(JSON.parse(Deno.readTextFileSync(path))) };
        } catch {
          scan.unreadable.add(name);
          this.#cache.delete(name);
          continue;
        }
        this.#cache.set(name, cached);
      }
      if (cached.state !== undefined) scan.containers.set(cached.state.identity.containerId, cached.state);
    }
    return scan;
  }
}

interface ConfigState {
  RestartCount?: number;
  State?: {
    Running?: boolean;
    Pid?: number;
    StartedAt?: string;
    FinishedAt?: string;
    ExitCode?: number;
    OOMKilled?: boolean;
    Health?: { Status?: string } | null;
  };
}

/** The state of a parsed `config.v2.json`; `undefined` unless Ployz manages the container. */
export function stateFromConfig(config: unknown): ContainerState | undefined {
  const identity = identityFromConfig(config);
  if (identity === undefined) return undefined;
  const c = config as ConfigState;
  const s = c.State ?? {};
  return {
    identity,
    running: s.Running === true,
    pid: typeof s.Pid === "number" ? s.Pid : 0,
    startedAt: typeof s.StartedAt === "string" ? s.StartedAt : ZERO_TIME,
    finishedAt: typeof s.FinishedAt === "string" ? s.FinishedAt : ZERO_TIME,
    exitCode: typeof s.ExitCode === "number" ? s.ExitCode : 0,
    oomKilled: s.OOMKilled === true,
    health: typeof s.Health?.Status === "string" ? s.Health.Status : "",
    restartCount: typeof c.RestartCount === "number" ? c.RestartCount : 0,
  };
}

/**
 * The markers between `previous` and `current` state of one container. Without a previous state (first seen),
 * a start or death Docker dates at or after `sinceMs` counts; earlier ones were before this process looked.
 */
export function markersBetween(
  previous: ContainerState | undefined,
  current: ContainerState,
  nowMs: number,
  sinceMs: number,
): Marker[] {
  const markers: Marker[] = [];
  const when = (time: string): number => {
    const ms = Date.parse(time);
    return Number.isFinite(ms) ? ms : nowMs;
  };
  const changed = (key: "startedAt" | "finishedAt"): boolean =>
    current[key] !== ZERO_TIME &&
    (previous === undefined ? when(current[key]) >= sinceMs : previous[key] !== current[key]);
  if (changed("startedAt")) markers.push({ kind: "start", atMs: when(current.startedAt), detail: "" });
  // A death Docker already restarted from is still a death: FinishedAt moved even though it runs again.
  if (changed("finishedAt")) {
    const atMs = when(current.finishedAt);
    markers.push({ kind: "die", atMs, detail: String(current.exitCode) });
    if (current.oomKilled) markers.push({ kind: "oom", atMs, detail: "" });
  }
  if (previous !== undefined && previous.health !== current.health && current.health !== "") {
    markers.push({ kind: "health", atMs: nowMs, detail: current.health });
  }
  return markers;
}
