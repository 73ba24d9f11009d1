/**
 * Images on this Machine: existence, save and load (Machine-to-Machine transfer streams an archive), and a pull
 * that says plainly when an image is present nowhere.
 *
 * @module
 */

import { Readable } from "node:stream";
import {
  type Client,
  inspectOrAbsent,
  jsonLines,
  readJsonLines,
  type RegistryAuth,
  request,
  requestStream,
  seg,
  webStream,
} from "./client.ts";
import type { DockerImage } from "./docker_types.ts";
import { DockerError, sanitizeMessage } from "./errors.ts";
import { LABELS } from "./labels.ts";
import { messageOf } from "../../util/mod.ts";

/** Inspects an image by reference or id; `undefined` when absent. */
export function inspectImage(
  client: Client,
  ref: string,
  signal?: AbortSignal,
): Promise<DockerImage | undefined> {
  return inspectOrAbsent<DockerImage>(client, `image "${ref}"`, `/images/${seg(ref)}/json`, signal);
}

/** Whether the image is on this Machine. */
export async function imageExists(client: Client, ref: string, signal?: AbortSignal): Promise<boolean> {
  return await inspectImage(client, ref, signal) !== undefined;
}

/**
 * Streams `docker save` of one image as a tar archive. Docker must start answering within the stream-start
 * deadline; the archive itself has none. Cancelling the stream, or `signal`, ends the request.
 */
export async function saveImage(
  client: Client,
  ref: string,
  signal?: AbortSignal,
): Promise<ReadableStream<Uint8Array>> {
  if (!await imageExists(client, ref, signal)) {
    throw new DockerError("not_found", `Cannot save image "${ref}": it is not on this Machine`, {
      details: { image: ref },
    });
  }
  const response = await request(client, { operation: `save image "${ref}"`, cls: "stream_start", signal }, {
    method: "GET",
    path: `/images/${seg(ref)}/get`,
    stream: true,
  }) as Readable;
  return webStream(response, signal, {
    broke: (error) =>
      new DockerError("unavailable", `Cannot save image "${ref}": the archive stream broke`, {
        cause: error,
      }),
  });
}

/** What `loadImage` loaded. */
export interface LoadedImages {
  /** `Loaded image: <ref>` and `Loaded image ID: <id>` lines, as references or ids. */
  images: string[];
}

/** Loads a `docker save` archive. No deadline (archives are large); `signal` cancels it. */
export async function loadImage(
  client: Client,
  archive: ReadableStream<Uint8Array>,
  signal?: AbortSignal,
): Promise<LoadedImages> {
  // deno-lint-ignore no-explicit-any
  const body = Readable.fromWeb(archive as any);
  try {
    const lines = await requestStream(client, {
      operation: "load an image archive",
      cls: "unbounded",
      signal,
    }, {
      method: "POST",
      path: "/images/load",
      query: { quiet: true },
      file: body,
    }, (response) => readJsonLines(response));
    const images: string[] = [];
    for (const line of lines) {
      if (typeof line.error === "string") {
        throw new DockerError(
          "invalid_argument",
          `Cannot load an image archive: ${sanitizeMessage(line.error)}`,
        );
      }
      const text = typeof line.stream === "string" ? line.stream.trim() : "";
      const match = text.match(/^Loaded image(?: ID)?: (.+)$/);
      if (match !== null) images.push(match[1]);
    }
    if (images.length === 0) {
      throw new DockerError(
        "invalid_argument",
        "Cannot load an image archive: Docker loaded no image from it",
      );
    }
    return { images };
  } finally {
    body.destroy();
  }
}

/** Progress of one pull, from Docker's JSON lines: layers seen and done, bytes downloaded of those known. */
export interface PullProgress {
  /** Layers Docker named. */
  layers: number;
  /** Layers complete or already here. */
  layersDone: number;
  /** Bytes downloaded so far. */
  bytes: number;
  /** Bytes to download, of the layers whose size Docker has said. */
  bytesTotal: number;
}

/** Folds Docker's pull lines into a {@linkcode PullProgress}; the caller keeps `state` between lines. */
export function foldPullLine(
  state: Map<string, { current: number; total: number; done: boolean }>,
  line: Record<string, unknown>,
): PullProgress {
  const id = typeof line.id === "string" ? line.id : "";
  const status = typeof line.status === "string" ? line.status : "";
  // Layer lines carry a 12-hex id; the first and last lines name the reference.
  if (/^[a-f0-9]{12}$/.test(id)) {
    const layer = state.get(id) ?? { current: 0, total: 0, done: false };
    const detail = line.progressDetail as { current?: number; total?: number } | undefined;
    if (status === "Downloading" && typeof detail?.current === "number") {
      layer.current = detail.current;
      if (typeof detail.total === "number") layer.total = detail.total;
    }
    if (/^(Pull complete|Already exists|Download complete)$/.test(status)) {
      if (layer.total > 0) layer.current = layer.total;
      if (status !== "Download complete") layer.done = true;
    }
    state.set(id, layer);
  }
  let bytes = 0, bytesTotal = 0, layersDone = 0;
  for (const layer of state.values()) {
    bytes += layer.current;
    bytesTotal += layer.total;
    if (layer.done) layersDone++;
  }
  return { layers: state.size, layersDone, bytes, bytesTotal };
}

/**
 * What a registry's refusal means, from Docker's message: `unauthenticated` (credentials missing or wrong),
 * `not_found` (no such repository, tag or digest), else `unavailable` (unreachable, TLS, timeouts).
 */
export function registryFailureCode(message: string): "unauthenticated" | "not_found" | "unavailable" {
  // A bare 401 is a status only when it is no part of an address or port (a registry may listen on :25401).
  if (
    /unauthorized|authentication required|no basic auth credentials|incorrect username or password|denied: requested access|(?<![\d:.])401(?![\d.:])/i
      .test(message)
  ) {
    return "unauthenticated";
  }
  if (
    /manifest unknown|name unknown|not found|does not exist|no such image|repository name not known/i.test(
      message,
    )
  ) {
    return "not_found";
  }
  return "unavailable";
}

function registryError(action: string, ref: string, message: string, cause: unknown): DockerError {
  // Drop what toDockerError put first ("Cannot resolve image "x:1": "): the message below says it once.
  const prefix = `Cannot ${action} "${ref}": `;
  const reason = sanitizeMessage(message.startsWith(prefix) ? message.slice(prefix.length) : message);
  const code = registryFailureCode(reason);
  const host = ref.includes("/") && /[.:]|^localhost$/.test(ref.slice(0, ref.indexOf("/")))
    ? ref.slice(0, ref.indexOf("/"))
    : "docker.io";
  const what = code === "unauthenticated"
    ? `registry "${host}" refused the credentials${reason === "" ? "" : ` (${reason})`}`
    : code === "not_found"
    ? `registry "${host}" has no such image: ${reason}`
    : `registry "${host}" could not be reached: ${reason}`;
  return new DockerError(code, `Cannot ${action} "${ref}": ${what}`, {
    details: { image: ref, registry: host },
    cause,
  });
}

/**
 * The digest the registry serves for `ref` (`GET /distribution/{ref}/json`: Docker asks the registry for the
 * manifest's descriptor, with `auth` as X-Registry-Auth). Pulls nothing.
 */
export async function resolveDigest(
  client: Client,
  ref: string,
  options: { auth?: RegistryAuth; signal?: AbortSignal } = {},
): Promise<string> {
  try {
    const answer = await request(client, {
      operation: `resolve image "${ref}"`,
      cls: "inspect",
      signal: options.signal,
    }, { method: "GET", path: `/distribution/${seg(ref)}/json`, auth: options.auth }) as {
      Descriptor?: { digest?: string };
    };
    const digest = answer.Descriptor?.digest;
    if (typeof digest !== "string" || !/^sha256:[a-f0-9]{64}$/.test(digest)) {
      throw new DockerError("internal", `Cannot resolve image "${ref}": Docker answered no sha256 digest`);
    }
    return digest;
  } catch (error) {
    if (options.signal?.aborted) throw error;
    if (error instanceof DockerError && error.code === "internal" && !error.details.status) throw error;
    if (error instanceof DockerError && error.details.errno !== undefined) throw error;
    throw registryError("resolve image", ref, messageOf(error), error);
  }
}

/**
 * Pulls `ref` from its registry (`POST /images/create`, `auth` as X-Registry-Auth), telling `onProgress` as
 * Docker reports layers. Bounded by the `pull` deadline; `signal` cancels. A refusal is `unauthenticated`,
 * `not_found` or `unavailable`, naming the registry and never the credentials.
 */
export async function pullImage(
  client: Client,
  ref: string,
  options: { auth?: RegistryAuth; signal?: AbortSignal; onProgress?: (progress: PullProgress) => void } = {},
): Promise<PullProgress> {
  const state = new Map<string, { current: number; total: number; done: boolean }>();
  let progress: PullProgress = { layers: 0, layersDone: 0, bytes: 0, bytesTotal: 0 };
  let failure: string | undefined;
  try {
    await requestStream(client, { operation: `pull image "${ref}"`, cls: "pull", signal: options.signal }, {
      method: "POST",
      path: "/images/create",
      query: pullQuery(ref),
      auth: options.auth,
    }, async (response) => {
      for await (const line of jsonLines(response)) {
        if (typeof line.error === "string") {
          failure = line.error;
          continue;
        }
        progress = foldPullLine(state, line);
        options.onProgress?.(progress);
      }
    });
  } catch (error) {
    if (options.signal?.aborted) throw error;
    if (error instanceof DockerError && error.details.errno !== undefined) throw error;
    throw registryError("pull image", ref, messageOf(error), error);
  }
  if (failure !== undefined) throw registryError("pull image", ref, failure, undefined);
  return progress;
}

/** Tags image `source` (a reference or id) as `repo:tag`, as `docker pull repo:tag` would leave it. */
export async function tagImage(
  client: Client,
  source: string,
  target: { repo: string; tag: string },
  signal?: AbortSignal,
): Promise<void> {
  await request(client, { operation: `tag image "${source}"`, cls: "inspect", signal }, {
    method: "POST",
    path: `/images/${seg(source)}/tag`,
    query: { repo: target.repo, tag: target.tag },
    alsoOk: [201],
  });
}

/** One image on this Machine, as `GET /images/json` lists it. */
export interface ListedImage {
  /** Image id. */
  id: string;
  /** Tags. */
  tags: string[];
  /** Registry digests (`repo@sha256:…`). */
  digests: string[];
  /** Size in bytes. */
  size: number;
  /** Creation time, seconds since the epoch. */
  created: number;
  /** Its labels. */
  labels: Record<string, string>;
}

/** Every image on this Machine (dangling ones included). */
export async function listImages(client: Client, signal?: AbortSignal): Promise<ListedImage[]> {
  const raw = await request(client, { operation: "list images", cls: "inspect", signal }, {
    method: "GET",
    path: "/images/json",
    query: { all: false },
  }) as {
    Id: string;
    RepoTags?: string[] | null;
    RepoDigests?: string[] | null;
    Size?: number;
    Created?: number;
    Labels?: Record<string, string> | null;
  }[];
  return raw.map((i) => ({
    id: i.Id,
    tags: (i.RepoTags ?? []).filter((t) => t !== "<none>:<none>"),
    digests: (i.RepoDigests ?? []).filter((d) => d !== "<none>@<none>"),
    size: i.Size ?? 0,
    created: i.Created ?? 0,
    labels: i.Labels ?? {},
  }));
}

/**
 * Removes an image by id: each of its tags and digests, then the image. Never forced, so Docker refuses
 * (`conflict`) an image any container uses, ployz's or not.
 */
export async function removeImage(client: Client, id: string, signal?: AbortSignal): Promise<void> {
  const image = await inspectImage(client, id, signal);
  if (image === undefined) return;
  const names = [...(image.RepoTags ?? []), ...(image.RepoDigests ?? [])];
  for (const name of [...names, id]) {
    try {
      await request(client, { operation: `remove image "${name}"`, cls: "remove", signal }, {
        method: "DELETE",
        path: `/images/${seg(name)}`,
        query: { force: false, noprune: false },
      });
    } catch (error) {
      // Untagging the last name removed the image already.
      if (error instanceof DockerError && error.code === "not_found") continue;
      throw error;
    }
  }
}

/** The image each container on this Machine uses, with its Ployz Project and Service when it has them. */
export async function containerImages(
  client: Client,
  signal?: AbortSignal,
): Promise<{ imageId: string; project?: string; service?: string; machine?: string }[]> {
  const raw = await request(client, { operation: "list containers", cls: "inspect", signal }, {
    method: "GET",
    path: "/containers/json",
    query: { all: true },
  }) as { ImageID?: string; Labels?: Record<string, string> | null }[];
  return raw.map((c) => ({
    imageId: c.ImageID ?? "",
    project: c.Labels?.[LABELS.project],
    service: c.Labels?.[LABELS.service],
    machine: c.Labels?.[LABELS.machine],
  }));
}

function pullQuery(ref: string): Record<string, string> {
  const lastPart = ref.slice(ref.lastIndexOf("/") + 1);
  return lastPart.includes(":") || ref.includes("@") ? { fromImage: ref } : { fromImage: ref, tag: "latest" };
}
