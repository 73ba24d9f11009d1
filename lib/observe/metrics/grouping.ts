/**
 * Groups raw samples and markers into per-group buckets: by Service, by Deployment, or the Machine.
 *
 * @module
 */

import type { Marker } from "./container_state.ts";
import { addMarker, addRound, type Bucket, emptyBucket } from "./rollup.ts";
import type { Values } from "./metric_names.ts";

/** How samples are grouped. */
export type Scope = "service" | "deployment" | "machine";

/** The labels of a group; `deployment` is `""` for a Service group, all but `machineId` `""` for the Machine. */
export interface GroupLabels {
  /** The Machine the samples came from (`ployz.machine`; `""` when no container named it). */
  machineId: string;
  /** `ployz.project`. */
  project: string;
  /** `ployz.service`. */
  service: string;
  /** `ployz.deployment`. */
  deployment: string;
}

/** A stored raw sample with its subject's labels. */
export interface RawSample extends GroupLabels {
  /** The round's time. */
  timeMs: number;
  /** `container` or `machine`. */
  kind: "container" | "machine";
  /** Docker's id; `""` for the Machine. */
  containerId: string;
  /** The values. */
  values: Values;
}

/** A stored marker with its subject's labels. */
export interface RawMarker extends GroupLabels {
  /** The round that saw it. */
  timeMs: number;
  /** What happened. */
  kind: Marker["kind"];
  /** When Docker says it happened. */
  atMs: number;
  /** Docker's id. */
  containerId: string;
  /** The container's name. */
  containerName: string;
  /** Exit code or health status. */
  detail: string;
}

/** A group's buckets, by start time. */
export interface GroupBuckets {
  /** The group. */
  labels: GroupLabels;
  /** Containers seen in the group. */
  containers: Set<string>;
  /** Buckets by start. */
  buckets: Map<number, Bucket>;
}

/** The key and labels of the group a subject falls in. */
export function groupOf(scope: Scope, s: GroupLabels): [string, GroupLabels] {
  if (scope === "machine") {
    return ["machine", { machineId: s.machineId, project: "", service: "", deployment: "" }];
  }
  const labels = { machineId: s.machineId, project: s.project, service: s.service, deployment: "" };
  if (scope === "deployment") labels.deployment = s.deployment;
  return [`${labels.project}\u0000${labels.service}\u0000${labels.deployment}`, labels];
}

/**
 * Folds raw samples (sorted by time) and markers into buckets of `stepMs` per group of `scope`. Samples of the
 * other kind (Machine samples for a container scope and the reverse) are skipped.
 */
export function bucketize(
  scope: Scope,
  stepMs: number,
  samples: RawSample[],
  markers: RawMarker[],
): Map<string, GroupBuckets> {
  const groups = new Map<string, GroupBuckets>();
  const groupFor = (labels: GroupLabels): GroupBuckets => {
    const [key, group] = groupOf(scope, labels);
    let g = groups.get(key);
    if (g === undefined) groups.set(key, g = { labels: group, containers: new Set(), buckets: new Map() });
    return g;
  };
  const bucketFor = (g: GroupBuckets, timeMs: number): Bucket => {
    const start = Math.floor(timeMs / stepMs) * stepMs;
    let b = g.buckets.get(start);
    if (b === undefined) g.buckets.set(start, b = emptyBucket(start));
    return b;
  };
  const wanted = scope === "machine" ? "machine" : "container";
  // The open round of each group: the values of its subjects at one time.
  const pendingByGroup = new Map<GroupBuckets, { timeMs: number; values: Values[] }>();
  const flush = (g: GroupBuckets, round: { timeMs: number; values: Values[] }): void => {
    addRound(bucketFor(g, round.timeMs), round.values);
  };
  for (const s of samples) {
    if (s.kind !== wanted) continue;
    const g = groupFor(s);
    if (s.containerId !== "") g.containers.add(s.containerId);
    const round = pendingByGroup.get(g);
    if (round !== undefined && round.timeMs === s.timeMs) {
      round.values.push(s.values);
    } else {
      if (round !== undefined) flush(g, round);
      pendingByGroup.set(g, { timeMs: s.timeMs, values: [s.values] });
    }
  }
  for (const [g, round] of pendingByGroup) flush(g, round);
  for (const m of markers) {
    if (scope === "machine") continue;
    addMarker(bucketFor(groupFor(m), m.timeMs), m.kind);
  }
  return groups;
}
