/**
 * This Machine's Volumes: the Pool it is bound to (`ployz machine pool`), the Provisioned Volumes it holds, and their
 * rows in the replicated `volumes` table, which only this Machine writes. Before a Container that mounts a
 * Provisioned Volume is created, {@link VolumeRuntime.prepare} admits it against the Pool as it is now: no Pool,
 * a Mirror here, or a size the Pool cannot hold are refused naming the check; an absent Volume is created.
 *
 * A small local ledger (`<data>/volumes.json`, 0600) keeps what the Pool cannot: each Volume's Project, its size,
 * a Writer's epoch and the SetVolumeCopy floor. `<data>/volume_defaults.json` (0600) keeps the Machine's default
 * Volume size, for a Provisioned Volume whose `x-volumes` names none.
 *
 * @module
 */

import { join } from "node:path";
import type { ContainerSpec, Engine } from "../deploy/machine/mod.ts";
import {
  type MachinePoolRequest,
  type MachinePoolResponse,
  RpcError,
  type RpcHandlers,
  type SendVolumeRequest,
} from "../rpc/mod.ts";
import type { Store } from "../store/mod.ts";
import {
  btrfsPoolRoot,
  checkVolumeName,
  type Exec,
  openBoundPool,
  type Pool,
  type PoolBinding,
  writePoolBinding,
} from "../volume/mod.ts";
import type { ForwardTarget } from "./forward.ts";
import { assertLedgerProject, readDefaultSizeFile, writeDefaultSizeFile } from "./volume_ledger.ts";
import {
  listCopies,
  mounting,
  openVolumeState,
  publish,
  publishInTurn,
  readLedger,
  requirePool,
  serial,
  type VolumeState,
  writeLedger,
} from "./volume_state.ts";
import { COPY_TASK_MS, runStep } from "./volume_steps.ts";
import { setVolumeCopy } from "./volume_copy.ts";
import { asRpc } from "./volume_wire.ts";
import { messageOf } from "../util/mod.ts";

export { COPY_TASK_MS } from "./volume_steps.ts";

/** What the volume runtime needs from the daemon. */
export interface VolumeHost {
  /** The Machine's data directory (`pool.json`, `volumes.json`, `pool/`). */
  dataDir: string;
  /** Runs the Pool's programs. */
  exec: Exec;
  /** This Machine's id and name now. */
  self(): { id: string; name: string };
  /** The replicated store while the Machine is in a Cluster. */
  store(): Store | undefined;
  /** One line per notable event. */
  log: (line: string) => void;
  /** How often the rows are rewritten from the Pool (usage moves as Containers write); default 30 s. */
  rescanMs?: number;
  /** This Machine's Docker, for the Container steps of a transition (the cut's stop). */
  engine?: Engine;
  /** A peer's Machine RPC listener on the mesh, from its row. */
  resolve?(machineId: string): ForwardTarget | undefined;
  /** Aborts when the daemon stops. */
  stopping?: AbortSignal;
  /** Finds (by creation key) or creates a Container from `spec` through the container handlers, and starts it. */
  ensureStarted?(spec: ContainerSpec): Promise<void>;
  /** Opens a bound Pool; {@link openBoundPool} unless a unit test hands in one of its own. */
  openPool?(binding: PoolBinding, exec: Exec): Promise<Pool>;
}

export { COPY_ANSWER_MS } from "./volume_copy.ts";

/** The running volume runtime. */
export interface VolumeRuntime {
  /** The `ployz.machine.pool.v1`, `ployz.volume.set_copy.v1` and `ployz.volume.send.v1` handlers. */
  readonly handlers: Pick<RpcHandlers, "machinePool" | "setVolumeCopy" | "sendVolume" | "volumeContainers">;
  /**
   * Admits the Provisioned Volumes `spec` mounts and returns each one's host path, creating absent ones in the
   * Pool. Refuses (`unsupported`, `conflict`, `invalid_argument`) naming the Volume and the check that failed.
   */
  prepare(spec: ContainerSpec): Promise<Record<string, string>>;
  /** Writes this Machine's `volumes` rows from the Pool as it is now. */
  publish(): Promise<void>;
  /**
   * Destroys this Machine's copy of `volume` (Writer or Mirror, with its Snapshots): a removal the operator
   * confirmed as Data Loss (`ployz rm --volumes`). False when the Pool holds none; refuses while a Container here
   * mounts it, and refuses (`conflict`) when this Machine's ledger records it for a Project other than `project`.
   * Its floor is kept, so a late request of an older Volume Run is still refused.
   */
  remove(volume: string, project: string): Promise<boolean>;
  /** Stops the periodic rewrite; resolves once the last write finished. */
  stop(): Promise<void>;
}

/** Opens the bound Pool, if any; a Pool that fails to open is reported, never fatal to the daemon. */
export async function startVolumeRuntime(host: VolumeHost): Promise<VolumeRuntime> {
  const state = await openVolumeState(host);
  const timer = setInterval(() => {
    if (state.pool !== undefined) publishInTurn(state);
  }, host.rescanMs ?? 30_000);
  const rpc = async <T>(handler: () => Promise<T>): Promise<T> => {
    try {
      return await handler();
    } catch (error) {
      throw asRpc(error);
    }
  };
  return {
    handlers: {
      volumeContainers: (req) => volumeContainers(state, req.volume),
      setVolumeCopy: (req) => rpc(() => setVolumeCopy(state, req)),
      sendVolume: (req, ctx) => rpc(() => sendVolume(state, req, ctx.signal)),
      machinePool: (req) => rpc(() => machinePool(state, req)),
    },
    async prepare(spec) {
      if (!(spec.mounts ?? []).some((m) => m.provisionedBytes !== undefined)) return {};
      const paths = await rpc(() => serial(state, () => admit(state, spec)));
      await publishInTurn(state);
      return paths;
    },
    publish: () => serial(state, () => publish(state)),
    remove: (volume, project) => removeCopy(state, volume, project),
    async stop() {
      clearInterval(timer);
      await state.tail;
    },
  };
}

// Admits the Provisioned Volumes `spec` mounts against the Pool as it is now, creating absent ones.
async function admit(state: VolumeState, spec: ContainerSpec): Promise<Record<string, string>> {
  const { host } = state;
  const paths: Record<string, string> = {};
  const machine = host.self().name;
  for (const mount of spec.mounts ?? []) {
    if (mount.provisionedBytes === undefined) continue;
    const volume = mount.source;
    const pool = state.pool;
    if (pool === undefined) {
      throw new RpcError(
        "unsupported",
        `Provisioned Volume "${volume}" needs a Pool and Machine "${machine}" has none` +
          (state.problem === undefined ? "" : ` usable (${state.problem})`) +
          `: bind one with "ployz machine pool --set btrfs --machine ${machine}"`,
        { details: { volume, machine } },
      );
    }
    checkVolumeName(volume, "Provisioned Volume");
    const held = await pool.inspect(volume);
    if (held === undefined) {
      await createProvisioned(state, pool, spec.project, volume, mount.provisionedBytes);
    } else if (!held.writable) {
      const at = held.snapshots[held.snapshots.length - 1];
      throw new RpcError(
        "conflict",
        `Provisioned Volume "${volume}" is not ready on Machine "${machine}": it is a Mirror at ${at}, and only` +
          ` its Writer's Machine runs its Containers ("ployz volume move" makes this Machine the Writer)`,
        { details: { volume, machine, check: "volume_writer" } },
      );
    }
    paths[volume] = pool.mountPath(volume);
  }
  return paths;
}

// Creates an absent Provisioned Volume of `asked` bytes (0: none named in x-volumes, this Machine's default size).
async function createProvisioned(
  state: VolumeState,
  pool: Pool,
  project: string,
  volume: string,
  asked: number,
): Promise<void> {
  const machine = state.host.self().name;
  const size = asked > 0 ? asked : await readDefaultSizeFile(state.defaultsPath);
  if (size === undefined) {
    throw new RpcError(
      "invalid_argument",
      `Provisioned Volume "${volume}" names no size and Machine "${machine}" has no default Volume size: ` +
        `give x-volumes.${volume.slice((project + "_").length)}.size, or set one with ` +
        `"ployz machine pool --machine ${machine} --default-size SIZE"`,
      { details: { volume, machine, check: "volume_size" } },
    );
  }
  const space = await pool.space();
  if (size > space.totalBytes) {
    throw new RpcError(
      "invalid_argument",
      `Provisioned Volume "${volume}" asks ${size} bytes; the Pool of Machine "${machine}" holds ${space.totalBytes}`,
      { details: { volume, machine } },
    );
  }
  await pool.create(volume, size);
  const ledger = await readLedger(state);
  ledger[volume] = { ...ledger[volume], project, sizeBytes: size, epoch: 0 };
  await writeLedger(state, ledger);
  state.host.log(`volume: created Provisioned Volume "${volume}" (${size} bytes) in ${pool.where}`);
}

// The Containers mounting a Volume on this Machine, with their full specs.
async function volumeContainers(
  state: VolumeState,
  name: string,
): Promise<{ containers: { id: string; name: string; state: string; spec: Record<string, unknown> }[] }> {
  const volume = checkVolumeName(name);
  const found = await mounting(state, volume, (await readLedger(state))[volume]?.project);
  return {
    containers: found.map((c) => ({
      id: c.id,
      name: c.name,
      state: c.state,
      spec: c.spec as unknown as Record<string, unknown>,
    })),
  };
}

// A Snapshot of a Volume as a send stream, for a peer's receive; a Writer takes the run's Snapshot when a
// receiver first asks for it.
async function sendVolume(
  state: VolumeState,
  req: SendVolumeRequest,
  signal: AbortSignal,
): Promise<ReadableStream<Uint8Array>> {
  const { host } = state;
  const volume = checkVolumeName(req.volume);
  const p = requirePool(state);
  const stream = await serial(state, async () => {
    const held = await p.inspect(volume);
    if (held === undefined) {
      throw new RpcError("not_found", `Volume "${volume}" is not on Machine "${host.self().name}"`);
    }
    if (!held.snapshots.includes(req.snapshot)) {
      if (!held.writable) {
        throw new RpcError(
          "not_found",
          `Snapshot "${volume}@${req.snapshot}" is not on Machine "${host.self().name}", which is a Mirror`,
        );
      }
      await p.snapshot(volume, req.snapshot);
    }
    if (req.base !== undefined && !held.snapshots.includes(req.base)) {
      throw new RpcError(
        "not_found",
        `Base Snapshot "${volume}@${req.base}" is gone from Machine "${host.self().name}": send in full`,
      );
    }
    return p.send(
      volume,
      req.snapshot,
      req.base,
      AbortSignal.any([signal, AbortSignal.timeout(COPY_TASK_MS)]),
    );
  });
  stream.done.catch((error) =>
    host.log(`volume: sending ${volume}@${req.snapshot} failed: ${messageOf(error)}`)
  );
  return stream.output;
}

// `ployz machine pool`: binds a Pool and sets the default Volume size when asked, then answers the Pool and its
// copies.
async function machinePool(state: VolumeState, req: MachinePoolRequest): Promise<MachinePoolResponse> {
  const self = state.host.self();
  if (req.set !== undefined) {
    const set = req.set;
    await serial(state, () => bindPool(state, set));
  }
  const wanted = req.default_size_bytes;
  if (wanted !== undefined) {
    await serial(state, async () => {
      if (state.binding === undefined) {
        throw new RpcError(
          "unsupported",
          `Machine "${self.name}" has no Pool: bind one ("ployz machine pool --machine ${self.name} --set btrfs") before its default Volume size`,
        );
      }
      await writeDefaultSizeFile(state.defaultsPath, wanted);
      state.host.log(`volume: default Volume size set to ${wanted} bytes`);
    });
  }
  const defaultSize = await readDefaultSizeFile(state.defaultsPath);
  const { binding, pool, problem } = state;
  const space = pool === undefined ? undefined : await pool.space().catch(() => undefined);
  return {
    "machine_id": self.id,
    "machine_name": self.name,
    pool: binding === undefined ? null : {
      kind: binding.kind,
      where: pool?.where ?? (binding.kind === "zfs" ? binding.dataset : binding.root),
      ...(space === undefined ? {} : { "total_bytes": space.totalBytes, "free_bytes": space.freeBytes }),
      ...(problem === undefined ? {} : { problem }),
      ...(defaultSize === undefined ? {} : { "default_size_bytes": defaultSize }),
    },
    volumes: await listCopies(state),
  };
}

// Binds this Machine to a Pool; refused while the Pool bound now holds Volumes.
async function bindPool(state: VolumeState, set: NonNullable<MachinePoolRequest["set"]>): Promise<void> {
  const { host } = state;
  const next: PoolBinding = set.kind === "zfs"
    ? { kind: "zfs", dataset: set.dataset, mountRoot: set.mount_root }
    : {
      kind: "btrfs",
      root: btrfsPoolRoot(host.dataDir),
      ...(set.loop_size_bytes === undefined
        ? {}
        : { loop: { file: join(host.dataDir, "pool.img"), sizeBytes: set.loop_size_bytes } }),
    };
  const pool = state.pool;
  if (
    pool !== undefined && (await pool.list()).length > 0 &&
    JSON.stringify(next) !== JSON.stringify(state.binding)
  ) {
    throw new RpcError(
      "conflict",
      `Machine "${host.self().name}" holds Volumes in its Pool at ${pool.where}: it cannot be bound to another`,
    );
  }
  const opened = await (host.openPool ?? openBoundPool)(next, host.exec);
  await writePoolBinding(host.dataDir, next);
  state.binding = next;
  state.pool = opened;
  state.problem = undefined;
  host.log(`volume: bound to the ${next.kind} Pool at ${opened.where}`);
  await publish(state).catch((error) => host.log(`volume: publishing rows failed: ${messageOf(error)}`));
}

// Destroys this Machine's copy of a Volume (see VolumeRuntime.remove); its floor stays in the ledger.
async function removeCopy(state: VolumeState, volume: string, project: string): Promise<boolean> {
  checkVolumeName(volume);
  const p = state.pool;
  if (p === undefined) return false;
  const removed = await serial(state, async () => {
    if (state.tasks.get(volume)?.finished === false) {
      throw new RpcError(
        "busy",
        `A transition of Volume "${volume}" runs on Machine "${state.host.self().name}"`,
      );
    }
    if (await p.inspect(volume) === undefined) return false;
    const ledger = await readLedger(state);
    assertLedgerProject(ledger, volume, project);
    await runStep(state.steps, volume, { kind: "destroy" }, {
      volume,
      expected: { role: "none" },
      wanted: { role: "none" },
      gen: 0,
    });
    const floor = ledger[volume]?.floor;
    if (floor === undefined) delete ledger[volume];
    else ledger[volume] = { floor };
    await writeLedger(state, ledger);
    state.host.log(`volume: destroyed this Machine's copy of "${volume}" (a removal confirmed as Data Loss)`);
    return true;
  });
  if (removed) await publishInTurn(state);
  return removed;
}
