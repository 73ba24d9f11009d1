// Builds of a Project's `build:` Services on a Machine that accepts Builds (default: the Entry Machine). Each
// context is read and packed here, on the operator's side; its content digest tags the image, so a context the
// builder already built is "up to date" and sent nowhere. Otherwise the tar is sent in pieces over Machine RPC (its
// size said first) and built with the builder's Docker, the output streamed back live. Other Machines get the image
// by the Deploy's peer copy from the builder. Every failure names the Service and the stage.
import { Buffer } from "node:buffer";
import type { NormalizedBuild, NormalizedProject } from "../deploy/mod.ts";
import { INLINE_DOCKERFILE_NAME } from "../deploy/mod.ts";
import {
  type BuildFrame,
  type BuildRequest,
  type BuildUploadRequest,
  type BuildUploadResponse,
  type CallOptions,
  CAPABILITIES,
  MAX_UPLOAD_PIECE,
  parseBuildFrame,
} from "../rpc/mod.ts";
import { CodedError, linesUntilAborted, messageOf } from "../util/mod.ts";
import {
  buildTag,
  type ContextLimits,
  discardContext,
  MAX_CONTEXT_BYTES,
  packContext,
  type PackedContext,
} from "./build_context.ts";
import type { DeployMachineApi, DeployMachines } from "./deploy_machines.ts";
import { OperatorError } from "./errors.ts";

/** Where a build failed: reading the context here, sending it, building it, or copying the image to a Machine. */
export type BuildStage = "read context" | "send" | "build" | "distribute";

/** What a builder Machine is asked; `lib/rpc`'s `MachineClient` serves it. */
export interface BuilderApi {
  /** `ployz.image.inspect.v1`. */
  inspectImage(request: { ref: string }): Promise<{ present: boolean; id?: string }>;
  /** `ployz.image.build_upload.v1`. */
  buildUpload(request: BuildUploadRequest, options?: CallOptions): Promise<BuildUploadResponse>;
  /** `ployz.image.build.v1`. */
  buildImage(request: BuildRequest, options?: CallOptions): Promise<ReadableStream<Uint8Array>>;
  /** Throws `unsupported` when the Machine does not serve `capability`. */
  requireCapability(capability: string): Promise<void>;
}

/** The Machine that builds. */
export interface Builder {
  /** Its id. */
  id: string;
  /** Its name. */
  name: string;
  /** Its Machine RPC. */
  api: BuilderApi;
}

/** One Service's build, prepared. */
export interface BuildJob {
  /** The Project. */
  project: string;
  /** The Service. */
  service: string;
  /** What the file says to build. */
  build: NormalizedBuild;
  /**
   * The reference the Service runs: `<project>-<service>:<digest>`, or with `-<random>` after it for an image
   * built again with `--no-cache`.
   */
  ref: string;
  /** Every tag the image gets: `ref`, then the file's `image:` if it names one. */
  tags: string[];
  /** The context's content digest. */
  digest: string;
  /** The builder already holds the image: nothing is sent or built. */
  upToDate: boolean;
  /** The packed context, until sent or discarded. */
  packed?: PackedContext;
  /** Tar bytes, bytes of the files on disk, entries and ignored entries. */
  size: { bytes: number; fileBytes: number; entries: number; ignored: number };
}

/** A build as the operator sees it happen. */
export type BuildEvent =
  | {
    type: "planned";
    service: string;
    machine: string;
    ref: string;
    upToDate: boolean;
    bytes: number;
    fileBytes: number;
    entries: number;
    ignored: number;
    limit: number;
  }
  | { type: "sending"; service: string; machine: string; bytes: number; limit: number }
  | { type: "sent"; service: string; bytes: number; durationMs: number }
  | { type: "waiting"; service: string; text: string }
  | { type: "log"; service: string; text: string }
  | { type: "built"; service: string; ref: string; durationMs: number; built: boolean }
  | { type: "failed"; service: string; stage: BuildStage; message: string; tail: string[] };

/** Where build events go. */
export type BuildReport = (event: BuildEvent) => void;

/** Options of {@link prepareBuilds}. */
export interface PrepareOptions {
  /** Only these Services (`ployz build web api`); default every Service with `build:`. */
  services?: string[];
  /**
   * `--no-cache`: build again even when the builder holds the image, without Docker's layer cache. The new image
   * gets a tag of its own (the content tag, a dash and a random part): an image built again is another image, and
   * a tag must name one image on every Machine, so the content tag is never moved onto it.
   */
  noCache?: boolean;
  /**
   * The reference each Service runs now (its Saved State): one built from the same content with `--no-cache` is
   * kept while the builder holds it, so the next Deploy does not go back to the image built before it.
   */
  current?: Record<string, string>;
  /** Context limits; tests lower them. */
  limits?: ContextLimits;
}

/** Picks the builder: the Machine `wanted` names (id, name or id prefix), else the Entry Machine. */
export function pickBuilder(machines: DeployMachines, wanted?: string): Builder {
  const handles = machines.handles;
  let found = handles[0];
  if (wanted !== undefined) {
    const matches = handles.filter((h) =>
      h.id === wanted || h.name === wanted || (wanted.length >= 4 && h.id.startsWith(wanted))
    );
    if (matches.length === 0) {
      const omitted = machines.omissions.find((o) => o.machineName === wanted);
      throw new OperatorError(
        omitted === undefined ? "not_found" : "unavailable",
        omitted === undefined
          ? `No Machine "${wanted}" for "--builder" among the Machines the Entry Machine holds`
          : `Machine "${wanted}" for "--builder" cannot be reached: ${omitted.reason}`,
        { machine: wanted },
      );
    }
    if (matches.length > 1) {
      throw new OperatorError(
        "ambiguous",
        `Machine "${wanted}" for "--builder" matches ${matches.length} Machines: give an id`,
      );
    }
    found = matches[0];
  }
  if (found === undefined) throw new OperatorError("unavailable", "No Machine can be reached to build on");
  const api = found.api as DeployMachineApi & Partial<BuilderApi>;
  if (api.buildUpload === undefined || api.buildImage === undefined) {
    throw new OperatorError(
      "unsupported",
      `Machine "${found.name}" cannot be asked to build from this client`,
    );
  }
  return { id: found.id, name: found.name, api: api as unknown as BuilderApi };
}

/** Every tag a build gives its image: `ref`, then the file's `image:` if it names another. */
function tagsOf(ref: string, build: NormalizedBuild): string[] {
  return build.image === null || build.image === ref ? [ref] : [ref, build.image];
}

/** A tag of its own for an image built again from `contentRef`'s content: the content tag, a dash, 8 hex digits. */
function rebuildRef(contentRef: string): string {
  const random = crypto.getRandomValues(new Uint8Array(4));
  return `${contentRef}-${[...random].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

function stageError(service: string, stage: BuildStage, machine: string, error: unknown): OperatorError {
  const code = error instanceof CodedError ? error.code : "internal";
  const message = messageOf(error);
  return new OperatorError(
    code,
    `Build of service "${service}" failed at stage "${stage}"${
      stage === "read context" ? "" : ` on Machine "${machine}"`
    }: ${message}`,
    { service, stage, machine },
  );
}

/** Removes every prepared job's temporary context. */
export async function discardBuilds(jobs: readonly BuildJob[]): Promise<void> {
  for (const job of jobs) {
    if (job.packed !== undefined) await discardContext(job.packed);
    job.packed = undefined;
  }
}

/**
 * Reads and packs each `build:` Service's context, tags its image with the content digest, and asks the builder
 * whether it already holds that image. Answers the Project with every built Service's `image` set to its tag.
 * Nothing is sent yet.
 */
export async function prepareBuilds(
  project: NormalizedProject,
  builder: Builder,
  report: BuildReport,
  options: PrepareOptions = {},
): Promise<{ project: NormalizedProject; jobs: BuildJob[] }> {
  const wanted = options.services;
  const built = Object.values(project.services).filter((s) => s.build !== undefined);
  for (const name of wanted ?? []) {
    if (project.services[name] === undefined) {
      throw new OperatorError("not_found", `No service "${name}" in Project "${project.name}"`, {
        service: name,
      });
    }
    if (project.services[name].build === undefined) {
      throw new OperatorError(
        "invalid_argument",
        `Service "${name}" has no "build:": its image "${project.services[name].image}" is not built`,
        {
          service: name,
        },
      );
    }
  }
  const jobs: BuildJob[] = [];
  const services = { ...project.services };
  try {
    for (const service of built) {
      const build = options.noCache ? { ...service.build!, noCache: true } : service.build!;
      let packed: PackedContext;
      try {
        packed = await packContext(build, options.limits);
      } catch (error) {
        throw stageError(service.name, "read context", builder.name, error);
      }
      const repository = `${project.name}-${service.name}`;
      const contentRef = `${repository}:${buildTag(packed.digest)}`;
      const asked = wanted === undefined || wanted.includes(service.name);
      const running = options.current?.[service.name];
      const rebuilt = running !== undefined && running.startsWith(`${contentRef}-`) ? running : undefined;
      const ref = options.noCache && asked ? rebuildRef(contentRef) : rebuilt ?? contentRef;
      const job: BuildJob = {
        project: project.name,
        service: service.name,
        build,
        ref,
        tags: tagsOf(ref, build),
        digest: packed.digest,
        upToDate: false,
        packed,
        size: {
          bytes: packed.bytes,
          fileBytes: packed.fileBytes,
          entries: packed.entries,
          ignored: packed.ignored,
        },
      };
      jobs.push(job);
      if (!asked) {
        // Not asked for: the Service keeps the tag of its current context, nothing is built.
        job.upToDate = true;
      } else if (!options.noCache) {
        try {
          job.upToDate = (await builder.api.inspectImage({ ref })).present;
          if (!job.upToDate && rebuilt !== undefined) {
            // The rebuilt image is gone from the builder: the content tag serves again.
            job.ref = contentRef;
            job.tags = tagsOf(contentRef, build);
            job.upToDate = (await builder.api.inspectImage({ ref: contentRef })).present;
          }
        } catch (error) {
          throw stageError(service.name, "build", builder.name, error);
        }
      }
      services[service.name] = { ...service, image: job.ref };
      if (job.upToDate) {
        await discardContext(packed);
        job.packed = undefined;
      }
      if (asked) {
        report({
          type: "planned",
          service: service.name,
          machine: builder.name,
          ref: job.ref,
          upToDate: job.upToDate,
          ...job.size,
          limit: options.limits?.maxBytes ?? MAX_CONTEXT_BYTES,
        });
      }
    }
  } catch (error) {
    await discardBuilds(jobs);
    throw error;
  }
  return { project: { ...project, services }, jobs };
}

async function sendContext(
  job: BuildJob,
  builder: Builder,
  upload: string,
  report: BuildReport,
): Promise<void> {
  const packed = job.packed!;
  report({
    type: "sending",
    service: job.service,
    machine: builder.name,
    bytes: packed.bytes,
    limit: MAX_CONTEXT_BYTES,
  });
  const started = performance.now();
  const file = packed.file;
  await file.seek(0, Deno.SeekMode.Start);
  const piece = new Uint8Array(MAX_UPLOAD_PIECE);
  let offset = 0;
  for (;;) {
    let filled = 0;
    while (filled < piece.length) {
      const n = await file.read(piece.subarray(filled));
      if (n === null) break;
      filled += n;
    }
    if (filled === 0 && offset > 0) break;
    const data = Buffer.from(piece.subarray(0, filled)).toString("base64");
    let answer: BuildUploadResponse | undefined;
    for (let attempt = 1; answer === undefined; attempt++) {
      try {
        answer = await builder.api.buildUpload({ upload, offset, data }, {
          signal: AbortSignal.timeout(60_000),
        });
      } catch (error) {
        // A piece whose answer was lost is sent again at the same offset; the Machine overwrites from there.
        if (attempt >= 3 || !(error instanceof CodedError && error.code === "unavailable")) throw error;
      }
    }
    offset += filled;
    if (answer.received !== offset) {
      throw new OperatorError(
        "internal",
        `Machine "${builder.name}" holds ${answer.received} bytes of ${offset} sent`,
      );
    }
    if (filled < piece.length) break;
  }
  report({
    type: "sent",
    service: job.service,
    bytes: offset,
    durationMs: Math.round(performance.now() - started),
  });
}

/** How often a builder is asked to say it is alive while it builds or waits. */
export const BUILD_HEARTBEAT_MS = 3000;
/** A builder that has said it is alive and then sends nothing this long is taken as cut off. */
export const BUILD_SILENCE_MS = 15_000;
/** Before its first frame, a builder (perhaps an older one that sends no heartbeat) is given this long. */
const BUILD_FIRST_FRAME_MS = 60_000;

async function runBuild(job: BuildJob, builder: Builder, upload: string, report: BuildReport): Promise<void> {
  const packed = job.packed!;
  const build = job.build;
  // A Machine cut from the mesh mid-build answers nothing and closes nothing: its silence is the only sign.
  const silence = new AbortController();
  let silent = 0;
  let heartbeats = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = (ms: number): void => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      silent = ms;
      silence.abort();
    }, ms);
  };
  arm(BUILD_FIRST_FRAME_MS);
  try {
    await readBuild(job, builder, upload, report, packed, build, silence.signal, (frame) => {
      if (frame.type === "alive") heartbeats = true;
      // An older builder sends no heartbeat: its silence proves nothing, so it is not bounded.
      if (heartbeats) arm(BUILD_SILENCE_MS);
      else clearTimeout(timer);
    });
  } catch (error) {
    if (silent === 0) throw error;
    const message = `Machine "${builder.name}" sent nothing for ${
      Math.round(silent / 1000)
    } s: it may be cut off from this side (a build it had started may still finish there; run again once it is reachable)`;
    report({ type: "failed", service: job.service, stage: "build", message, tail: [] });
    throw new OperatorError(
      "unavailable",
      `Build of service "${job.service}" failed at stage "build" on Machine "${builder.name}": ${message}`,
      { service: job.service, stage: "build", machine: builder.name },
    );
  } finally {
    clearTimeout(timer);
  }
}

async function readBuild(
  job: BuildJob,
  builder: Builder,
  upload: string,
  report: BuildReport,
  packed: PackedContext,
  build: NormalizedBuild,
  signal: AbortSignal,
  heard: (frame: BuildFrame) => void,
): Promise<void> {
  const stream = await builder.api.buildImage({
    upload,
    bytes: packed.bytes,
    sha256: packed.tarSha256,
    project: job.project,
    service: job.service,
    digest: job.digest,
    tags: job.tags,
    dockerfile: build.dockerfileInline !== null ? INLINE_DOCKERFILE_NAME : build.dockerfile ?? "Dockerfile",
    args: build.args,
    target: build.target,
    labels: build.labels,
    "cache_from": build.cacheFrom,
    "no_cache": build.noCache,
    "heartbeat_ms": BUILD_HEARTBEAT_MS,
  }, { signal });
  let last: BuildFrame | undefined;
  const take = (line: string): void => {
    if (line.trim() === "") return;
    const frame = parseBuildFrame(line);
    heard(frame);
    if (frame.type === "alive") return;
    last = frame;
    if (frame.type === "log") report({ type: "log", service: job.service, text: frame.text });
    if (frame.type === "waiting") report({ type: "waiting", service: job.service, text: frame.text });
  };
  // The silence bound ends the reading itself: a builder cut off from the mesh answers nothing, and the pending
  // read of its answer was once seen not to end when the request was aborted (150 s, in a loaded CI run).
  for await (const line of linesUntilAborted(stream, signal)) take(line);
  signal.throwIfAborted();
  const end = last as BuildFrame | undefined;
  if (end?.type === "done") {
    report({
      type: "built",
      service: job.service,
      ref: job.ref,
      durationMs: end.duration_ms,
      built: end.built,
    });
    return;
  }
  const failure = end?.type === "failed" ? end : {
    code: "unavailable",
    message: `the answer from Machine "${builder.name}" ended before the build did`,
    tail: [],
  };
  report({
    type: "failed",
    service: job.service,
    stage: "build",
    message: failure.message,
    tail: failure.tail,
  });
  throw new OperatorError(
    (failure.code as OperatorError["code"]) ?? "internal",
    `Build of service "${job.service}" failed at stage "build" on Machine "${builder.name}": ${failure.message}`,
    { service: job.service, stage: "build", machine: builder.name, tail: failure.tail },
  );
}

/**
 * Sends and builds every prepared job that is not up to date, one after another, on `builder`. The first failure
 * ends the run, naming the Service and the stage; temporary contexts are removed either way.
 */
export async function runBuilds(
  jobs: readonly BuildJob[],
  builder: Builder,
  report: BuildReport,
): Promise<void> {
  // Reports a stage's failure as a build event and gives the error that ends the Deploy.
  const reportedFailure = (service: string, stage: "send" | "build", error: unknown): OperatorError => {
    report({ type: "failed", service, stage, message: String((error as Error).message), tail: [] });
    return stageError(service, stage, builder.name, error);
  };
  try {
    const pending = jobs.filter((job) => !job.upToDate);
    if (pending.length === 0) return;
    for (const capability of [CAPABILITIES.buildUpload, CAPABILITIES.buildImage]) {
      try {
        await builder.api.requireCapability(capability);
      } catch (error) {
        throw stageError(pending[0].service, "send", builder.name, error);
      }
    }
    for (const job of pending) {
      const upload = crypto.randomUUID();
      try {
        await sendContext(job, builder, upload, report);
      } catch (error) {
        throw reportedFailure(job.service, "send", error);
      }
      try {
        await runBuild(job, builder, upload, report);
      } catch (error) {
        if (error instanceof OperatorError && error.details.stage === "build") throw error;
        throw reportedFailure(job.service, "build", error);
      }
      if (job.packed !== undefined) await discardContext(job.packed);
      job.packed = undefined;
    }
  } finally {
    await discardBuilds(jobs);
  }
}
