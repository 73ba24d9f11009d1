/**
 * The volume runtime's state and what every handler of it reads: the bound Pool (or why there is none), the queue
 * every change of the Pool or the ledger waits in, this Machine's copies as rows, and the Containers mounting a
 * Volume.
 *
 * @module
 */

import { join } from "node:path";
import type { ContainerSpec } from "../deploy/machine/mod.ts";
import { RpcError, type VolumeCopyWire } from "../rpc/mod.ts";
import { type Copy, openBoundPool, type Pool, type PoolBinding, readPoolBinding } from "../volume/mod.ts";
import { type Ledger, type LedgerEntry, readLedgerFile, writeLedgerFile } from "./volume_ledger.ts";
import type { VolumeHost } from "./volume_runtime.ts";
import type { StepContext } from "./volume_steps.ts";
import { publishRows } from "./volume_wire.ts";
import { messageOf } from "../util/mod.ts";

/** A transition running as a bounded task. */
export interface CopyTask {
  key: string;
  done: Promise<void>;
  finished: boolean;
  error?: unknown;
}

/** One running volume runtime's state. */
export interface VolumeState {
  readonly host: VolumeHost;
  readonly ledgerPath: string;
  /** `<data>/volume_defaults.json`: the Machine's default Volume size. */
  readonly defaultsPath: string;
  binding: PoolBinding | undefined;
  pool: Pool | undefined;
  /** Why the bound Pool is not usable, when it is not. */
  problem: string | undefined;
  /** The last change queued: creating, publishing and binding never interleave. */
  tail: Promise<unknown>;
  /** The running (or last) transition per Volume. */
  readonly tasks: Map<string, CopyTask>;
  /** What the transition steps use of this state. */
  readonly steps: StepContext;
}

/** Reads the Pool binding and opens the Pool; a Pool that fails to open is reported in `problem`, never thrown. */
export async function openVolumeState(host: VolumeHost): Promise<VolumeState> {
  const state: VolumeState = {
    host,
    ledgerPath: join(host.dataDir, "volumes.json"),
    defaultsPath: join(host.dataDir, "volume_defaults.json"),
    binding: undefined,
    pool: undefined,
    problem: undefined,
    tail: Promise.resolve(),
    tasks: new Map(),
    steps: {
      host,
      pool: () => requirePool(state),
      readLedger: () => readLedger(state),
      patchLedger: (volume, patch) => patchLedger(state, volume, patch),
      containersOf: async (volume, project) => (await mounting(state, volume, project)).map((c) => c.id),
      prune: (volume) => prune(state, volume),
    },
  };
  try {
    state.binding = await readPoolBinding(host.dataDir);
    if (state.binding !== undefined) await openPool(state, state.binding);
  } catch (error) {
    state.problem = messageOf(error);
    host.log(`volume: ${state.problem}`);
  }
  return state;
}

async function openPool(state: VolumeState, next: PoolBinding): Promise<void> {
  try {
    state.pool = await (state.host.openPool ?? openBoundPool)(next, state.host.exec);
    state.problem = undefined;
  } catch (error) {
    state.pool = undefined;
    state.problem = messageOf(error);
    state.host.log(`volume: the bound Pool cannot be opened: ${state.problem}`);
  }
}

/** Runs `task` after every change queued before it. */
export function serial<T>(state: VolumeState, task: () => Promise<T>): Promise<T> {
  const run = state.tail.then(task, task);
  state.tail = run.catch(() => {});
  return run;
}

/** The ledger as it is on disk. */
export function readLedger(state: VolumeState): Promise<Ledger> {
  return readLedgerFile(state.ledgerPath);
}

/** Replaces the ledger on disk. */
export function writeLedger(state: VolumeState, ledger: Ledger): Promise<void> {
  return writeLedgerFile(state.ledgerPath, ledger);
}

// A transition's task runs outside the queue; its ledger change is queued, so it never writes back a ledger read
// before another Volume's floor was raised.
function patchLedger(
  state: VolumeState,
  volume: string,
  patch: (entry: LedgerEntry) => LedgerEntry,
): Promise<void> {
  return serial(state, async () => {
    const ledger = await readLedger(state);
    ledger[volume] = patch(ledger[volume] ?? {});
    await writeLedger(state, ledger);
  });
}

/** The bound Pool; refuses (`unsupported`) naming the Machine when there is none usable. */
export function requirePool(state: VolumeState): Pool {
  if (state.pool !== undefined) return state.pool;
  const machine = state.host.self().name;
  throw new RpcError(
    "unsupported",
    `Machine "${machine}" has no Pool${
      state.problem === undefined ? "" : ` usable (${state.problem})`
    }: it holds no Volume copies`,
    { details: { machine } },
  );
}

/** This Machine's copy of `volume` as the transition table sees it. */
export async function currentCopy(state: VolumeState, volume: string): Promise<Copy> {
  const held = await requirePool(state).inspect(volume);
  if (held === undefined) return { role: "none" };
  if (held.writable) return { role: "writer", epoch: (await readLedger(state))[volume]?.epoch ?? 0 };
  return { role: "mirror", snapshot: held.snapshots[held.snapshots.length - 1] };
}

// A Writer keeps its own newest two run Snapshots, and so does a Mirror; never by another Machine's copy.
async function prune(state: VolumeState, volume: string): Promise<void> {
  const held = await requirePool(state).inspect(volume);
  for (const old of held?.snapshots.slice(0, -2) ?? []) await requirePool(state).destroySnapshot(volume, old);
}

/** This Machine's Containers that mount `volume` (of `project`, when given), with their specs. */
export async function mounting(
  state: VolumeState,
  volume: string,
  project: string | undefined,
): Promise<{ id: string; name: string; state: string; spec: ContainerSpec }[]> {
  const engine = state.host.engine;
  if (engine === undefined) return [];
  const found = await engine.listOwned(project === undefined ? {} : { project });
  const out: { id: string; name: string; state: string; spec: ContainerSpec }[] = [];
  for (const c of found) {
    const spec = await engine.readSpec(c.id).catch(() => undefined);
    if (spec?.mounts?.some((m) => m.source === volume && m.provisionedBytes !== undefined)) {
      out.push({ id: c.id, name: c.name, state: c.state, spec });
    }
  }
  return out;
}

/** Every Volume copy in the Pool, as its row says it. */
export async function listCopies(state: VolumeState): Promise<VolumeCopyWire[]> {
  const pool = state.pool;
  if (pool === undefined) return [];
  const ledger = await readLedger(state);
  const out: VolumeCopyWire[] = [];
  for (const name of await pool.list()) {
    const held = await pool.inspect(name);
    if (held === undefined) continue;
    const entry = ledger[name] ?? {};
    const usage = await pool.usage(name).catch(() => undefined);
    const newest = held.snapshots[held.snapshots.length - 1];
    out.push({
      name,
      role: held.writable ? "writer" : "mirror",
      ...(held.writable ? { epoch: entry.epoch ?? 0 } : { snapshot: newest }),
      snapshots: held.snapshots,
      "size_bytes": usage?.sizeBytes ?? entry.sizeBytes,
      "used_bytes": usage?.usedBytes,
      ...(held.writable && usage?.changedBytes !== undefined ? { "changed_bytes": usage.changedBytes } : {}),
      ...(entry.project === undefined ? {} : { project: entry.project }),
    });
  }
  return out;
}

/** Writes this Machine's `volumes` rows from the Pool as it is now, while the Machine is in a Cluster. */
export async function publish(state: VolumeState): Promise<void> {
  const store = state.host.store();
  if (store === undefined || store.closed) return;
  publishRows(store, state.host.self().id, await listCopies(state), new Date().toISOString());
}

/** {@link publish} in turn; a failure is logged, since the next rescan writes the rows again. */
export function publishInTurn(state: VolumeState): Promise<void> {
  return serial(state, () => publish(state)).catch((error) =>
    state.host.log(`volume: publishing rows failed: ${messageOf(error)}`)
  );
}
