/**
 * Version vectors. For each site a replica records the contiguous watermark `c` (it holds every version
 * 1..c) and, when it holds versions past a gap, the ranges `r` it holds above `c`. A relayed change can
 * arrive before its predecessors, so the watermark never moves past a gap; anti-entropy fills gaps.
 *
 * @module
 */

import { z } from "zod";
import { SITE_ID_PATTERN } from "./change.ts";

/** What a replica holds of one site's versions. */
export interface SiteVersions {
  /** Every version from 1 to `c` is held. */
  c: number;
  /** Inclusive ranges held above `c`, ascending. */
  r?: [number, number][];
}

/** Per-site versions held by one replica. */
export type VersionVector = Record<string, SiteVersions>;

const version = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/** Wire shape of a version vector. */
export const VersionVectorSchema: z.ZodType<VersionVector> = z.record(
  z.string().regex(SITE_ID_PATTERN),
  z.object({ c: version, r: z.array(z.tuple([version, version])).max(10_000).optional() }),
).refine((vector) => Object.keys(vector).length <= 1024, { message: "more than 1024 sites" });

/** True when `held` includes `v`. */
export function holds(held: SiteVersions | undefined, v: number): boolean {
  if (held === undefined) return false;
  if (v <= held.c) return true;
  for (const [from, to] of held.r ?? []) {
    if (v >= from && v <= to) return true;
  }
  return false;
}

/** Highest version `held` includes. */
export function highest(held: SiteVersions | undefined): number {
  if (held === undefined) return 0;
  const ranges = held.r ?? [];
  return ranges.length === 0 ? held.c : Math.max(held.c, ranges[ranges.length - 1][1]);
}
