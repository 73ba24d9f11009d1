/**
 * Serving routes of Machine RPC, to be merged into the catalog: the client sets a Service's Serving Pointer once a
 * Deployment's new containers pass health, and reads the pointer with this Machine's view of its acks.
 *
 * @module
 */

import { z } from "zod";
import type { Route } from "./route.ts";

const name = z.string().min(1).max(256);
const id = z.string().min(1).max(128);

/** What `ployz.serving.set_pointer.v1` asks. */
export interface SetPointerRequest {
  /** Project name. */
  project: string;
  /** Service name. */
  service: string;
  /** The Deployment that serves from now on. */
  deployment: string;
}

/** Reader of {@link SetPointerRequest}; fields it does not know are ignored. */
export const SetPointerRequestSchema: z.ZodType<SetPointerRequest> = z.object({
  project: name,
  service: name,
  deployment: id,
});

/** A Serving Pointer on the wire. */
export interface PointerWire {
  /** Project name. */
  project: string;
  /** Service name. */
  service: string;
  /** Deployment that serves. */
  deployment: string;
  /** Grows with each move. */
  version?: number;
}

const PointerWireSchema: z.ZodType<PointerWire> = z.looseObject({
  project: z.string(),
  service: z.string(),
  deployment: z.string(),
  version: z.number().optional(),
});

/** What `ployz.serving.set_pointer.v1` answers. */
export interface SetPointerResponse {
  /** The pointer as this Machine wrote it. */
  pointer: PointerWire;
  /** The pointer it replaced, if any. */
  previous?: PointerWire;
}

/** Tolerant reader of {@link SetPointerResponse}. */
export const SetPointerResponseSchema: z.ZodType<SetPointerResponse> = z.looseObject({
  pointer: PointerWireSchema,
  previous: PointerWireSchema.optional(),
});

/** What `ployz.serving.pointer_status.v1` asks. */
export interface PointerStatusRequest {
  /** Project name. */
  project: string;
  /** Service name. */
  service: string;
}

/** Reader of {@link PointerStatusRequest}; fields it does not know are ignored. */
export const PointerStatusRequestSchema: z.ZodType<PointerStatusRequest> = z.object({
  project: name,
  service: name,
});

/** What `ployz.serving.pointer_status.v1` answers: this Machine's observation, never the Cluster's truth. */
export interface PointerStatusResponse {
  /** The pointer, when one is set. */
  pointer?: PointerWire;
  /** Acks this Machine holds for the pointer's key. */
  acks: { "machine_id": string; deployment: string; version?: number; "acked_at"?: string }[];
  /** Machines that have not acked the current pointer. */
  missing: string[];
}

/** Tolerant reader of {@link PointerStatusResponse}. */
export const PointerStatusResponseSchema: z.ZodType<PointerStatusResponse> = z.looseObject({
  pointer: PointerWireSchema.optional(),
  acks: z.array(z.looseObject({
    "machine_id": z.string(),
    deployment: z.string(),
    version: z.number().optional(),
    "acked_at": z.string().optional(),
  })),
  missing: z.array(z.string()),
});

/** A removal mark on the wire. */
export interface RemovalWire {
  /** Project name. */
  project: string;
  /** Service name, or `*` for the whole Project. */
  service: string;
  /** The removal's id. */
  id: string;
  /** Deployments whose containers it removes. */
  deployments: string[];
  /** `active` or `cancelled`. */
  state: string;
  /** When it was marked, ISO 8601. */
  "created_at"?: string;
  /** Machines whose acks a live container waits for. */
  "ack_from"?: string[];
}

const RemovalWireSchema: z.ZodType<RemovalWire> = z.looseObject({
  project: z.string(),
  service: z.string(),
  id: z.string(),
  deployments: z.array(z.string()),
  state: z.string(),
  "created_at": z.string().optional(),
  "ack_from": z.array(z.string()).optional(),
});

/** What `ployz.removal.mark.v1` asks: mark a Project (or one Service) removed, or cancel its mark. */
export interface MarkRemovalRequest {
  /** Project name. */
  project: string;
  /** Service name; absent for the whole Project. */
  service?: string;
  /** The removal's id. */
  id: string;
  /** Deployments the caller knows of; the Machine adds those its copy holds. */
  deployments: string[];
  /** `active` marks, `cancelled` cancels. */
  state: "active" | "cancelled";
  /** Machines whose acks a live container waits for (the ones the caller reached). */
  "ack_from"?: string[];
}

/** Reader of {@link MarkRemovalRequest}; fields it does not know are ignored. */
export const MarkRemovalRequestSchema: z.ZodType<MarkRemovalRequest> = z.object({
  project: name,
  service: name.optional(),
  id,
  deployments: z.array(id).max(1024),
  state: z.enum(["active", "cancelled"]),
  "ack_from": z.array(id).max(1024).optional(),
});

/** What `ployz.removal.mark.v1` answers. */
export interface MarkRemovalResponse {
  /** The mark as this Machine wrote it. */
  removal: RemovalWire;
  /** The mark it replaced, if any. */
  previous?: RemovalWire;
}

/** Tolerant reader of {@link MarkRemovalResponse}. */
export const MarkRemovalResponseSchema: z.ZodType<MarkRemovalResponse> = z.looseObject({
  removal: RemovalWireSchema,
  previous: RemovalWireSchema.optional(),
});

/** What `ployz.removal.list.v1` asks. */
export interface ListRemovalsRequest {
  /** Only this Project's marks. */
  project?: string;
}

/** Reader of {@link ListRemovalsRequest}. */
export const ListRemovalsRequestSchema: z.ZodType<ListRemovalsRequest> = z.object({
  project: name.optional(),
});

/** What `ployz.removal.list.v1` answers: this Machine's copy of the marks and their progress. */
export interface ListRemovalsResponse {
  /** Each mark, who acked it, and the covered container rows this copy still holds. */
  removals: {
    removal: RemovalWire;
    acked: string[];
    remaining: { "machine_id": string; id: string; name: string; state: string }[];
  }[];
}

/** Tolerant reader of {@link ListRemovalsResponse}. */
export const ListRemovalsResponseSchema: z.ZodType<ListRemovalsResponse> = z.looseObject({
  removals: z.array(z.looseObject({
    removal: RemovalWireSchema,
    acked: z.array(z.string()),
    remaining: z.array(z.looseObject({
      "machine_id": z.string(),
      id: z.string(),
      name: z.string(),
      state: z.string(),
    })),
  })),
});

/** The serving rows, to be spread into the catalog. */
export const SERVING_ROUTES: {
  readonly setPointer: Route<SetPointerRequest, SetPointerResponse>;
  readonly pointerStatus: Route<PointerStatusRequest, PointerStatusResponse>;
  readonly markRemoval: Route<MarkRemovalRequest, MarkRemovalResponse>;
  readonly listRemovals: Route<ListRemovalsRequest, ListRemovalsResponse>;
} = Object.freeze({
  setPointer: {
    capability: "ployz.serving.set_pointer.v1",
    request: SetPointerRequestSchema,
    response: SetPointerResponseSchema,
  },
  pointerStatus: {
    capability: "ployz.serving.pointer_status.v1",
    request: PointerStatusRequestSchema,
    response: PointerStatusResponseSchema,
  },
  markRemoval: {
    capability: "ployz.removal.mark.v1",
    request: MarkRemovalRequestSchema,
    response: MarkRemovalResponseSchema,
  },
  listRemovals: {
    capability: "ployz.removal.list.v1",
    request: ListRemovalsRequestSchema,
    response: ListRemovalsResponseSchema,
  },
});
