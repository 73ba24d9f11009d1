/**
 * Where each Machine gets an image it lacks: a `pull` from the image's registry, or an `image` copy from a peer over the
 * mesh, by whether the registry answered, whether a peer holds the digest, and whether the registry is nearby.
 *
 * @module
 */

import { DeployError } from "./errors.ts";
import type { Snapshot } from "./snapshot.ts";
import type { ImageSource } from "./types.ts";
import type { Draft } from "./draft.ts";

/** The image an operation needs on its Machine, if any. */
function imageOf(op: Draft, ingressImage: string | undefined): string | undefined {
  if (op.kind === "create" || op.kind === "replace" || op.kind === "hook") return op.spec.image;
  if (op.kind === "ingress" && op.action === "create") return ingressImage;
  return undefined;
}

/**
 * Puts a `pull` or `image` operation before the first operation on a Machine that needs an image the Snapshot saw
 * it lack. An image pinned to a registry digest is pulled from the registry when the registry served that digest
 * at plan time and either no observed Machine holds it or the registry is nearby ({@linkcode registryIsNearby});
 * it is copied from the first observed Machine that holds the exact digest when the registry is remote or did not
 * answer. An image with no registry
 * identity (built or loaded on a Machine) is copied from a peer. Throws when neither source has it, naming both.
 */
export function placeImages(
  drafts: Draft[],
  snapshot: Snapshot,
  ingressImage: string | undefined,
  sources: ImageSource[],
): Draft[] {
  const out: Draft[] = [];
  const planned = new Set<string>();
  for (const op of drafts) {
    const ref = imageOf(op, ingressImage);
    const machine = snapshot.machines.find((m) => m.machineId === op.machineId);
    if (ref !== undefined && machine?.images[ref] === false && !planned.has(`${op.machineId}\0${ref}`)) {
      planned.add(`${op.machineId}\0${ref}`);
      const at = {
        machineId: op.machineId,
        machineName: op.machineName,
        project: op.project,
        service: op.service,
        slot: op.slot,
      };
      const source = sources.find((s) => s.ref === ref);
      const holder = snapshot.machines.find((m) => m.images[ref] === true);
      const nearby = source !== undefined && registryIsNearby(source.registry);
      if (source?.registryState === "available" && (holder === undefined || nearby)) {
        out.push({
          ...at,
          kind: "pull",
          ref,
          registry: source.registry,
          reason: `registry "${source.registry}" serves ${shortDigest(source.digest)}${
            holder === undefined
              ? ""
              : ` and is on the Cluster's own network: a pull fetches only the layers "${op.machineName}" lacks, on every Machine at once`
          }`,
        });
      } else if (holder !== undefined) {
        const why = source?.registryState === "unreachable"
          ? `registry "${source.registry}" did not answer (${
            source.registryMessage ?? "unreachable"
          }); "${holder.machineName}" holds ${shortDigest(source.digest)}`
          : source?.registryState === "available"
          ? `"${holder.machineName}" holds ${
            shortDigest(source.digest)
          } and registry "${source.registry}" is remote: the mesh copy spares its transfer and rate limits`
          : undefined;
        out.push({
          ...at,
          kind: "image",
          ref,
          fromMachineId: holder.machineId,
          fromMachineName: holder.machineName,
          ...(why === undefined ? {} : { reason: why }),
        });
      } else {
        const unobserved = snapshot.failures.length + snapshot.omissions.length;
        const notObserved = unobserved > 0 ? ` (${unobserved} Machine(s) not observed)` : "";
        if (source?.registryState === "unreachable") {
          throw new DeployError(
            "unavailable",
            `Image "${ref}" cannot reach Machine "${op.machineName}": registry "${source.registry}" did not answer (${
              source.registryMessage ?? "unreachable"
            }) and no observed Machine holds ${shortDigest(source.digest)}${notObserved}`,
            { image: ref, machine: op.machineName, service: op.service, registry: source.registry },
          );
        }
        throw new DeployError(
          "not_found",
          `Image "${ref}" is on no observed Machine${notObserved}: Service "${op.project}/${op.service}" needs it on Machine "${op.machineName}"; load it on one Machine first`,
          { image: ref, machine: op.machineName, service: op.service },
        );
      }
    }
    out.push(op);
  }
  return out;
}

const NEARBY_V4: [number, number][] = [
  [0x0a000000, 8], // 10/8
  [0x7f000000, 8], // loopback
  [0x64400000, 10], // 100.64/10, shared address space (carrier NAT, overlay meshes)
  [0xa9fe0000, 16], // link-local
  [0xac100000, 12], // 172.16/12
  [0xc0000200, 24], // 192.0.2/24, documentation (the lab's underlay)
  [0xc0a80000, 16], // 192.168/16
  [0xc6336400, 24], // 198.51.100/24, documentation
  [0xcb007100, 24], // 203.0.113/24, documentation
];

/**
 * Whether registry `host` (`name[:port]`, `[v6]:port`) sits on the Cluster's own network: a loopback, private,
 * shared, link-local or documentation address, `localhost`, a name without a dot, or a name under `.local`,
 * `.internal`, `.lan`, `.localhost` or `.home.arpa`. Any other name (Docker Hub, GHCR, a cloud registry) is remote.
 * The rule behind a Deploy's image source: a nearby registry is pulled from even when a peer holds the digest
 * (Docker fetches compressed layers, only the missing ones, on every Machine at once); from a remote one, a peer's
 * copy over the mesh is preferred (no transfer over the Internet, no registry rate limit).
 */
export function registryIsNearby(host: string): boolean {
  let name = host.toLowerCase();
  if (name.startsWith("[")) name = name.slice(1, name.indexOf("]") < 0 ? undefined : name.indexOf("]"));
  else if (/:\d+$/.test(name) && name.indexOf(":") === name.lastIndexOf(":")) {
    name = name.replace(/:\d+$/, "");
  }
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(name);
  if (v4 !== null) {
    const octets = v4.slice(1).map(Number);
    if (octets.some((o) => o > 255)) return false;
    const value = ((octets[0] << 24) >>> 0) + (octets[1] << 16) + (octets[2] << 8) + octets[3];
    return NEARBY_V4.some(([net, bits]) => (value >>> (32 - bits)) === (net >>> (32 - bits)));
  }
  if (name.includes(":")) {
    return name === "::1" || /^f[cd][0-9a-f]{0,2}:/.test(name) || /^fe[89ab][0-9a-f]?:/.test(name);
  }
  if (name === "localhost" || !name.includes(".")) return true;
  return [".local", ".internal", ".lan", ".localhost", ".home.arpa"].some((s) => name.endsWith(s));
}

function shortDigest(digest: string | undefined): string {
  return digest === undefined ? "the image" : `${digest.slice(0, 19)}…`;
}
