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

/** The serving rows, to be spread into the catalog. */
export const SERVING_ROUTES: {
  readonly setPointer: Route<SetPointerRequest, SetPointerResponse>;
  readonly pointerStatus: Route<PointerStatusRequest, PointerStatusResponse>;
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
});
