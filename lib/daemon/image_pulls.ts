/**
 * Registry pulls as bounded tasks on this Machine: one task per reference, whoever asks. The first
 * `ployz.image.pull.v1` starts Docker's pull and waits a little; asking again waits on the same task, so Docker
 * pulls once however many callers ask or retry. A finished task answers once more and is dropped: a failed one is
 * started again by the next ask (Docker keeps the layers it already has, so a re-run resumes), a done one answers
 * `present` from then on. Credentials live only in the running pull's closure.
 *
 * Which images Ployz pulled (or copied from a peer) is kept in `<data>/pulled_images.json`, a local list of image
 * ids that `ployz image prune` reads to leave other images alone. It is never replicated.
 *
 * @module
 */

import type { Engine, PullProgress, RegistryAuth } from "../deploy/mod.ts";
import type { PullImageResponse } from "../rpc/mod.ts";
import { CodedError, writeFileAtomic } from "../util/mod.ts";

/** At most this many pulls run at once on one Machine; more are refused as `unavailable`. */
export const MAX_RUNNING_PULLS = 8;
/** At most this many image ids are remembered as pulled by Ployz. */
const MAX_PULLED = 10_000;

interface Task {
  ref: string;
  startedAt: number;
  progress: PullProgress;
  state: "running" | "done" | "failed";
  error?: { code: string; message: string };
  settled: Promise<void>;
}

/** The pulled-images record: ids Ployz brought to this Machine. */
export class PulledImages {
  #ids: Set<string> | undefined;
  #writing: Promise<void> = Promise.resolve();

  /** Keeps the record at `path`. */
  constructor(readonly path: string) {}

  /** The ids recorded; an unreadable or malformed file counts as empty. */
  async ids(): Promise<Set<string>> {
    if (this.#ids !== undefined) return this.#ids;
    let ids = new Set<string>();
    try {
      const parsed = JSON.parse(await Deno.readTextFile(this.path));
      if (Array.isArray(parsed)) {
        ids = new Set(
          parsed.filter((x): x is string => typeof x === "string" && /^sha256:[a-f0-9]{64}$/.test(x)),
        );
      }
    } catch {
      // Absent or damaged: nothing is known to be Ployz's; prune then removes only what it pulls from now on.
    }
    this.#ids = ids;
    return ids;
  }

  /** Records `id` (and forgets the oldest beyond the bound). */
  async add(id: string): Promise<void> {
    const ids = await this.ids();
    if (ids.has(id)) return;
    ids.add(id);
    while (ids.size > MAX_PULLED) ids.delete(ids.values().next().value!);
    await this.#save(ids);
  }

  /** Forgets `removed`. */
  async remove(removed: Iterable<string>): Promise<void> {
    const ids = await this.ids();
    for (const id of removed) ids.delete(id);
    await this.#save(ids);
  }

  #save(ids: Set<string>): Promise<void> {
    this.#writing = this.#writing.catch(() => {}).then(() =>
      writeFileAtomic(this.path, JSON.stringify([...ids]), { mode: 0o600 })
    );
    return this.#writing;
  }
}

/** What the pull tasks need. */
export interface PullHost {
  /** This Machine's Docker. */
  readonly engine: Engine;
  /** This Machine's id. */
  machineId(): string;
  /** The record of what Ployz pulled. */
  readonly pulled: PulledImages;
  /** Aborts when the daemon stops. */
  readonly stopping: AbortSignal;
  /** One line per notable event (never credentials). */
  log(line: string): void;
}

function codeOf(error: unknown): string {
  return error instanceof CodedError ? error.code : "internal";
}

/** The running pulls of this Machine. */
export class PullTasks {
  readonly #tasks = new Map<string, Task>();

  /** Serves the pull tasks of `host`. */
  constructor(readonly host: PullHost) {}

  /** Starts or joins the pull of `ref`, waits up to `waitMs`, and answers with the task's state. */
  async pull(
    ref: string,
    auth: RegistryAuth | undefined,
    waitMs: number,
    signal: AbortSignal,
  ): Promise<PullImageResponse> {
    let task = this.#tasks.get(ref);
    if (task === undefined) {
      if (await this.host.engine.imageExists(ref, signal)) {
        return this.#answer({
          ref,
          startedAt: Date.now(),
          progress: empty(),
          state: "done",
          settled: Promise.resolve(),
        }, "present");
      }
      const running = [...this.#tasks.values()].filter((t) => t.state === "running").length;
      if (running >= MAX_RUNNING_PULLS) {
        throw new CodedError(
          "unavailable",
          `Cannot pull image "${ref}": ${running} pulls are already running here`,
        );
      }
      task = this.#start(ref, auth);
    }
    await Promise.race([
      task.settled,
      new Promise((resolve) => {
        const timer = setTimeout(resolve, waitMs);
        signal.addEventListener("abort", () => {
          clearTimeout(timer);
          resolve(undefined);
        }, { once: true });
        task!.settled.finally(() => clearTimeout(timer));
      }),
    ]);
    if (task.state !== "running") this.#tasks.delete(ref);
    return this.#answer(task, task.state);
  }

  #start(ref: string, auth: RegistryAuth | undefined): Task {
    const task: Task = {
      ref,
      startedAt: Date.now(),
      progress: empty(),
      state: "running",
      settled: Promise.resolve(),
    };
    this.#tasks.set(ref, task);
    task.settled = (async () => {
      try {
        task.progress = await this.host.engine.pullImage(ref, {
          auth,
          signal: this.host.stopping,
          onProgress: (p) => task.progress = p,
        });
        const id = await this.host.engine.imageId(ref);
        if (id !== undefined) await this.host.pulled.add(id);
        task.state = "done";
        this.host.log(
          `pulled image "${ref}": ${task.progress.layers} layers, ${task.progress.bytes} bytes in ${
            Date.now() - task.startedAt
          } ms`,
        );
      } catch (error) {
        task.state = "failed";
        task.error = { code: codeOf(error), message: error instanceof Error ? error.message : String(error) };
        this.host.log(`pull of image "${ref}" failed: ${task.error.code}: ${task.error.message}`);
      }
    })();
    return task;
  }

  #answer(task: Task, state: PullImageResponse["state"]): PullImageResponse {
    return {
      "machine_id": this.host.machineId(),
      ref: task.ref,
      state,
      layers: task.progress.layers,
      "layers_done": task.progress.layersDone,
      bytes: task.progress.bytes,
      "bytes_total": task.progress.bytesTotal,
      "duration_ms": state === "present" ? 0 : Date.now() - task.startedAt,
      ...(task.error === undefined ? {} : { error: task.error }),
    };
  }
}

function empty(): PullProgress {
  return { layers: 0, layersDone: 0, bytes: 0, bytesTotal: 0 };
}
