/**
 * Building an image with this Machine's Docker through the Engine API's `POST /build` (the classic builder, which
 * works offline): the context is a tar stream, each line of Docker's output is handed on as it arrives, and the
 * result is the built image's id or a `DockerError` carrying the output's tail.
 *
 * @module
 */

import { Readable } from "node:stream";
import { type Client, jsonLines, requestStream } from "./client.ts";
import { DockerError, sanitizeMessage } from "./errors.ts";

/** Lines of build output a failure keeps as evidence. */
export const BUILD_TAIL_LINES = 20;

/** What to build. */
export interface BuildOptions {
  /** References to tag the image with. */
  tags: string[];
  /** Dockerfile path inside the context. */
  dockerfile: string;
  /** Build arguments. */
  args: Record<string, string>;
  /** Stage to build, or null for the last. */
  target: string | null;
  /** Image labels. */
  labels: Record<string, string>;
  /** Local images whose layers may serve as cache. */
  cacheFrom: string[];
  /** Build without the layer cache. */
  noCache: boolean;
  /** Each line of output as Docker writes it. */
  onLine?: (line: string) => void;
  /** Cancels the build. */
  signal?: AbortSignal;
}

/** A build that failed, with the last lines of its output as evidence. */
export class BuildError extends DockerError {
  /** The last lines of output, the error last. */
  readonly tail: string[];

  /** Builds the error. */
  constructor(code: DockerError["code"], message: string, tail: string[], cause?: unknown) {
    super(code, message, { cause });
    this.name = "BuildError";
    this.tail = tail;
  }
}

/** A finished build. */
export interface BuiltImage {
  /** The image id Docker reports. */
  imageId: string;
  /** The last lines of output. */
  tail: string[];
}

/** The output lines of one JSON message of Docker's build stream. */
function linesOf(message: Record<string, unknown>): string[] {
  const text = typeof message.stream === "string"
    ? message.stream
    : typeof message.status === "string"
    ? `${message.status}${typeof message.progress === "string" ? ` ${message.progress}` : ""}\n`
    : "";
  return text.split("\n").map((line) => line.trimEnd()).filter((line) => line !== "");
}

/**
 * Builds `context` (a tar stream). Throws `DockerError` `invalid_argument` when Docker reports a build error (a
 * failing `RUN`, a Dockerfile syntax error), with `details.tail` the output's last lines.
 */
export async function buildImage(
  client: Client,
  context: ReadableStream<Uint8Array>,
  options: BuildOptions,
): Promise<BuiltImage> {
  // deno-lint-ignore no-explicit-any
  const body = Readable.fromWeb(context as any);
  const tail: string[] = [];
  const keep = (line: string): void => {
    tail.push(line);
    if (tail.length > BUILD_TAIL_LINES) tail.shift();
    options.onLine?.(line);
  };
  try {
    return await requestStream(client, {
      operation: `build image "${options.tags[0]}"`,
      cls: "unbounded",
      signal: options.signal,
    }, {
      method: "POST",
      path: "/build",
      query: {
        t: options.tags,
        dockerfile: options.dockerfile,
        buildargs: options.args,
        labels: options.labels,
        ...(options.target === null ? {} : { target: options.target }),
        ...(options.cacheFrom.length === 0 ? {} : { cachefrom: JSON.stringify(options.cacheFrom) }),
        nocache: options.noCache,
        rm: true,
        forcerm: true,
      },
      file: body,
    }, async (response) => {
      let imageId: string | undefined;
      let failure: string | undefined;
      for await (const message of jsonLines(response)) {
        const aux = message.aux as { ID?: unknown } | undefined;
        if (typeof aux?.ID === "string") imageId = aux.ID;
        if (typeof message.error === "string") {
          failure = sanitizeMessage(message.error);
          keep(failure);
          continue;
        }
        for (const line of linesOf(message)) {
          keep(line);
          const built = /^Successfully built ([0-9a-f]{12,64})$/.exec(line);
          if (built !== null && imageId === undefined) imageId = built[1];
        }
      }
      if (failure !== undefined) {
        throw new BuildError("invalid_argument", `Cannot build image "${options.tags[0]}": ${failure}`, [
          ...tail,
        ]);
      }
      if (imageId === undefined) {
        throw new BuildError("internal", `Cannot build image "${options.tags[0]}": Docker named no image`, [
          ...tail,
        ]);
      }
      return { imageId, tail: [...tail] };
    });
  } catch (error) {
    // Docker refuses some inputs (a Dockerfile syntax error, an unknown target) with a status, not a stream line.
    if (error instanceof DockerError && !(error instanceof BuildError)) {
      throw new BuildError(error.code, error.message, [...tail, error.message], error);
    }
    throw error;
  } finally {
    body.destroy();
  }
}
