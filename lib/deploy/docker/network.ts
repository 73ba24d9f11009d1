/**
 * The Machine's Docker bridge network: created owned and labelled when absent, verified (owner, driver, subnet,
 * gateway) when present, never removed here.
 *
 * @module
 */

import { type Client, request, seg } from "./client.ts";
import type { DockerNetwork } from "./docker_types.ts";
import { DockerError } from "./errors.ts";
import { assertOwned, ownerLabels } from "./labels.ts";

/** What the Machine's network must be. */
export interface NetworkSpec {
  /** Usually `ployz`. */
  name: string;
  /** IPv4 CIDR, e.g. `10.210.3.0/24`. */
  subnet: string;
  /** Address of the bridge inside `subnet`. */
  gateway: string;
  /** Name of the Linux bridge interface; Docker picks one when absent. */
  bridgeName?: string;
}

/** The network as found or made. */
export interface NetworkInfo {
  /** Docker's network id. */
  id: string;
  /** The network name. */
  name: string;
  /** Its IPv4 subnet. */
  subnet: string;
  /** Its gateway address. */
  gateway: string;
  /** Whether this call created it. */
  created: boolean;
}

/** Finds a network by exact name (Docker's name filter matches substrings); `undefined` when absent. */
export async function findNetwork(
  client: Client,
  name: string,
  signal?: AbortSignal,
): Promise<DockerNetwork | undefined> {
  const rows = await request(client, { operation: `list networks named "${name}"`, cls: "list", signal }, {
    method: "GET",
    path: "/networks",
    query: { filters: { name: [name] } },
  }) as DockerNetwork[];
  const match = rows.find((n) => n.Name === name);
  if (match === undefined) return undefined;
  return await request(client, { operation: `inspect network "${name}"`, cls: "inspect", signal }, {
    method: "GET",
    path: `/networks/${seg(match.Id)}`,
  }) as DockerNetwork;
}

function verify(client: Client, spec: NetworkSpec, found: DockerNetwork): NetworkInfo {
  assertOwned("use", "network", spec.name, found.Labels, client.machineId);
  if (found.Driver !== "bridge") {
    throw new DockerError(
      "conflict",
      `Network "${spec.name}" uses driver "${found.Driver ?? ""}", expected "bridge"`,
      { details: { network: spec.name, found: found.Driver ?? "", expected: "bridge" } },
    );
  }
  const configs = found.IPAM?.Config ?? [];
  const config = configs.find((c) => c.Subnet === spec.subnet);
  if (config === undefined) {
    const subnets = configs.map((c) => c.Subnet ?? "").join(", ");
    throw new DockerError(
      "conflict",
      `Network "${spec.name}" has subnet "${subnets}", expected "${spec.subnet}": remove it or choose its subnet`,
      { details: { network: spec.name, found: subnets, expected: spec.subnet } },
    );
  }
  if (config.Gateway !== undefined && config.Gateway !== "" && config.Gateway !== spec.gateway) {
    throw new DockerError(
      "conflict",
      `Network "${spec.name}" has gateway "${config.Gateway}", expected "${spec.gateway}"`,
      { details: { network: spec.name, found: config.Gateway, expected: spec.gateway } },
    );
  }
  return { id: found.Id, name: found.Name, subnet: spec.subnet, gateway: spec.gateway, created: false };
}

/** Creates the network when absent; otherwise checks it is this Machine's and has the expected addressing. */
export async function ensureNetwork(
  client: Client,
  spec: NetworkSpec,
  signal?: AbortSignal,
): Promise<NetworkInfo> {
  const found = await findNetwork(client, spec.name, signal);
  if (found !== undefined) return verify(client, spec, found);
  const options: Record<string, string> = {};
  if (spec.bridgeName !== undefined) options["com.docker.network.bridge.name"] = spec.bridgeName;
  try {
    const made = await request(
      client,
      { operation: `create network "${spec.name}"`, cls: "create", signal },
      {
        method: "POST",
        path: "/networks/create",
        body: {
          Name: spec.name,
          Driver: "bridge",
          CheckDuplicate: true,
          IPAM: { Driver: "default", Config: [{ Subnet: spec.subnet, Gateway: spec.gateway }] },
          Options: options,
          Labels: { ...client.extraLabels, ...ownerLabels(client.machineId) },
        },
      },
    ) as { Id: string };
    return { id: made.Id, name: spec.name, subnet: spec.subnet, gateway: spec.gateway, created: true };
  } catch (error) {
    // Created concurrently by another caller: judge what is there now.
    if (error instanceof DockerError && error.code === "conflict") {
      const now = await findNetwork(client, spec.name, signal);
      if (now !== undefined) return verify(client, spec, now);
    }
    throw error;
  }
}
