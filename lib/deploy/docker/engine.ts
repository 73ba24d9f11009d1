/**
 * `Engine`: the daemon's handle on its Machine's Docker, built on dockerode. One deadline policy for every
 * request, ownership checked before every mutation, owned objects found through label filters.
 *
 * @module
 */

import type { IncomingMessage } from "node:http";
import { join } from "node:path";
import { buildImage, type BuildOptions, type BuiltImage } from "./build.ts";
import { type Client, openClient, request } from "./client.ts";
import {
  checkNetwork,
  connectNetwork,
  createContainer,
  type CreatedContainer,
  type CreateOptions,
  inspectContainer,
  listOwned,
  type OwnedFilter,
  readSpec,
  removeContainer,
  renameContainer,
  startContainer,
  stopContainer,
} from "./containers.ts";
import { type Deadlines, resolveDeadlines } from "./deadline.ts";
import { DockerError } from "./errors.ts";
import { containerEvents, type EventOptions } from "./events.ts";
import {
  createExec,
  type ExecConnection,
  type ExecOptions,
  type ExecState,
  inspectExec,
  resizeExec,
  startExec,
} from "./exec.ts";
import { type HealthOptions, type HealthResult, waitHealthy } from "./health.ts";
import type { RegistryAuth } from "./client.ts";
import type { DockerImage } from "./docker_types.ts";
import {
  containerImages,
  imageExists,
  inspectImage,
  type ListedImage,
  listImages,
  type LoadedImages,
  loadImage,
  pullImage,
  type PullProgress,
  removeImage,
  resolveDigest,
  saveImage,
  tagImage,
} from "./images.ts";
import { LABELS } from "./labels.ts";
import { ensureNetwork, type NetworkInfo, type NetworkSpec } from "./network.ts";
import type { ContainerEvent, ObservedContainer } from "./observe.ts";
import { removeVolume } from "./volumes.ts";
import { type ContainerSpec, DEFAULT_LOG_POLICY, type LogPolicy } from "./spec.ts";

/** How to reach Docker and whom Ployz acts for. */
export interface EngineOptions {
  /** Path of Docker's Unix socket. */
  socketPath: string;
  /** This Machine's id; written to `ployz.machine` and required on everything Ployz mutates. */
  machineId: string;
  /** Overrides of the deadline policy. */
  deadlines?: Partial<Deadlines>;
  /** The Machine's bridge network; default `ployz`. */
  network?: string;
  /** The `local` log driver's rotation; default 5 × 20 MB, uncompressed. */
  log?: LogPolicy;
  /** Labels added to every object created, besides the ownership labels (a test run's `ployz.test`). */
  extraLabels?: Record<string, string>;
}

/** What Docker says about itself. */
export interface EngineInfo {
  /** Docker's release, e.g. `20.10.24`. */
  serverVersion: string;
  /** The newest Engine API version Docker serves. */
  apiVersion: string;
  /** Docker's data root; the `local` log driver writes under it (see `localLogPath`). */
  dataRoot: string;
  /** `1` or `2`. */
  cgroupVersion: string;
}

/** A complete pass over this Machine's owned containers, each one inspected. */
export interface Rescan {
  /** Every owned container, inspected. */
  containers: ObservedContainer[];
  /** When the listing began; a container created after it may be missing. */
  startedAtMs: number;
  /** When the last inspect answered. */
  finishedAtMs: number;
}

/** The daemon's interface to its local Docker. Every method may throw `DockerError`. */
export interface Engine {
  /** The Machine whose objects this Engine may change. */
  readonly machineId: string;
  /** Checks that Docker answers. */
  ping(signal?: AbortSignal): Promise<void>;
  /** Reads Docker's version and data root. */
  info(signal?: AbortSignal): Promise<EngineInfo>;
  /**
   * Docker's release, e.g. `20.10.24`, from a ping's `Server` header (`undefined` if an engine sent none): checks
   * that Docker answers, at the cost of a ping.
   */
  serverVersion(signal?: AbortSignal): Promise<string | undefined>;
  /** Refuses a spec whose network does not exist or is not this Machine's, as a create would. */
  checkNetwork(spec: ContainerSpec, signal?: AbortSignal): Promise<void>;
  /** Creates the container, or returns the one its creation key already names. */
  createContainer(
    spec: ContainerSpec,
    signal?: AbortSignal,
    options?: CreateOptions,
  ): Promise<CreatedContainer>;
  /**
   * Starts an owned container; one already running is left as it is. `created`: `ref` is the id of a container
   * this Machine just created, started without inspecting it first.
   */
  startContainer(ref: string, signal?: AbortSignal, created?: { name: string }): Promise<void>;
  /** Stops an owned container: stop signal, then a kill after the grace (default: its own stop timeout, else 10 s). */
  stopContainer(ref: string, options?: { graceSeconds?: number; signal?: AbortSignal }): Promise<void>;
  /** Removes an owned container; a running one only with `force`. Volumes stay. */
  removeContainer(ref: string, options?: { force?: boolean; signal?: AbortSignal }): Promise<void>;
  /** Removes an owned named volume no container uses; false when it was already gone. */
  /** With `project`, a volume labelled for another Project is refused (`conflict`). */
  removeVolume(name: string, signal?: AbortSignal, project?: string): Promise<boolean>;
  /** Renames an owned container. */
  renameContainer(ref: string, name: string, signal?: AbortSignal): Promise<void>;
  /** Attaches an owned container to an owned network, with aliases. */
  connectNetwork(
    ref: string,
    attachment: { network: string; aliases?: string[]; ipv4Address?: string },
    signal?: AbortSignal,
  ): Promise<void>;
  /** Observes one container by id or name, owned or not; `undefined` when absent. */
  inspectContainer(ref: string, signal?: AbortSignal): Promise<ObservedContainer | undefined>;
  /** The full spec of an owned container, environment values included; for use on this Machine only. */
  readSpec(ref: string, signal?: AbortSignal): Promise<ContainerSpec>;
  /** Inspects every owned container matching the filter (Docker filters by label). */
  listOwned(filter?: OwnedFilter, signal?: AbortSignal): Promise<ObservedContainer[]>;
  /** Inspects every owned container; throws unless all were inspected. */
  rescan(signal?: AbortSignal): Promise<Rescan>;
  /** Docker events of owned containers until `signal` aborts. */
  events(signal: AbortSignal, options?: EventOptions): AsyncIterable<ContainerEvent>;
  /** The health gate; see `HealthResult`. */
  waitHealthy(ref: string, options?: HealthOptions): Promise<HealthResult>;
  /** Creates the Machine's bridge network or verifies the existing one. */
  ensureNetwork(spec: NetworkSpec, signal?: AbortSignal): Promise<NetworkInfo>;
  /** Creates an exec in an owned container (stdin, stdout and stderr attached); answers its id. */
  createExec(ref: string, options: ExecOptions, signal?: AbortSignal): Promise<string>;
  /** Starts an exec attached; the connection then carries its stdin and output, with no deadline. */
  startExec(id: string, tty: boolean, signal?: AbortSignal): Promise<ExecConnection>;
  /** Whether an exec still runs, and its exit code. */
  inspectExec(id: string, signal?: AbortSignal): Promise<ExecState>;
  /** Sets an exec's TTY size. */
  resizeExec(id: string, size: { cols: number; rows: number }, signal?: AbortSignal): Promise<void>;
  /** Whether the image is on this Machine. */
  imageExists(ref: string, signal?: AbortSignal): Promise<boolean>;
  /** The id of a local image, or `undefined` when the image is not on this Machine. */
  imageId(ref: string, signal?: AbortSignal): Promise<string | undefined>;
  /** Streams a `docker save` archive of the image. */
  saveImage(ref: string, signal?: AbortSignal): Promise<ReadableStream<Uint8Array>>;
  /** Loads a `docker save` archive; no deadline, `signal` cancels. */
  loadImage(archive: ReadableStream<Uint8Array>, signal?: AbortSignal): Promise<LoadedImages>;
  /** Inspects a local image; `undefined` when absent. */
  inspectImage(ref: string, signal?: AbortSignal): Promise<DockerImage | undefined>;
  /** The digest the registry serves for `ref`; pulls nothing. */
  resolveDigest(ref: string, options?: { auth?: RegistryAuth; signal?: AbortSignal }): Promise<string>;
  /** Pulls from the registry with progress; refusals are `unauthenticated`, `not_found` or `unavailable`. */
  pullImage(
    ref: string,
    options?: { auth?: RegistryAuth; signal?: AbortSignal; onProgress?: (progress: PullProgress) => void },
  ): Promise<PullProgress>;
  /** Every image on this Machine. */
  listImages(signal?: AbortSignal): Promise<ListedImage[]>;
  /** Tags an image (reference or id) as `repo:tag`. */
  tagImage(source: string, target: { repo: string; tag: string }, signal?: AbortSignal): Promise<void>;
  /** Removes an image by id, never forced: Docker refuses one a container uses. */
  removeImage(id: string, signal?: AbortSignal): Promise<void>;
  /** The image of every container here, with the Ployz Project, Service and Machine labels it carries. */
  containerImages(
    signal?: AbortSignal,
  ): Promise<{ imageId: string; project?: string; service?: string; machine?: string }[]>;
  /** Builds a context tar with Docker's engine build API; throws `BuildError` with the output's tail. */
  buildImage(context: ReadableStream<Uint8Array>, options: BuildOptions): Promise<BuiltImage>;
}

/** Where the `local` log driver keeps a container's current log file. */
export function localLogPath(dataRoot: string, containerId: string): string {
  return join(dataRoot, "containers", containerId, "local-logs", "container.log");
}

/** Opens an `Engine` on a Docker socket. Nothing is sent until the first call. */
export function openEngine(options: EngineOptions): Engine {
  if (typeof options.machineId !== "string" || options.machineId.trim() === "") {
    throw new DockerError("invalid_argument", "Cannot open the Docker engine: the Machine id is empty");
  }
  for (const key of Object.keys(options.extraLabels ?? {})) {
    if (Object.values(LABELS).includes(key as never)) {
      throw new DockerError(
        "invalid_argument",
        `Cannot open the Docker engine: label "${key}" is reserved for Ployz`,
      );
    }
  }
  const client: Client = openClient({
    socketPath: options.socketPath,
    machineId: options.machineId,
    deadlines: resolveDeadlines(options.deadlines),
    network: options.network ?? "ployz",
    extraLabels: Object.freeze({ ...options.extraLabels }),
    log: options.log ?? DEFAULT_LOG_POLICY,
  });
  return {
    machineId: client.machineId,
    async ping(signal?: AbortSignal): Promise<void> {
      await request(client, { operation: "ping Docker", cls: "inspect", signal }, {
        method: "GET",
        path: "/_ping",
      });
    },
    async serverVersion(signal?: AbortSignal): Promise<string | undefined> {
      // Each answer of Docker's names its release (`Server: Docker/<version> (<os>)`): a ping (2 ms) says
      // it where /info and /version take some 20 ms (they ask containerd and run runc for their versions).
      const answer = await request(client, { operation: "ping Docker", cls: "inspect", signal }, {
        method: "GET",
        path: "/_ping",
        stream: true,
      }) as IncomingMessage;
      answer.resume();
      return /^Docker\/(\S+)/.exec(String(answer.headers["server"] ?? ""))?.[1];
    },
    async info(signal?: AbortSignal): Promise<EngineInfo> {
      // Asked together: each takes some 20 ms.
      const [info, version] = await Promise.all([
        request(client, { operation: "read Docker's info", cls: "inspect", signal }, {
          method: "GET",
          path: "/info",
        }) as Promise<{ ServerVersion?: string; DockerRootDir?: string; CgroupVersion?: string }>,
        request(client, { operation: "read Docker's version", cls: "inspect", signal }, {
          method: "GET",
          path: "/version",
        }) as Promise<{ ApiVersion?: string }>,
      ]);
      return {
        serverVersion: info.ServerVersion ?? "",
        apiVersion: version.ApiVersion ?? "",
        dataRoot: info.DockerRootDir ?? "",
        cgroupVersion: info.CgroupVersion ?? "",
      };
    },
    checkNetwork: (spec, signal) => checkNetwork(client, spec, signal),
    createContainer: (spec, signal, opts) => createContainer(client, spec, signal, opts),
    startContainer: (ref, signal, created) => startContainer(client, ref, signal, created),
    stopContainer: (ref, opts) => stopContainer(client, ref, opts),
    removeContainer: (ref, opts) => removeContainer(client, ref, opts),
    removeVolume: (name, signal, project) => removeVolume(client, name, signal, project),
    renameContainer: (ref, name, signal) => renameContainer(client, ref, name, signal),
    connectNetwork: (ref, attachment, signal) => connectNetwork(client, ref, attachment, signal),
    inspectContainer: (ref, signal) => inspectContainer(client, ref, signal),
    readSpec: (ref, signal) => readSpec(client, ref, signal),
    listOwned: (filter, signal) => listOwned(client, filter, signal),
    async rescan(signal?: AbortSignal): Promise<Rescan> {
      const startedAtMs = Date.now();
      const containers = await listOwned(client, {}, signal);
      return { containers, startedAtMs, finishedAtMs: Date.now() };
    },
    events: (signal, opts) => containerEvents(client, signal, opts),
    waitHealthy: (ref, opts) => waitHealthy(client, ref, opts),
    ensureNetwork: (spec, signal) => ensureNetwork(client, spec, signal),
    createExec: (ref, opts, signal) => createExec(client, ref, opts, signal),
    startExec: (id, tty, signal) => startExec(client, id, tty, signal),
    inspectExec: (id, signal) => inspectExec(client, id, signal),
    resizeExec: (id, size, signal) => resizeExec(client, id, size, signal),
    imageExists: (ref, signal) => imageExists(client, ref, signal),
    async imageId(ref: string, signal?: AbortSignal): Promise<string | undefined> {
      return (await inspectImage(client, ref, signal))?.Id;
    },
    saveImage: (ref, signal) => saveImage(client, ref, signal),
    loadImage: (archive, signal) => loadImage(client, archive, signal),
    inspectImage: (ref, signal) => inspectImage(client, ref, signal),
    resolveDigest: (ref, opts) => resolveDigest(client, ref, opts),
    pullImage: (ref, opts) => pullImage(client, ref, opts),
    listImages: (signal) => listImages(client, signal),
    tagImage: (source, target, signal) => tagImage(client, source, target, signal),
    removeImage: (id, signal) => removeImage(client, id, signal),
    containerImages: (signal) => containerImages(client, signal),
    buildImage: (context, opts) => buildImage(client, context, opts),
  };
}
