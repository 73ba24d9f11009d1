/**
 * What an Internal DNS name asks for (lowercased, trailing dot optional):
 *
 * - `svc.project.internal`: every serving replica, rotated per query;
 * - `svc.project.nearest.internal`: the same, this Machine's replicas first;
 * - `<id>.id.lookup.internal`: a Service by its id (or one container by its id);
 * - `svc.project.<machine-id>.machine.internal`: that Machine's replicas only;
 * - `svc.project.<region>.region.internal`: parsed, always NXDOMAIN (regions do not exist yet);
 * - any other name under `.internal`: NXDOMAIN; a name outside `.internal`: forwarded.
 */
export type NameQuery =
  | { kind: "forward" }
  | { kind: "service"; key: string; nearest: boolean }
  | { kind: "id"; id: string }
  | { kind: "machine"; key: string; machineId: string }
  | { kind: "none" };

/** The lookup key of a Service: `svc.project`. */
export function serviceKey(service: string, project: string): string {
  return `${service}.${project}`;
}

/** Parses a query name (any case) into what it asks for. */
export function parseName(name: string): NameQuery {
  const lower = name.toLowerCase().replace(/\.$/, "");
  if (lower !== "internal" && !lower.endsWith(".internal")) return { kind: "forward" };
  const labels = lower === "internal" ? [] : lower.slice(0, -".internal".length).split(".");
  if (labels.some((l) => l.length === 0)) return { kind: "none" };
  if (labels.length === 2) return { kind: "service", key: serviceKey(labels[0], labels[1]), nearest: false };
  if (labels.length === 3 && labels[2] === "nearest") {
    return { kind: "service", key: serviceKey(labels[0], labels[1]), nearest: true };
  }
  if (labels.length === 3 && labels[1] === "id" && labels[2] === "lookup") {
    return { kind: "id", id: labels[0] };
  }
  if (labels.length === 4 && labels[3] === "machine") {
    return { kind: "machine", key: serviceKey(labels[0], labels[1]), machineId: labels[2] };
  }
  return { kind: "none" };
}
