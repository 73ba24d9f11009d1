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

import type { Engine, PullProgress, RegistryAuth } from "../deploy/machine/mod.ts";
import type { PullImageResponse } from "../rpc/mod.ts";
import { CodedError, messageOf, writeFileAtomic } from "../util/mod.ts";

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

/**
 * The pulled-images record: ids Ployz brought to this Machine, and the pinned references of images copied from a
 * peer. `docker save` keeps no registry digest, so after a copy Docker cannot find `name:tag@sha256:…` by name; the
 * alias says which local image id it is (the image id is the config digest, the same on every Machine).
 */
export class PulledImages {
  #ids: Set<string> | undefined;
  #aliases = new Map<string, string>();
  #writing: Promise<void> = Promise.resolve();

  /** Keeps the record at `path`. */
  constructor(readonly path: string) {}

  async #load(): Promise<Set<string>> {
    if (this.#ids !== undefined) return this.#ids;
    let ids = new Set<string>();
    try {
      const parsed = JSON.parse(await Deno.readTextFile(this.path));
      const list = Array.isArray(parsed) ? parsed : parsed?.ids;
      if (Array.isArray(list)) ids = new Set(list.filter(isImageId));
      const aliases = parsed?.aliases;
      if (aliases !== null && typeof aliases === "object" && !Array.isArray(aliases)) {
        for (const [ref, id] of Object.entries(aliases)) {
          if (typeof id === "string" && isImageId(id) && ref.length <= 1024 && PINNED.test(ref)) {
            this.#aliases.set(ref, id);
          }
        }
      }
    } catch {
      // Absent or damaged: nothing is known to be Ployz's; prune then removes only what it pulls from now on.
    }
    this.#ids = ids;
    return ids;
  }

  /** The ids recorded; an unreadable or malformed file counts as empty. */
  async ids(): Promise<Set<string>> {
    return await this.#load();
  }

  /** The local image id a pinned reference was copied as, if any. */
  async alias(ref: string): Promise<string | undefined> {
    await this.#load();
    return this.#aliases.get(ref);
  }

  /** The pinned references copied as `id`. */
  async aliasesOf(id: string): Promise<string[]> {
    await this.#load();
    return [...this.#aliases].filter(([, v]) => v === id).map(([k]) => k);
  }

  /** Records `id` (and forgets the oldest beyond the bound); `ref` names it when it came from a peer. */
  async add(id: string, ref?: string): Promise<void> {
    const ids = await this.#load();
    if (ids.has(id) && (ref === undefined || this.#aliases.get(ref) === id)) return;
    ids.add(id);
    if (ref !== undefined && PINNED.test(ref)) this.#aliases.set(ref, id);
    while (ids.size > MAX_PULLED) ids.delete(ids.values().next().value!);
    while (this.#aliases.size > MAX_PULLED) this.#aliases.delete(this.#aliases.keys().next().value!);
    await this.#save(ids);
  }

  /** Forgets `removed`. */
  async remove(removed: Iterable<string>): Promise<void> {
    const ids = await this.#load();
    for (const id of removed) {
      ids.delete(id);
      for (const [ref, v] of this.#aliases) if (v === id) this.#aliases.delete(ref);
    }
    await this.#save(ids);
  }

  #save(ids: Set<string>): Promise<void> {
    const body = JSON.stringify({ ids: [...ids], aliases: Object.fromEntries(this.#aliases) });
    this.#writing = this.#writing.catch(() => {}).then(() =>
      writeFileAtomic(this.path, body, { mode: 0o600 })
    );
    return this.#writing;
  }
}

const PINNED = /@sha256:[a-f0-9]{64}$/;

function isImageId(x: unknown): x is string {
  return typeof x === "string" && /^sha256:[a-f0-9]{64}$/.test(x);
}

/** A local image found by reference: Docker's name for it, or the alias of a pinned reference copied from a peer. */
export interface LocalImage {
  /** Image id. */
  id: string;
  /** What to hand Docker to use it: the reference itself, or the id. */
  dockerRef: string;
  /** Registry digests, the copied pinned references included (`repo@sha256:…`). */
  repoDigests: string[];
}

/** Finds `ref` on this Machine, through Docker's names first, then the copy aliases. */
export async function localImage(
  engine: Engine,
  pulled: PulledImages,
  ref: string,
  signal?: AbortSignal,
): Promise<LocalImage | undefined> {
  let image = await engine.inspectImage(ref, signal);
  let dockerRef = ref;
  if (image === undefined) {
    const id = await pulled.alias(ref);
    if (id === undefined) return undefined;
    image = await engine.inspectImage(id, signal);
    if (image === undefined) return undefined;
    dockerRef = id;
  }
  const copied = (await pulled.aliasesOf(image.Id)).map((r) => {
    const at = r.lastIndexOf("@");
    const name = r.slice(0, at);
    const slash = name.lastIndexOf("/");
    const colon = name.lastIndexOf(":");
    return `${colon > slash ? name.slice(0, colon) : name}${r.slice(at)}`;
  });
  return { id: image.Id, dockerRef, repoDigests: [...new Set([...(image.RepoDigests ?? []), ...copied])] };
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
  readonly #recording = new Set<Promise<void>>();

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
    const present = task === undefined &&
      await localImage(this.host.engine, this.host.pulled, ref, signal) !== undefined;
    // Another ask may have started the task while this one looked at Docker.
    task ??= this.#tasks.get(ref);
    if (task === undefined) {
      if (present) {
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
      } catch (error) {
        task.state = "failed";
        task.error = { code: codeOf(error), message: messageOf(error) };
        this.host.log(`pull of image "${ref}" failed: ${task.error.code}: ${task.error.message}`);
        return;
      }
      // Done once Docker holds the image: the record (a durable write) and the tag follow beside the answer, not
      // before it. Containers run the pinned reference, and prune leaves alone an image it has no record of yet.
      const recording = this.#record(ref, task.progress, Date.now() - task.startedAt);
      this.#recording.add(recording);
      recording.finally(() => this.#recording.delete(recording));
      task.state = "done";
    })();
    return task;
  }

  /** Records `ref` as Ployz's and tags it as written; failures are logged, never thrown. */
  async #record(ref: string, progress: PullProgress, pulledMs: number): Promise<void> {
    const started = Date.now();
    try {
      const id = await this.host.engine.imageId(ref);
      await Promise.all([
        id === undefined ? undefined : this.host.pulled.add(id),
        tagAsWritten(this.host.engine, ref, id),
      ]);
      this.host.log(
        `pulled image "${ref}": ${progress.layers} layers, ${progress.bytes} bytes in ${pulledMs} ms, ` +
          `recorded and tagged in ${Date.now() - started} ms`,
      );
    } catch (error) {
      this.host.log(
        `pulled image "${ref}" in ${pulledMs} ms; recording it failed: ${messageOf(error)}`,
      );
    }
  }

  /** Resolves once every finished pull is recorded and tagged. */
  async recorded(): Promise<void> {
    await Promise.all([...this.#recording]);
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

/**
 * Tags a pulled or copied pinned image with the tag it was written with (`name:tag@sha256:…` → `name:tag`), as
 * `docker pull name:tag` leaves it, so the next Deploy finds the tag here. Best effort: the image runs by digest.
 */
export async function tagAsWritten(engine: Engine, ref: string, id: string | undefined): Promise<void> {
  const at = ref.lastIndexOf("@");
  const name = at < 0 ? ref : ref.slice(0, at);
  const slash = name.lastIndexOf("/");
  const colon = name.lastIndexOf(":");
  if (id === undefined || at < 0 || colon <= slash) return;
  await engine.tagImage(id, { repo: name.slice(0, colon), tag: name.slice(colon + 1) }).catch(() => {});
}

function empty(): PullProgress {
  return { layers: 0, layersDone: 0, bytes: 0, bytesTotal: 0 };
}
