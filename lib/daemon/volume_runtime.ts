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
  RpcError,
  type RpcHandlers,
  type SetVolumeCopyRequest,
  type SetVolumeCopyResponse,
  type VolumeCopyWire,
} from "../rpc/mod.ts";
import type { ForwardTarget } from "./forward.ts";
import {
  assertLedgerProject,
  type Ledger,
  type LedgerEntry,
  readDefaultSizeFile,
  readLedgerFile,
  writeDefaultSizeFile,
  writeLedgerFile,
} from "./volume_ledger.ts";
import { asRpc, copyFromWire, copyToWire, message, publishRows } from "./volume_wire.ts";
import { COPY_TASK_MS, runStep, type StepContext } from "./volume_steps.ts";

export { COPY_TASK_MS } from "./volume_steps.ts";
import type { Store } from "../store/mod.ts";
import {
  btrfsPoolRoot,
  checkVolumeName,
  type Copy,
  copyAfter,
  decideCopy,
  type Exec,
  floorAfter,
  openBoundPool,
  type Pool,
  type PoolBinding,
  readPoolBinding,
  VolumeError,
  writePoolBinding,
} from "../volume/mod.ts";

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

/** How long a SetVolumeCopy request waits on its task before answering `busy`. */
export const COPY_ANSWER_MS = 3_000;

/** A transition running as a bounded task. */
interface CopyTask {
  key: string;
  done: Promise<void>;
  finished: boolean;
  error?: unknown;
}

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
  const ledgerPath = join(host.dataDir, "volumes.json");
  const readLedger = (): Promise<Ledger> => readLedgerFile(ledgerPath);
  const writeLedger = (ledger: Ledger): Promise<void> => writeLedgerFile(ledgerPath, ledger);
  const defaultsPath = join(host.dataDir, "volume_defaults.json");

  const readDefaultSize = (): Promise<number | undefined> => readDefaultSizeFile(defaultsPath);
  let binding: PoolBinding | undefined;
  let pool: Pool | undefined;
  let problem: string | undefined;
  // One change at a time: creating, publishing and binding never interleave.
  let tail: Promise<unknown> = Promise.resolve();
  function serial<T>(task: () => Promise<T>): Promise<T> {
    const run = tail.then(task, task);
    tail = run.catch(() => {});
    return run;
  }

  async function open(next: PoolBinding): Promise<void> {
    try {
      pool = await (host.openPool ?? openBoundPool)(next, host.exec);
      problem = undefined;
    } catch (error) {
      pool = undefined;
      problem = message(error);
      host.log(`volume: the bound Pool cannot be opened: ${problem}`);
    }
  }

  try {
    binding = await readPoolBinding(host.dataDir);
    if (binding !== undefined) await open(binding);
  } catch (error) {
    problem = message(error);
    host.log(`volume: ${problem}`);
  }

  async function copies(): Promise<VolumeCopyWire[]> {
    if (pool === undefined) return [];
    const ledger = await readLedger();
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
        ...(held.writable && usage?.changedBytes !== undefined
          ? { "changed_bytes": usage.changedBytes }
          : {}),
        ...(entry.project === undefined ? {} : { project: entry.project }),
      });
    }
    return out;
  }

  async function publish(): Promise<void> {
    const store = host.store();
    if (store === undefined || store.closed) return;
    publishRows(store, host.self().id, await copies(), new Date().toISOString());
  }

  const timer = setInterval(() => {
    if (pool === undefined) return;
    serial(publish).catch((error) => host.log(`volume: publishing rows failed: ${message(error)}`));
  }, host.rescanMs ?? 30_000);

  async function admit(spec: ContainerSpec): Promise<Record<string, string>> {
    const paths: Record<string, string> = {};
    const machine = host.self().name;
    for (const mount of spec.mounts ?? []) {
      if (mount.provisionedBytes === undefined) continue;
      const volume = mount.source;
      if (pool === undefined) {
        throw new RpcError(
          "unsupported",
          `Provisioned Volume "${volume}" needs a Pool and Machine "${machine}" has none` +
            (problem === undefined ? "" : ` usable (${problem})`) +
            `: bind one with "ployz machine pool --set btrfs --machine ${machine}"`,
          { details: { volume, machine } },
        );
      }
      checkVolumeName(volume, "Provisioned Volume");
      const held = await pool.inspect(volume);
      if (held === undefined) {
        // No size in x-volumes: this Machine's default Volume size.
        const size = mount.provisionedBytes > 0 ? mount.provisionedBytes : await readDefaultSize();
        if (size === undefined) {
          throw new RpcError(
            "invalid_argument",
            `Provisioned Volume "${volume}" names no size and Machine "${machine}" has no default Volume size: ` +
              `give x-volumes.${volume.slice((spec.project + "_").length)}.size, or set one with ` +
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
        const ledger = await readLedger();
        ledger[volume] = {
          ...ledger[volume],
          project: spec.project,
          sizeBytes: size,
          epoch: 0,
        };
        await writeLedger(ledger);
        host.log(`volume: created Provisioned Volume "${volume}" (${size} bytes) in ${pool.where}`);
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

  function requirePool(): Pool {
    if (pool !== undefined) return pool;
    const machine = host.self().name;
    throw new RpcError(
      "unsupported",
      `Machine "${machine}" has no Pool${
        problem === undefined ? "" : ` usable (${problem})`
      }: it holds no Volume copies`,
      { details: { machine } },
    );
  }

  async function currentCopy(volume: string): Promise<Copy> {
    const held = await requirePool().inspect(volume);
    if (held === undefined) return { role: "none" };
    if (held.writable) return { role: "writer", epoch: (await readLedger())[volume]?.epoch ?? 0 };
    return { role: "mirror", snapshot: held.snapshots[held.snapshots.length - 1] };
  }

  // A Writer keeps its own newest two run Snapshots, and so does a Mirror; never by another Machine's copy.
  async function prune(volume: string): Promise<void> {
    const held = await requirePool().inspect(volume);
    for (const old of held?.snapshots.slice(0, -2) ?? []) await requirePool().destroySnapshot(volume, old);
  }

  async function mounting(
    volume: string,
    project: string | undefined,
  ): Promise<{ id: string; name: string; state: string; spec: ContainerSpec }[]> {
    if (host.engine === undefined) return [];
    const found = await host.engine.listOwned(project === undefined ? {} : { project });
    const out: { id: string; name: string; state: string; spec: ContainerSpec }[] = [];
    for (const c of found) {
      const spec = await host.engine.readSpec(c.id).catch(() => undefined);
      if (spec?.mounts?.some((m) => m.source === volume && m.provisionedBytes !== undefined)) {
        out.push({ id: c.id, name: c.name, state: c.state, spec });
      }
    }
    return out;
  }

  async function containersOf(volume: string, project: string | undefined): Promise<string[]> {
    return (await mounting(volume, project)).map((c) => c.id);
  }

  // A transition's task runs outside the queue; its ledger change is queued, so it never writes back a ledger read
  // before another Volume's floor was raised.
  const patchLedger = (volume: string, patch: (entry: LedgerEntry) => LedgerEntry): Promise<void> =>
    serial(async () => {
      const ledger = await readLedger();
      ledger[volume] = patch(ledger[volume] ?? {});
      await writeLedger(ledger);
    });
  const steps: StepContext = { host, pool: requirePool, readLedger, patchLedger, containersOf, prune };
  const tasks = new Map<string, CopyTask>();

  async function setVolumeCopy(req: SetVolumeCopyRequest): Promise<SetVolumeCopyResponse> {
    const volume = checkVolumeName(req.volume);
    const self = host.self();
    const key = JSON.stringify([req.expected, req.wanted, req.gen]);
    const answer = async (outcome: SetVolumeCopyResponse["outcome"]): Promise<SetVolumeCopyResponse> => ({
      "machine_id": self.id,
      volume,
      outcome,
      copy: copyToWire(await currentCopy(volume)),
      floor: (await readLedger())[volume]?.floor ?? 0,
    });
    const waitOn = async (task: CopyTask): Promise<SetVolumeCopyResponse> => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([task.done, new Promise((r) => (timer = setTimeout(r, COPY_ANSWER_MS)))]);
      clearTimeout(timer);
      if (!task.finished) return await answer("busy");
      if (task.error !== undefined) {
        tasks.delete(volume);
        throw task.error;
      }
      return await answer("done");
    };
    const running = tasks.get(volume);
    if (running !== undefined && running.key === key) return await waitOn(running);
    return await serial(async (): Promise<SetVolumeCopyResponse | CopyTask> => {
      // Checked here, in turn, not before: a request queued behind one that started a task (a killed run's
      // receive) must see that task, or it would be decided against a copy the task is still changing.
      const now = tasks.get(volume);
      if (now !== undefined && !now.finished) {
        if (now.key === key) return now;
        throw new RpcError(
          "busy",
          `Another transition of Volume "${volume}" runs on Machine "${self.name}"`,
          { details: { volume, copy: copyToWire(await currentCopy(volume)) } },
        );
      }
      tasks.delete(volume);
      const ledger = await readLedger();
      const floor = ledger[volume]?.floor ?? 0;
      const current = await currentCopy(volume);
      const decision = decideCopy(current, floor, {
        expected: copyFromWire(req.expected),
        wanted: copyFromWire(req.wanted),
        gen: req.gen,
      });
      if (decision.kind === "refused") {
        throw new RpcError("conflict", `Volume "${volume}" on Machine "${self.name}": ${decision.message}`, {
          details: { volume, reason: decision.reason, copy: copyToWire(current), floor },
        });
      }
      const next = floorAfter(floor, req.gen, decision);
      if (next !== floor) {
        ledger[volume] = { ...ledger[volume], floor: next };
        await writeLedger(ledger);
      }
      if (decision.kind === "at_want") {
        // Writer{start} again on a Writer: its Container is found by creation key and started (Docker runs once).
        const spec = req.start?.spec as ContainerSpec | undefined;
        if (req.wanted.role === "writer" && spec !== undefined && host.ensureStarted !== undefined) {
          await host.ensureStarted(spec);
        }
        return await answer("at_want");
      }
      const step = decision.step;
      host.log(`volume: ${volume}: ${step.kind} toward ${JSON.stringify(copyAfter(step))} (gen ${req.gen})`);
      const task: CopyTask = { key, finished: false, done: Promise.resolve() };
      task.done = runStep(steps, volume, step, req).then(
        () => {
          task.finished = true;
        },
        (error) => {
          task.finished = true;
          task.error = error instanceof VolumeError ? asRpc(error) : error;
          host.log(`volume: ${volume}: ${step.kind} failed: ${message(error)}`);
        },
      ).finally(() => publish().catch(() => {}));
      tasks.set(volume, task);
      return task;
    }).then((result) => ("outcome" in result ? result : waitOn(result)));
  }

  return {
    handlers: {
      async volumeContainers(req) {
        const volume = checkVolumeName(req.volume);
        const found = await mounting(volume, (await readLedger())[volume]?.project);
        return {
          containers: found.map((c) => ({
            id: c.id,
            name: c.name,
            state: c.state,
            spec: c.spec as unknown as Record<string, unknown>,
          })),
        };
      },
      async setVolumeCopy(req) {
        try {
          return await setVolumeCopy(req);
        } catch (error) {
          throw asRpc(error);
        }
      },
      async sendVolume(req, ctx) {
        const volume = checkVolumeName(req.volume);
        try {
          const p = requirePool();
          const stream = await serial(async () => {
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
              // A Writer takes the run's Snapshot when a receiver first asks for it.
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
              AbortSignal.any([ctx.signal, AbortSignal.timeout(COPY_TASK_MS)]),
            );
          });
          stream.done.catch((error) =>
            host.log(`volume: sending ${volume}@${req.snapshot} failed: ${message(error)}`)
          );
          return stream.output;
        } catch (error) {
          throw asRpc(error);
        }
      },
      async machinePool(req) {
        const self = host.self();
        try {
          if (req.set !== undefined) {
            const set = req.set;
            await serial(async () => {
              const next: PoolBinding = set.kind === "zfs"
                ? { kind: "zfs", dataset: set.dataset, mountRoot: set.mount_root }
                : {
                  kind: "btrfs",
                  root: btrfsPoolRoot(host.dataDir),
                  ...(set.loop_size_bytes === undefined
                    ? {}
                    : { loop: { file: join(host.dataDir, "pool.img"), sizeBytes: set.loop_size_bytes } }),
                };
              if (
                pool !== undefined && (await pool.list()).length > 0 &&
                JSON.stringify(next) !== JSON.stringify(binding)
              ) {
                throw new RpcError(
                  "conflict",
                  `Machine "${self.name}" holds Volumes in its Pool at ${pool.where}: it cannot be bound to another`,
                );
              }
              const opened = await (host.openPool ?? openBoundPool)(next, host.exec);
              await writePoolBinding(host.dataDir, next);
              binding = next;
              pool = opened;
              problem = undefined;
              host.log(`volume: bound to the ${next.kind} Pool at ${opened.where}`);
              await publish().catch((error) => host.log(`volume: publishing rows failed: ${message(error)}`));
            });
          }
          const wanted = req.default_size_bytes;
          if (wanted !== undefined) {
            await serial(async () => {
              if (binding === undefined) {
                throw new RpcError(
                  "unsupported",
                  `Machine "${self.name}" has no Pool: bind one ("ployz machine pool --machine ${self.name} --set btrfs") before its default Volume size`,
                );
              }
              await writeDefaultSizeFile(defaultsPath, wanted);
              host.log(`volume: default Volume size set to ${wanted} bytes`);
            });
          }
          const defaultSize = await readDefaultSize();
          const space = pool === undefined ? undefined : await pool.space().catch(() => undefined);
          return {
            "machine_id": self.id,
            "machine_name": self.name,
            pool: binding === undefined ? null : {
              kind: binding.kind,
              where: pool?.where ?? (binding.kind === "zfs" ? binding.dataset : binding.root),
              ...(space === undefined
                ? {}
                : { "total_bytes": space.totalBytes, "free_bytes": space.freeBytes }),
              ...(problem === undefined ? {} : { problem }),
              ...(defaultSize === undefined ? {} : { "default_size_bytes": defaultSize }),
            },
            volumes: await copies(),
          };
        } catch (error) {
          throw asRpc(error);
        }
      },
    },
    async prepare(spec) {
      if (!(spec.mounts ?? []).some((m) => m.provisionedBytes !== undefined)) return {};
      try {
        const paths = await serial(() => admit(spec));
        await serial(publish).catch((error) => host.log(`volume: publishing rows failed: ${message(error)}`));
        return paths;
      } catch (error) {
        throw asRpc(error);
      }
    },
    publish: () => serial(publish),
    async remove(volume, project) {
      checkVolumeName(volume);
      if (pool === undefined) return false;
      const p = pool;
      const removed = await serial(async () => {
        if (tasks.get(volume)?.finished === false) {
          throw new RpcError(
            "busy",
            `A transition of Volume "${volume}" runs on Machine "${host.self().name}"`,
          );
        }
        if (await p.inspect(volume) === undefined) return false;
        const ledger = await readLedger();
        assertLedgerProject(ledger, volume, project);
        await runStep(steps, volume, { kind: "destroy" }, {
          volume,
          expected: { role: "none" },
          wanted: { role: "none" },
          gen: 0,
        });
        const floor = ledger[volume]?.floor;
        if (floor === undefined) delete ledger[volume];
        else ledger[volume] = { floor };
        await writeLedger(ledger);
        host.log(`volume: destroyed this Machine's copy of "${volume}" (a removal confirmed as Data Loss)`);
        return true;
      });
      if (removed) {
        await serial(publish).catch((error) => host.log(`volume: publishing rows failed: ${message(error)}`));
      }
      return removed;
    },
    async stop() {
      clearInterval(timer);
      await tail;
    },
  };
}
