/**
 * The Machine RPC catalog, assembled from the route groups (`machine_`, `container_`, `image_`, `observe_`,
 * `upgrade_`, `routing_`, `serving_routes.ts`). A capability name never changes meaning; changed semantics get a
 * new `.vN` row (DESIGN.md Stable promise, rules 1 and 4; docs/rpc.md).
 *
 * @module
 */

import { CONTAINER_ROUTES } from "./container_routes.ts";
import { IMAGE_ROUTES } from "./image_routes.ts";
import { MACHINE_ROUTES } from "./machine_routes.ts";
import { OBSERVE_ROUTES } from "./observe_routes.ts";
import type { Route } from "./route.ts";
import { ROUTING_ROUTES } from "./routing_routes.ts";
import { SERVING_ROUTES } from "./serving_routes.ts";
import { UPGRADE_ROUTES } from "./upgrade_routes.ts";

export { PROTOCOL_MAJOR, type Route } from "./route.ts";

/** The catalog, by method name. */
export type Catalog =
  & typeof MACHINE_ROUTES
  & typeof CONTAINER_ROUTES
  & typeof IMAGE_ROUTES
  & typeof OBSERVE_ROUTES
  & typeof UPGRADE_ROUTES
  & typeof ROUTING_ROUTES
  & typeof SERVING_ROUTES;

/** A route's method name. */
export type RouteName = keyof Catalog;

/** Request and response types of every route, by method name. */
export type RouteTypes = {
  [K in RouteName]: Catalog[K] extends Route<infer Req, infer Res> ? [Req, Res] : never;
};

/** Every route this release knows. */
export const CATALOG: Catalog = Object.freeze({
  ...MACHINE_ROUTES,
  ...CONTAINER_ROUTES,
  ...IMAGE_ROUTES,
  ...OBSERVE_ROUTES,
  ...UPGRADE_ROUTES,
  ...ROUTING_ROUTES,
  ...SERVING_ROUTES,
});

/** Capability names, by method name. */
export const CAPABILITIES: { readonly [K in RouteName]: string } = Object.freeze(
  Object.fromEntries(Object.entries(CATALOG).map(([k, r]) => [k, r.capability])) as {
    [K in RouteName]: string;
  },
);

/** The route serving a capability name, or `undefined` for a name this release does not know. */
export function routeOf(capability: string): RouteName | undefined {
  for (const [name, route] of Object.entries(CATALOG) as [RouteName, Route<unknown, unknown>][]) {
    if (route.capability === capability) return name;
  }
  return undefined;
}
