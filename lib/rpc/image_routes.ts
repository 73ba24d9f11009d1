/**
 * Image routes of Machine RPC: inspecting an image on the Machine's Docker. (Copying an image between Machines is
 * in `routing_routes.ts`.) Requests ignore fields they do not know; responses are tolerant (docs/rpc.md).
 *
 * @module
 */

import { z } from "zod";
import type { Route } from "./route.ts";

const text = z.string().max(4096);

/** What `ployz.image.inspect.v1` asks. */
export interface InspectImageRequest {
  /** Image reference or id. */
  ref: string;
}

/** Reader of {@link InspectImageRequest}; fields it does not know are ignored. */
export const InspectImageRequestSchema: z.ZodType<InspectImageRequest> = z.object({
  ref: z.string().min(1).max(1024),
});

/** What `ployz.image.inspect.v1` answers. */
export interface InspectImageResponse {
  /** Whether the image is on the Machine. */
  present: boolean;
  /** Its id, when present. */
  id?: string;
}

/** Tolerant reader of {@link InspectImageResponse}. */
export const InspectImageResponseSchema: z.ZodType<InspectImageResponse> = z.looseObject({
  present: z.boolean(),
  id: text.optional(),
});

/** The image routes, by method name. */
export const IMAGE_ROUTES: {
  /** `ployz.image.inspect.v1`. */
  readonly inspectImage: Route<InspectImageRequest, InspectImageResponse>;
} = Object.freeze({
  inspectImage: {
    capability: "ployz.image.inspect.v1",
    request: InspectImageRequestSchema,
    response: InspectImageResponseSchema,
  },
});
