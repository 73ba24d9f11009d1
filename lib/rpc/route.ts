/**
 * What a Machine RPC route is: a capability name with a request reader and a response reader. Every
 * `*_routes.ts` file exports its group of routes in this shape, and `catalog.ts` assembles them.
 *
 * Each group's readers are declared inside `z.lazy()`, so a reader is built the first time a call reads with it: a
 * daemon serves every route but most are never called between two Deploys, and the readers built at import held
 * 1.8 MB of V8 heap (0.6 MB so), part of `ployzd serve`'s idle resident memory.
 *
 * @module
 */

import * as z from "zod";

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

/**
 * A group's rows, checked against its types: `Types` names each route's `[request, response]` once, and the
 * catalog, the handler table and the client's methods are all read from those names.
 */
export type RouteTable<Types extends { [K in keyof Types]: readonly [unknown, unknown] }> = {
  readonly [K in keyof Types]: Route<Types[K][0], Types[K][1]>;
};

/** The empty request of the routes that ask nothing (describe, status, the lists); the client sends it alone. */
export type EmptyRequest = Record<string, never>;

/** The empty request; fields a newer client adds are ignored. */
export const EmptyRequestSchema: z.ZodType<EmptyRequest> = z.lazy(() => z.object({}));

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
