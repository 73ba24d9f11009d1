/**
 * Image routes of Machine RPC: inspecting an image on the Machine's Docker, resolving a tag to the registry's
 * digest, pulling from a registry as a bounded task on the Machine, listing images and pruning the ones Ployz
 * pulled and no container uses. (Copying an image between Machines is in `routing_routes.ts`.) Requests ignore
 * fields they do not know; responses are tolerant (docs/rpc.md).
 *
 * Registry credentials travel in the `auth` field of the one request that needs them; the Machine hands them to
 * its Docker as X-Registry-Auth and keeps them nowhere.
 *
 * @module
 */

import * as z from "zod";
import { type EmptyRequest, EmptyRequestSchema, route, type RouteTable } from "./route.ts";

const text = z.string().max(4096);

/** What `ployz.image.inspect.v1` asks. */
export interface InspectImageRequest {
  /** Image reference or id. */
  ref: string;
}

/** Reader of {@link InspectImageRequest}; fields it does not know are ignored. */
export const InspectImageRequestSchema: z.ZodType<InspectImageRequest> = z.lazy(() =>
  z.object({
    ref: z.string().min(1).max(1024),
  })
);

/** What `ployz.image.inspect.v1` answers. */
export interface InspectImageResponse {
  /** Whether the image is on the Machine. */
  present: boolean;
  /** Its id, when present. */
  id?: string;
  /** Its registry digests (`repo@sha256:…`), when present; absent from older daemons. */
  "repo_digests"?: string[];
}

/** Tolerant reader of {@link InspectImageResponse}. */
export const InspectImageResponseSchema: z.ZodType<InspectImageResponse> = z.lazy(() =>
  z.looseObject({
    present: z.boolean(),
    id: text.optional(),
    "repo_digests": z.array(text).max(256).optional(),
  })
);

/** Registry credentials for one request: user and password (or token), or an identity token. */
export interface RegistryAuthField {
  /** User name. */
  username?: string;
  /** Password or access token. */
  password?: string;
  /** OAuth identity token, instead of a password. */
  identitytoken?: string;
  /** The registry host they are for. */
  serveraddress: string;
}

const RegistryAuthSchema: z.ZodType<RegistryAuthField> = z.lazy(() =>
  z.object({
    username: z.string().max(1024).optional(),
    password: z.string().max(16_384).optional(),
    identitytoken: z.string().max(16_384).optional(),
    serveraddress: z.string().min(1).max(512),
  })
);

const ref = z.string().min(1).max(1024);

/** What `ployz.image.resolve.v1` asks: the digest the registry serves for a reference. */
export interface ResolveImageRequest {
  /** Image reference with a tag. */
  ref: string;
  /** Credentials for its registry. */
  auth?: RegistryAuthField;
}

/** Reader of {@link ResolveImageRequest}. */
export const ResolveImageRequestSchema: z.ZodType<ResolveImageRequest> = z.lazy(() =>
  z.object({
    ref,
    auth: RegistryAuthSchema.optional(),
  })
);

/** What `ployz.image.resolve.v1` answers. */
export interface ResolveImageResponse {
  /** The reference asked about. */
  ref: string;
  /** The manifest digest the registry serves for it. */
  digest: string;
}

/** Tolerant reader of {@link ResolveImageResponse}. */
export const ResolveImageResponseSchema: z.ZodType<ResolveImageResponse> = z.lazy(() =>
  z.looseObject({
    ref,
    digest: z.string().regex(/^sha256:[a-f0-9]{64}$/),
  })
);

/** The longest one `ployz.image.pull.v1` call waits on its task before answering with progress. */
export const PULL_WAIT_MAX_MS = 30_000;

/** What `ployz.image.pull.v1` asks: start (or join) the pull of a pinned reference and wait a little. */
export interface PullImageRequest {
  /** Image reference, pinned to a digest (`name:tag@sha256:…`). */
  ref: string;
  /** Credentials for its registry. */
  auth?: RegistryAuthField;
  /** How long to wait for the task before answering with its progress; default 2000 ms. */
  "wait_ms"?: number;
}

/** Reader of {@link PullImageRequest}. */
export const PullImageRequestSchema: z.ZodType<PullImageRequest> = z.lazy(() =>
  z.object({
    ref,
    auth: RegistryAuthSchema.optional(),
    "wait_ms": z.number().int().min(0).max(PULL_WAIT_MAX_MS).optional(),
  })
);

/** What `ployz.image.pull.v1` answers: the task's state and progress. */
export interface PullImageResponse {
  /** The Machine pulling. */
  "machine_id": string;
  /** The reference. */
  ref: string;
  /** `present` (already here, nothing pulled), `running`, `done` or `failed`. */
  state: "present" | "running" | "done" | "failed";
  /** Layers Docker named. */
  layers: number;
  /** Layers complete. */
  "layers_done": number;
  /** Bytes downloaded. */
  bytes: number;
  /** Bytes to download, of the layers whose size is known. */
  "bytes_total": number;
  /** Since the task started, in ms. */
  "duration_ms": number;
  /** Why it failed. */
  error?: { code: string; message: string };
}

/** Tolerant reader of {@link PullImageResponse}. */
export const PullImageResponseSchema: z.ZodType<PullImageResponse> = z.lazy(() =>
  z.looseObject({
    "machine_id": z.string().max(256),
    ref,
    state: z.enum(["present", "running", "done", "failed"]),
    layers: z.number().int().nonnegative(),
    "layers_done": z.number().int().nonnegative(),
    bytes: z.number().nonnegative(),
    "bytes_total": z.number().nonnegative(),
    "duration_ms": z.number().nonnegative(),
    error: z.looseObject({ code: z.string().max(64), message: text }).optional(),
  })
);

/** One image as `ployz.image.list.v1` lists it. */
export interface ListedImageView {
  /** Image id. */
  id: string;
  /** Tags. */
  tags: string[];
  /** Registry digests. */
  digests: string[];
  /** Bytes. */
  size: number;
  /** Pulled or copied here by Ployz. */
  owned: boolean;
  /** `project/service` of each Ployz container using it. */
  "used_by": string[];
  /** Containers Ployz does not own that use it. */
  "other_containers": number;
}

const ListedImageSchema: z.ZodType<ListedImageView> = z.lazy(() =>
  z.looseObject({
    id: text,
    tags: z.array(text).max(1024),
    digests: z.array(text).max(1024),
    size: z.number().nonnegative(),
    owned: z.boolean(),
    "used_by": z.array(text).max(10_000),
    "other_containers": z.number().int().nonnegative(),
  })
);

/** What `ployz.image.list.v1` answers. */
export interface ListImagesResponse {
  /** The Machine. */
  "machine_id": string;
  /** Its images. */
  images: ListedImageView[];
}

/** Tolerant reader of {@link ListImagesResponse}. */
export const ListImagesResponseSchema: z.ZodType<ListImagesResponse> = z.lazy(() =>
  z.looseObject({
    "machine_id": z.string().max(256),
    images: z.array(ListedImageSchema).max(100_000),
  })
);

/** What `ployz.image.prune.v1` asks. */
export interface PruneImagesRequest {
  /** Say what would go and remove nothing. */
  "dry_run"?: boolean;
  /** Also images Ployz did not pull (any image no container uses). */
  all?: boolean;
}

/** Reader of {@link PruneImagesRequest}. */
export const PruneImagesRequestSchema: z.ZodType<PruneImagesRequest> = z.lazy(() =>
  z.object({
    "dry_run": z.boolean().optional(),
    all: z.boolean().optional(),
  })
);

/** What `ployz.image.prune.v1` answers. */
export interface PruneImagesResponse {
  /** The Machine. */
  "machine_id": string;
  /** Images removed (or that would be, on a dry run). */
  removed: { id: string; tags: string[]; size: number }[];
  /** Images kept because a container uses them. */
  "kept_in_use": number;
  /** Images kept because Ployz did not pull them (without `all`). */
  "kept_not_owned": number;
  /** Images that could not be removed, with why. */
  failed: { id: string; message: string }[];
}

/** Tolerant reader of {@link PruneImagesResponse}. */
export const PruneImagesResponseSchema: z.ZodType<PruneImagesResponse> = z.lazy(() =>
  z.looseObject({
    "machine_id": z.string().max(256),
    removed: z.array(
      z.looseObject({ id: text, tags: z.array(text).max(1024), size: z.number().nonnegative() }),
    )
      .max(100_000),
    "kept_in_use": z.number().int().nonnegative(),
    "kept_not_owned": z.number().int().nonnegative(),
    failed: z.array(z.looseObject({ id: text, message: text })).max(100_000),
  })
);

/** Request and response types of the image routes, by method name. */
export interface ImageRouteTypes {
  /** `ployz.image.inspect.v1`: whether an image is on the Machine. */
  inspectImage: [InspectImageRequest, InspectImageResponse];
  /**
   * `ployz.image.resolve.v1`: the digest the registry serves for a tag, asked through the Machine's Docker.
   */
  resolveImage: [ResolveImageRequest, ResolveImageResponse];
  /**
   * `ployz.image.pull.v1`: starts or joins the Machine's pull of a pinned reference; answers with its
   * progress.
   */
  pullImage: [PullImageRequest, PullImageResponse];
  /** `ployz.image.list.v1`: the Machine's images. */
  listImages: [EmptyRequest, ListImagesResponse];
  /** `ployz.image.prune.v1`: removes images Ployz pulled that no container uses. */
  pruneImages: [PruneImagesRequest, PruneImagesResponse];
}

/** The image routes, by method name. */
export const IMAGE_ROUTES: RouteTable<ImageRouteTypes> = Object.freeze({
  inspectImage: route("ployz.image.inspect.v1", InspectImageRequestSchema, InspectImageResponseSchema),
  resolveImage: route("ployz.image.resolve.v1", ResolveImageRequestSchema, ResolveImageResponseSchema),
  pullImage: route("ployz.image.pull.v1", PullImageRequestSchema, PullImageResponseSchema),
  listImages: route("ployz.image.list.v1", EmptyRequestSchema, ListImagesResponseSchema),
  pruneImages: route("ployz.image.prune.v1", PruneImagesRequestSchema, PruneImagesResponseSchema),
});
