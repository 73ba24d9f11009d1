/**
 * Sync protocol over HTTP, shared by the server app and the agent. Every request and response carries the
 * Cluster id in a header; a different Cluster is refused.
 *
 * @module
 */

import * as z from "zod";
import { type Change, SITE_ID_PATTERN } from "./change.ts";
import type { Rejection } from "./store.ts";
import { type VersionVector, VersionVectorSchema } from "./vector.ts";

/** Header naming the sender's Cluster. */
export const CLUSTER_HEADER = "x-ployz-cluster-id";

/** Route prefix of the sync protocol. */
export const SYNC_PREFIX = "/store/v1";

/** Largest request body a peer accepts, in bytes. */
export const MAX_REQUEST_BYTES = 32 * 1024 * 1024;

/** Largest reply a peer's answer may be, in bytes: a sync page is capped near 8 MiB of changes. */
export const MAX_REPLY_BYTES = 32 * 1024 * 1024;

/** Most changes one push may carry. */
export const MAX_PUSH_CHANGES = 20_000;

/** Most distinct sites one push, or one version vector, may name: four times the /24s a /16 network holds. */
export const MAX_SITES = 1024;

/** `POST /store/v1/push`: changes, each checked alone, from at most {@linkcode MAX_SITES} sites. */
export const PushRequestSchema = z.object({
  site: z.string().regex(SITE_ID_PATTERN),
  changes: z.array(z.unknown()).max(MAX_PUSH_CHANGES),
}).refine(
  (push) => new Set(push.changes.map((c) => (c as { site?: unknown } | null)?.site)).size <= MAX_SITES,
  { message: `changes name more than ${MAX_SITES} sites`, path: ["changes"] },
);

/** Reply to a push. */
export interface PushResponse {
  /** Replying site. */
  site: string;
  /** Changes new to the replier. */
  applied: number;
  /** Changes it already held. */
  duplicates: number;
  /** Changes it refused. */
  rejected: Rejection[];
}

/** `POST /store/v1/sync`: the sender's vector; the reply holds what the sender lacks. */
export const SyncRequestSchema = z.object({
  site: z.string().regex(SITE_ID_PATTERN),
  vector: VersionVectorSchema,
  limit: z.number().int().min(1).max(MAX_PUSH_CHANGES).optional(),
});

/** Reply to a sync request. */
export interface SyncResponse {
  /** Replying site. */
  site: string;
  /** Replier's vector. */
  vector: VersionVector;
  /** Changes the requester lacks. */
  changes: Change[];
  /** True when more remain. */
  more: boolean;
  /**
   * The replier's floors above 0 (see `Store.floors`): a requester holding less of a site than its floor must
   * take a full copy. Absent from older repliers, which never compact.
   */
  floors?: Record<string, number>;
}

/** `POST /store/v1/caught-up`: does the replier hold everything in `vector`? */
export const CaughtUpRequestSchema = z.object({ vector: VersionVectorSchema });

/** Reply to a vector or caught-up request. */
export interface VectorResponse {
  /** Replying site. */
  site: string;
  /** Replier's vector. */
  vector: VersionVector;
}

/** Error body of every refused request. */
export interface ErrorBody {
  /** Error code. */
  code: string;
  /** Sentence-case message. */
  message: string;
  /** Structured context; the refusal of a retired Machine carries its signed retired row here. */
  details?: Record<string, unknown>;
}
