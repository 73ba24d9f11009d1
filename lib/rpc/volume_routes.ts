/**
 * Volume routes of Machine RPC, merged into the catalog: show or set the Machine's Pool, with every Volume copy
 * it holds.
 *
 * @module
 */

import * as z from "zod";
import { route, type RouteTable } from "./route.ts";

/** A Pool to bind the Machine to. btrfs lives at `<data>/pool`; `loop_size_bytes` makes a loop file for it there. */
export type PoolSetWire =
  | { kind: "btrfs"; "loop_size_bytes"?: number }
  | { kind: "zfs"; dataset: string; "mount_root": string };

/**
 * What `ployz.machine.pool.v1` asks: nothing to show the Pool, `set` to bind the Machine to one first,
 * `default_size_bytes` to set the size of a Provisioned Volume whose `x-volumes` names none.
 */
export interface MachinePoolRequest {
  /** The Pool to bind to; absent: only show. */
  set?: PoolSetWire;
  /** The Machine's default Volume size to keep; absent: unchanged. A daemon that predates it answers without it. */
  "default_size_bytes"?: number;
}

const SIZE = z.number().int().min(2 ** 20).max(2 ** 50);

/** Reader of {@link MachinePoolRequest}; fields it does not know are ignored. */
export const MachinePoolRequestSchema: z.ZodType<MachinePoolRequest> = z.lazy(() =>
  z.object({
    set: z.discriminatedUnion("kind", [
      z.object({ kind: z.literal("btrfs"), "loop_size_bytes": SIZE.optional() }),
      z.object({
        kind: z.literal("zfs"),
        dataset: z.string().min(1).max(200),
        "mount_root": z.string().min(1).max(512),
      }),
    ]).optional(),
    "default_size_bytes": SIZE.optional(),
  })
);

/** A Machine's copy of one Volume, as its Machine reports it now. */
export interface VolumeCopyWire {
  /** The Volume's name. */
  name: string;
  /** `none`, `mirror` or `writer`. */
  role: string;
  /** A Mirror's Snapshot. */
  snapshot?: string;
  /** A Writer's epoch. */
  epoch?: number;
  /** Snapshots held, oldest first. */
  snapshots: string[];
  /** The size limit in bytes. */
  "size_bytes"?: number;
  /** Bytes used. */
  "used_bytes"?: number;
  /** A Writer's bytes written since its newest Snapshot: about what an incremental send from it carries. */
  "changed_bytes"?: number;
  /** The Project whose Service made it. */
  project?: string;
  /** Fields a newer Machine adds. */
  [key: string]: unknown;
}

/** Tolerant reader of {@link VolumeCopyWire}. */
export const VolumeCopyWireSchema: z.ZodType<VolumeCopyWire> = z.lazy(() =>
  z.looseObject({
    name: z.string(),
    role: z.string(),
    snapshot: z.string().optional(),
    epoch: z.number().optional(),
    snapshots: z.array(z.string()),
    "size_bytes": z.number().optional(),
    "used_bytes": z.number().optional(),
    "changed_bytes": z.number().optional(),
    project: z.string().optional(),
  })
);

/** A Machine's Pool as it reports it. */
export interface PoolWire {
  /** `btrfs` or `zfs`. */
  kind: string;
  /** Its mount point or dataset. */
  where: string;
  /** Bytes in all. */
  "total_bytes"?: number;
  /** Bytes free. */
  "free_bytes"?: number;
  /** Why the bound Pool cannot be used now, when it cannot. */
  problem?: string;
  /** The size of a Provisioned Volume whose `x-volumes` names none, when the Machine has one. */
  "default_size_bytes"?: number;
}

/** What `ployz.machine.pool.v1` answers. */
export interface MachinePoolResponse {
  /** The Machine's id. */
  "machine_id": string;
  /** Its name. */
  "machine_name": string;
  /** Its Pool, or null without one (Docker `local` volumes only; Provisioned Volumes refused). */
  pool: PoolWire | null;
  /** Every Volume copy in the Pool. */
  volumes: VolumeCopyWire[];
}

/** Tolerant reader of {@link MachinePoolResponse}. */
export const MachinePoolResponseSchema: z.ZodType<MachinePoolResponse> = z.lazy(() =>
  z.looseObject({
    "machine_id": z.string(),
    "machine_name": z.string(),
    pool: z.looseObject({
      kind: z.string(),
      where: z.string(),
      "total_bytes": z.number().optional(),
      "free_bytes": z.number().optional(),
      problem: z.string().optional(),
      "default_size_bytes": z.number().optional(),
    }).nullable(),
    volumes: z.array(VolumeCopyWireSchema),
  })
);

/** A Machine's copy of a Volume on the wire: `none`, `mirror` at a Snapshot, or `writer` with its epoch. */
export interface CopyWire {
  /** `none`, `mirror` or `writer`. */
  role: "none" | "mirror" | "writer";
  /** A Mirror's Snapshot. */
  snapshot?: string;
  /** A Writer's epoch (reported, never checked). */
  epoch?: number;
}

const SNAPSHOT = z.string().regex(/^[a-z0-9][a-z0-9_.-]{0,127}$/);
const VOLUME = z.string().regex(/^[a-z0-9][a-z0-9_.-]{0,127}$/);

/** Reader of {@link CopyWire}: a Mirror names its Snapshot. */
export const CopyWireSchema: z.ZodType<CopyWire> = z.lazy(() =>
  z.object({
    role: z.enum(["none", "mirror", "writer"]),
    snapshot: SNAPSHOT.optional(),
    epoch: z.number().int().nonnegative().optional(),
  }).refine((c) => c.role !== "mirror" || c.snapshot !== undefined, {
    message: "a Mirror copy names its snapshot",
    path: ["snapshot"],
  })
);

/** Whether `value` is a copy as the wire carries it (a Mirror names its Snapshot). */
export function isCopyWire(value: unknown): value is CopyWire {
  return CopyWireSchema.safeParse(value).success;
}

/** What `ployz.volume.set_copy.v1` asks: SetVolumeCopy, one step of a Volume Run. */
export interface SetVolumeCopyRequest {
  /** The Volume. */
  volume: string;
  /** The copy the operator last saw on this Machine. */
  expected: CopyWire;
  /** The copy it wants there. */
  wanted: CopyWire;
  /** The open run's gen; refused below this Machine's floor for the Volume. */
  gen: number;
  /** Where a receive pulls from: the Machine holding the Snapshot (a Writer makes it on demand). */
  "source_machine_id"?: string;
  /** The Volume's size, for a receive or a promote here. */
  "size_bytes"?: number;
  /**
   * Writer{start}: with a promote, the Container to find by its creation key (or create) and start on the new
   * Writer; the spec was read live from the source's stopped Container.
   */
  start?: { spec: Record<string, unknown> };
}

/** Reader of {@link SetVolumeCopyRequest}; fields it does not know are ignored. */
export const SetVolumeCopyRequestSchema: z.ZodType<SetVolumeCopyRequest> = z.lazy(() =>
  z.object({
    volume: VOLUME,
    expected: CopyWireSchema,
    wanted: CopyWireSchema,
    gen: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
    "source_machine_id": z.string().min(1).max(128).optional(),
    "size_bytes": SIZE.optional(),
    start: z.object({
      spec: z.looseObject({ name: z.string(), creationKey: z.string(), image: z.string() }),
    }).optional(),
  })
);

/** What `ployz.volume.containers.v1` asks: the Containers on this Machine that mount a Volume. */
export interface VolumeContainersRequest {
  /** The Volume. */
  volume: string;
}

/** Reader of {@link VolumeContainersRequest}. */
export const VolumeContainersRequestSchema: z.ZodType<VolumeContainersRequest> = z.lazy(() =>
  z.object({ volume: VOLUME })
);

/** One Container mounting a Volume, with its full spec (environment values included: it goes to the operator only). */
export interface VolumeContainerWire {
  /** Docker's id. */
  id: string;
  /** Its name. */
  name: string;
  /** `running`, `exited`… */
  state: string;
  /** The spec it was created from. */
  spec: Record<string, unknown>;
}

/** What `ployz.volume.containers.v1` answers. */
export interface VolumeContainersResponse {
  /** The Containers. */
  containers: VolumeContainerWire[];
}

/** Tolerant reader of {@link VolumeContainersResponse}. */
export const VolumeContainersResponseSchema: z.ZodType<VolumeContainersResponse> = z.lazy(() =>
  z.looseObject({
    containers: z.array(z.looseObject({
      id: z.string(),
      name: z.string(),
      state: z.string(),
      spec: z.looseObject({}),
    })),
  })
);

/** What `ployz.volume.set_copy.v1` answers (a refusal is a `conflict` error whose details hold `copy`). */
export interface SetVolumeCopyResponse {
  /** The Machine. */
  "machine_id": string;
  /** The Volume. */
  volume: string;
  /** `at_want` (nothing to do), `done` (the step ran), or `busy` (it runs: ask again with the same request). */
  outcome: "at_want" | "done" | "busy";
  /** The copy as it is now. */
  copy: CopyWire;
  /** The Volume's floor now. */
  floor: number;
}

/** Tolerant reader of {@link SetVolumeCopyResponse}. */
export const SetVolumeCopyResponseSchema: z.ZodType<SetVolumeCopyResponse> = z.lazy(() =>
  z.looseObject({
    "machine_id": z.string(),
    volume: z.string(),
    outcome: z.enum(["at_want", "done", "busy"]),
    copy: z.looseObject({
      role: z.enum(["none", "mirror", "writer"]),
      snapshot: z.string().optional(),
      epoch: z.number().optional(),
    }),
    floor: z.number(),
  })
);

/** What `ployz.volume.send.v1` asks: a send stream of a Snapshot, from `base` when given. */
export interface SendVolumeRequest {
  /** The Volume. */
  volume: string;
  /** The Snapshot; a Writer takes it first when it does not hold it yet. */
  snapshot: string;
  /** The Snapshot the receiver holds, for an incremental stream. */
  base?: string;
}

/** Reader of {@link SendVolumeRequest}. */
export const SendVolumeRequestSchema: z.ZodType<SendVolumeRequest> = z.lazy(() =>
  z.object({
    volume: VOLUME,
    snapshot: SNAPSHOT,
    base: SNAPSHOT.optional(),
  })
);

/** Request and response types of the volume routes, by method name. */
export interface VolumeRouteTypes {
  /** `ployz.volume.containers.v1`: the Containers mounting a Volume on the Machine, with their full specs. */
  volumeContainers: [VolumeContainersRequest, VolumeContainersResponse];
  /**
   * `ployz.machine.pool.v1`: the Machine's Pool and the Volume copies in it; with `set`, binds the Machine to
   * a Pool first.
   */
  machinePool: [MachinePoolRequest, MachinePoolResponse];
  /**
   * `ployz.volume.set_copy.v1`: SetVolumeCopy: one Volume Run step, checked by the Machine against its own
   * copy and floor.
   */
  setVolumeCopy: [SetVolumeCopyRequest, SetVolumeCopyResponse];
  /** `ployz.volume.send.v1`: a Snapshot's send stream, for a peer's receive over the mesh. */
  sendVolume: [SendVolumeRequest, ReadableStream<Uint8Array>];
}

/** The volume routes. */
export const VOLUME_ROUTES: RouteTable<VolumeRouteTypes> = Object.freeze({
  volumeContainers: route(
    "ployz.volume.containers.v1",
    VolumeContainersRequestSchema,
    VolumeContainersResponseSchema,
  ),
  machinePool: route("ployz.machine.pool.v1", MachinePoolRequestSchema, MachinePoolResponseSchema),
  setVolumeCopy: route("ployz.volume.set_copy.v1", SetVolumeCopyRequestSchema, SetVolumeCopyResponseSchema),
  sendVolume: route("ployz.volume.send.v1", SendVolumeRequestSchema, "stream"),
});
