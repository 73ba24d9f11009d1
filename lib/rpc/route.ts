/**
 * What a Machine RPC route is: a capability name with a request reader and a response reader. Every
 * `*_routes.ts` file exports its group of routes in this shape, and `catalog.ts` assembles them.
 *
 * @module
 */

import { z } from "zod";

/** The Machine RPC major this release speaks. */
export const PROTOCOL_MAJOR = 1;

/** One catalog row: a JSON answer, or a `text/plain` stream when `response` is `"stream"`. */
export interface Route<Req, Res> {
  /** `ployz.<area>.<verb>.v<N>`. */
  readonly capability: string;
  /**
   * Reader of the request: strict on the types of the fields it knows, ignoring fields it does not (a newer
   * client's optional additions, rule 3). `protocol_major` is checked before and not part of it.
   */
  readonly request: z.ZodType<Req>;
  /** Tolerant reader of the answer, or `"stream"`. */
  readonly response: z.ZodType<Res> | "stream";
}

/** The empty request of the describe and status routes. */
export type EmptyRequest = Record<string, never>;

/** The empty request; fields a newer client adds are ignored. */
export const EmptyRequestSchema: z.ZodType<EmptyRequest> = z.object({});

/** A catalog row answered with a `text/plain` stream. */
export function route<Req>(
  capability: string,
  request: z.ZodType<Req>,
  response: "stream",
): Route<Req, ReadableStream<Uint8Array>>;
/** A catalog row: `capability` read with `request` and answered as `response`. */
export function route<Req, Res>(
  capability: string,
  request: z.ZodType<Req>,
  response: z.ZodType<Res>,
): Route<Req, Res>;
export function route<Req, Res>(
  capability: string,
  request: z.ZodType<Req>,
  response: z.ZodType<Res> | "stream",
): Route<Req, Res> {
  return { capability, request, response };
}
