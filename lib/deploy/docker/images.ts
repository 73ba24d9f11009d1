/**
 * Images on this Machine: existence, save and load (Machine-to-Machine transfer streams an archive), and a pull
 * that says plainly when an image is present nowhere.
 *
 * @module
 */

import { Readable } from "node:stream";
import { type Client, readJsonLines, request, requestStream, seg, webStream } from "./client.ts";
import type { DockerImage } from "./docker_types.ts";
import { DockerError, sanitizeMessage } from "./errors.ts";

/** Inspects an image by reference or id; `undefined` when absent. */
export async function inspectImage(
  client: Client,
  ref: string,
  signal?: AbortSignal,
): Promise<DockerImage | undefined> {
  try {
    return await request(client, { operation: `inspect image "${ref}"`, cls: "inspect", signal }, {
      method: "GET",
      path: `/images/${seg(ref)}/json`,
    }) as DockerImage;
  } catch (error) {
    if (error instanceof DockerError && error.code === "not_found") return undefined;
    throw error;
  }
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

function pullQuery(ref: string): Record<string, string> {
  const lastPart = ref.slice(ref.lastIndexOf("/") + 1);
  return lastPart.includes(":") || ref.includes("@") ? { fromImage: ref } : { fromImage: ref, tag: "latest" };
}

/**
 * Pulls an image from its registry. A failure says whether the image is still on this Machine; when it is not, it
 * is present nowhere Ployz can reach: `not_found` when the registry answered without it, `unavailable` otherwise.
 */
export async function pullImage(client: Client, ref: string, signal?: AbortSignal): Promise<void> {
  let failure: unknown;
  try {
    const lines = await requestStream(client, { operation: `pull image "${ref}"`, cls: "pull", signal }, {
      method: "POST",
      path: "/images/create",
      query: pullQuery(ref),
    }, (response) => readJsonLines(response));
    const error = lines.find((line) => typeof line.error === "string");
    if (error === undefined) return;
    failure = new DockerError("unavailable", sanitizeMessage(String(error.error)));
  } catch (error) {
    if (signal?.aborted) throw error;
    failure = error;
  }
  const cause = failure instanceof DockerError ? failure : undefined;
  const reason = cause === undefined
    ? "unknown failure"
    : cause.message.replace(/^Cannot pull image "[^"]*": /, "");
  const refused = cause?.code === "not_found" ||
    /manifest unknown|not found|does not exist|pull access denied/i.test(reason);
  const present = await imageExists(client, ref, signal).catch(() => false);
  if (present) {
    throw new DockerError(
      refused ? "not_found" : "unavailable",
      `Cannot pull image "${ref}": ${
        refused ? "the registry does not have it" : "the registry could not be reached"
      }; the copy on this Machine is unchanged: ${reason}`,
      { details: { image: ref }, cause: failure },
    );
  }
  throw new DockerError(
    refused ? "not_found" : "unavailable",
    refused
      ? `Image "${ref}" is present nowhere: not on this Machine, and the registry does not have it: ${reason}`
      : `Image "${ref}" is present nowhere: not on this Machine, and the registry could not be reached: ${reason}`,
    { details: { image: ref }, cause: failure },
  );
}
