/**
 * Version vectors. For each site a replica records the contiguous watermark `c` (it holds every version
 * 1..c) and, when it holds versions past a gap, the ranges `r` it holds above `c`. A relayed change can
 * arrive before its predecessors, so the watermark never moves past a gap; anti-entropy fills gaps.
 *
 * @module
 */

import * as z from "zod";
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

/** Most sites one vector may name: four times the /24s a /16 network holds. */
export const MAX_VECTOR_SITES = 1024;

/**
 * Most ranges past a gap one whole vector may hold. Honest vectors hold a few (a relay arriving before its
 * predecessors); every range costs a scan on each `holds`, so a peer cannot make each lookup slow.
 */
export const MAX_VECTOR_RANGES = 10_000;

/** Wire shape of a version vector: at most {@linkcode MAX_VECTOR_SITES} sites and {@linkcode MAX_VECTOR_RANGES} ranges. */
export const VersionVectorSchema: z.ZodType<VersionVector> = z.record(
  z.string().regex(SITE_ID_PATTERN),
  z.object({
    c: version,
    r: z.array(z.tuple([version, version])).max(MAX_VECTOR_RANGES).optional(),
  }),
).refine((vector) => Object.keys(vector).length <= MAX_VECTOR_SITES, {
  message: `more than ${MAX_VECTOR_SITES} sites`,
}).refine(
  (vector) => Object.values(vector).reduce((n, held) => n + (held.r?.length ?? 0), 0) <= MAX_VECTOR_RANGES,
  { message: `more than ${MAX_VECTOR_RANGES} ranges in all` },
);

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

/**
 * Why a peer's vector and floors cannot both be true, or undefined: a floor is the highest version the peer
 * compacted, and compaction takes only versions under the site's watermark, so a floor lies at or below the
 * peer's watermark for a site its vector names.
 */
export function impossibleClaim(
  vector: VersionVector,
  floors: Readonly<Record<string, number>>,
): string | undefined {
  for (const [site, floor] of Object.entries(floors)) {
    const held = vector[site];
    if (held === undefined) return `it names a floor ${floor} for Machine "${site}" but holds nothing of it`;
    if (floor > held.c) return `its floor ${floor} for Machine "${site}" lies above its watermark ${held.c}`;
  }
  return undefined;
}
