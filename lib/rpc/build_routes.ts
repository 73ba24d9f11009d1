/**
 * Build routes of Machine RPC, to be merged into the catalog: a Machine that accepts Builds builds a Compose
 * `build:` with its own Docker. The operator's side sends the context tar in pieces with
 * `ployz.image.build_upload.v1` (each piece an ordinary JSON call, so uploads cross the SSH bridge and the Entry
 * Machine's forwarding like every other call, and a re-sent piece lands at its offset), then starts the build with
 * `ployz.image.build.v1`, whose answer is an NDJSON stream of {@link BuildFrame}s: waiting, build output, then one
 * `done` or `failed` with the output's tail; `alive` frames every `heartbeat_ms` when the caller asks for them.
 *
 * @module
 */

import * as z from "zod";
import { route, type RouteTable } from "./route.ts";

/** Largest piece of context one `build_upload` call carries, in bytes (before base64). */
export const MAX_UPLOAD_PIECE = 2 * 1024 * 1024;
/** Largest context tar a Machine accepts, in bytes. */
export const MAX_BUILD_CONTEXT = 512 * 1024 * 1024;

const uploadId = z.string().regex(/^[a-z0-9][a-z0-9-]{7,63}$/, "expected an upload id");
const label = z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, "expected a DNS label");
const imageRef = z.string().min(1).max(512).regex(
  /^[A-Za-z0-9][A-Za-z0-9._/:@-]*$/,
  "expected an image reference",
);
const small = z.string().max(64 * 1024);

/** What `ployz.image.build_upload.v1` asks: one piece of a context tar at its offset. */
export interface BuildUploadRequest {
  /** The upload, named by the sender. */
  upload: string;
  /** Where the piece starts; a piece at an offset already received overwrites from there. */
  offset: number;
  /** The bytes, base64. */
  data: string;
}

/** Strict reader of {@link BuildUploadRequest}. */
export const BuildUploadRequestSchema: z.ZodType<BuildUploadRequest> = z.lazy(() =>
  z.object({
    upload: uploadId,
    offset: z.number().int().min(0).max(MAX_BUILD_CONTEXT),
    data: z.string().max(Math.ceil(MAX_UPLOAD_PIECE / 3) * 4),
  })
);

/** What `ployz.image.build_upload.v1` answers. */
export interface BuildUploadResponse {
  /** Bytes of the upload the Machine now holds. */
  received: number;
}

/** Tolerant reader of {@link BuildUploadResponse}. */
export const BuildUploadResponseSchema: z.ZodType<BuildUploadResponse> = z.lazy(() =>
  z.looseObject({
    received: z.number(),
  })
);

/** What `ployz.image.build.v1` asks. */
export interface BuildRequest {
  /** The upload holding the context tar. */
  upload: string;
  /** Its size in bytes, checked. */
  bytes: number;
  /** Its `sha256` hex, checked. */
  sha256: string;
  /** The Project the image is for. */
  project: string;
  /** The Service the image is for. */
  service: string;
  /** The build's content digest (`sha256` hex), kept as an image label. */
  digest: string;
  /** References to tag the image with; the first is what the Service runs. */
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
  "cache_from": string[];
  /** Build without the layer cache. */
  "no_cache": boolean;
  /**
   * Send an `alive` frame this often, so the caller can tell a silent build from a Machine it cannot reach; absent
   * (older callers), none is sent.
   */
  "heartbeat_ms"?: number;
}

/** Strict reader of {@link BuildRequest}. */
export const BuildRequestSchema: z.ZodType<BuildRequest> = z.lazy(() =>
  z.object({
    upload: uploadId,
    bytes: z.number().int().min(0).max(MAX_BUILD_CONTEXT),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
    project: label,
    service: label,
    digest: z.string().regex(/^[0-9a-f]{64}$/),
    tags: z.array(imageRef).min(1).max(4),
    dockerfile: z.string().min(1).max(4096),
    args: z.record(z.string().max(256), small).refine((r) => Object.keys(r).length <= 256),
    target: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/).nullable(),
    labels: z.record(z.string().max(256), small).refine((r) => Object.keys(r).length <= 256),
    "cache_from": z.array(imageRef).max(16),
    "no_cache": z.boolean(),
    "heartbeat_ms": z.number().int().min(500).max(60_000).optional(),
  })
);

/** One frame of the build stream. */
export type BuildFrame =
  | { type: "waiting"; text: string }
  | { type: "log"; text: string }
  | { type: "alive" }
  | { type: "done"; "image_id": string; "duration_ms": number; built: boolean }
  | { type: "failed"; code: string; message: string; tail: string[] };

/** Reads one NDJSON line of the build stream; refuses anything else. */
export function parseBuildFrame(line: string): BuildFrame {
  const value = JSON.parse(line) as Record<string, unknown>;
  const text = typeof value.text === "string" ? value.text : "";
  if (value.type === "log" || value.type === "waiting") return { type: value.type, text };
  if (value.type === "alive") return { type: "alive" };
  if (value.type === "done" && typeof value.image_id === "string") {
    return {
      type: "done",
      "image_id": value.image_id,
      "duration_ms": typeof value.duration_ms === "number" ? value.duration_ms : 0,
      built: value.built !== false,
    };
  }
  if (value.type === "failed") {
    return {
      type: "failed",
      code: typeof value.code === "string" ? value.code : "internal",
      message: typeof value.message === "string" ? value.message : "the build failed",
      tail: Array.isArray(value.tail) ? value.tail.filter((t): t is string => typeof t === "string") : [],
    };
  }
  throw new Error(`unexpected build frame "${line.slice(0, 80)}"`);
}

/** Request and response types of the build routes, by method name. */
export interface BuildRouteTypes {
  /** `ployz.image.build_upload.v1`: sends one piece of a build context to the Machine. */
  buildUpload: [BuildUploadRequest, BuildUploadResponse];
  /**
   * `ployz.image.build.v1`: builds an uploaded context; the answer is NDJSON build frames, the last `done` or
   * `failed`.
   */
  buildImage: [BuildRequest, ReadableStream<Uint8Array>];
}

/** The build rows of the catalog. */
export const BUILD_ROUTES: RouteTable<BuildRouteTypes> = Object.freeze({
  buildUpload: route("ployz.image.build_upload.v1", BuildUploadRequestSchema, BuildUploadResponseSchema),
  buildImage: route("ployz.image.build.v1", BuildRequestSchema, "stream"),
});
