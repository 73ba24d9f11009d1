/**
 * The Machine RPC catalog, assembled from the route groups (`machine_`, `membership_`, `container_`, `image_`,
 * `observe_`, `upgrade_`, `routing_`, `serving_routes.ts`, …). A capability name never changes meaning; changed semantics get a
 * new `.vN` row (docs/rpc.md, rules 1 and 4).
 *
 * @module
 */

import { BUILD_ROUTES, type BuildRouteTypes } from "./build_routes.ts";
import { CONTAINER_ROUTES, type ContainerRouteTypes } from "./container_routes.ts";
import { EXEC_ROUTES, type ExecRouteTypes } from "./exec_routes.ts";
import { IMAGE_ROUTES, type ImageRouteTypes } from "./image_routes.ts";
import { MACHINE_ROUTES, type MachineRouteTypes } from "./machine_routes.ts";
import { MEMBERSHIP_ROUTES, type MembershipRouteTypes } from "./membership_routes.ts";
import { OBSERVE_ROUTES, type ObserveRouteTypes } from "./observe_routes.ts";
import type { Route, RouteTable } from "./route.ts";
import { ROUTING_ROUTES, type RoutingRouteTypes } from "./routing_routes.ts";
import { SERVING_ROUTES, type ServingRouteTypes } from "./serving_routes.ts";
import { UPGRADE_ROUTES, type UpgradeRouteTypes } from "./upgrade_routes.ts";
import { VOLUME_ROUTES, type VolumeRouteTypes } from "./volume_routes.ts";

export { PROTOCOL_MAJOR, type Route } from "./route.ts";

/** Request and response types of every route, by method name, as the route groups declare them. */
export interface RouteTypes
  extends
    MachineRouteTypes,
    MembershipRouteTypes,
    ContainerRouteTypes,
    ImageRouteTypes,
    ObserveRouteTypes,
    UpgradeRouteTypes,
    RoutingRouteTypes,
    ServingRouteTypes,
    ExecRouteTypes,
    VolumeRouteTypes,
    BuildRouteTypes {}

/** A route's method name. */
export type RouteName = keyof RouteTypes;

/** The catalog, by method name: the route groups must add up to exactly {@link RouteTypes}. */
export type Catalog = RouteTable<RouteTypes>;

/** Every route this release knows. */
export const CATALOG: Catalog = Object.freeze({
  ...MACHINE_ROUTES,
  ...MEMBERSHIP_ROUTES,
  ...CONTAINER_ROUTES,
  ...IMAGE_ROUTES,
  ...OBSERVE_ROUTES,
  ...UPGRADE_ROUTES,
  ...ROUTING_ROUTES,
  ...SERVING_ROUTES,
  ...EXEC_ROUTES,
  ...VOLUME_ROUTES,
  ...BUILD_ROUTES,
});

/** Capability names, by method name. */
export const CAPABILITIES: { readonly [K in RouteName]: string } = Object.freeze(
  Object.fromEntries(Object.entries(CATALOG).map(([k, r]) => [k, r.capability])) as {
    [K in RouteName]: string;
  },
);

/**
 * Capabilities no longer served, each with what replaced it (rule 6: no longer advertised, and refused naming the
 * capability and its replacement).
 */
export const RETIRED_CAPABILITIES: Readonly<Record<string, string>> = Object.freeze({
  // Docker's own log stream of one container; the Observe Store keeps the same output, of removed containers too.
  "ployz.container.logs.v1": "ployz.observe.log_history.v1 or ployz.observe.tail_logs.v1",
});

/** The route serving a capability name, or `undefined` for a name this release does not know. */
export function routeOf(capability: string): RouteName | undefined {
  for (const [name, route] of Object.entries(CATALOG) as [RouteName, Route<unknown, unknown>][]) {
    if (route.capability === capability) return name;
  }
  return undefined;
}
