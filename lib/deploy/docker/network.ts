/**
 * The Machine's Docker bridge network: created owned and labelled when absent, verified (owner, driver, subnet,
 * gateway) when present, never removed here.
 *
 * It is created with Docker's IP masquerade off (`com.docker.network.bridge.enable_ip_masquerade=false`): with it on,
 * Docker rewrites every packet a container sends out of the bridge to the host's address, including packets to other
 * Machines' containers over WireGuard, which the peer then drops (it admits only Machine Subnets as sources). The
 * mesh firewall (lib/mesh) masquerades only what leaves the Cluster network instead. A network created before that
 * cannot be changed in place: {@link masqueradeProblem} says so, with the fix.
 *
 * A container starts more slowly here than on Docker's default bridge, and nothing in this network's options
 * changes that: Docker gives every container on a user-defined network its embedded DNS server, and each start runs
 * dockerd again inside the container's namespace to install that server's NAT rules (eleven `iptables` runs on
 * Docker 20.10), which the default bridge skips. No network or endpoint option turns the server off, and the
 * Machine needs its own network (its subnet is routed over the mesh). `tools/bench/registry_pull_bench.ts` prints
 * `docker run` on both networks side by side.
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
  /** Leave masquerading to Docker (a Machine off the mesh); default false: ployz's mesh firewall does it. */
  dockerMasquerade?: boolean;
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
  /** Set when Docker masquerades the network (made the old way); the message names the fix. */
  masqueradeProblem?: string;
}

/** The bridge option that turns Docker's masquerade for one network off. */
export const MASQUERADE_OPTION = "com.docker.network.bridge.enable_ip_masquerade";

/**
 * Why an existing network breaks cross-Machine container traffic, with the exact fix; `undefined` when Docker does
 * not masquerade it. Docker masquerades a bridge network unless its option says `false` (or the daemon runs with
 * `--ip-masq=false`, which this cannot see: the message then still holds for a later daemon without it).
 */
export function masqueradeProblem(found: DockerNetwork): string | undefined {
  const value = found.Options?.[MASQUERADE_OPTION];
  if (value !== undefined && /^(false|0)$/i.test(value.trim())) return undefined;
  const attached = Object.values(found.Containers ?? {}).map((c) => c.Name ?? "").filter((n) => n !== "");
  const names = `${attached.slice(0, 5).join(", ")}${attached.length > 5 ? ", …" : ""}`;
  const move = attached.length === 0
    ? ""
    : ` remove the ${attached.length} container(s) attached to it (${names}),`;
  const redeploy = attached.length === 0 ? "" : `, then deploy again to put Ployz's containers back`;
  return `Network "${found.Name}" was created with Docker's IP masquerade on, so its containers' connections to ` +
    `other Machines can leave with this host's address and be dropped; it cannot be changed in place:${move} ` +
    `run "docker network rm ${found.Name}" and restart ployzd (it recreates the network with ` +
    `${MASQUERADE_OPTION}=false)${redeploy}`;
}

/**
 * Finds a network by exact name; `undefined` when absent. Docker's inspect answers an exact name before an id
 * prefix, so one call usually settles it (every container create asks); a different network found that way (a name
 * that is another network's id prefix) or none falls back to the list, whose name filter matches substrings.
 */
export async function findNetwork(
  client: Client,
  name: string,
  signal?: AbortSignal,
): Promise<DockerNetwork | undefined> {
  try {
    const direct = await request(client, { operation: `inspect network "${name}"`, cls: "inspect", signal }, {
      method: "GET",
      path: `/networks/${seg(name)}`,
    }) as DockerNetwork;
    if (direct.Name === name) return direct;
  } catch (error) {
    if (!(error instanceof DockerError) || error.code === "unavailable" || error.code === "internal") {
      throw error;
    }
  }
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
  const info: NetworkInfo = {
    id: found.Id,
    name: found.Name,
    subnet: spec.subnet,
    gateway: spec.gateway,
    created: false,
  };
  const problem = spec.dockerMasquerade === true ? undefined : masqueradeProblem(found);
  return problem === undefined ? info : { ...info, masqueradeProblem: problem };
}

/** Creates the network when absent; otherwise checks it is this Machine's and has the expected addressing. */
export async function ensureNetwork(
  client: Client,
  spec: NetworkSpec,
  signal?: AbortSignal,
): Promise<NetworkInfo> {
  const found = await findNetwork(client, spec.name, signal);
  if (found !== undefined) return verify(client, spec, found);
  const options: Record<string, string> = spec.dockerMasquerade === true
    ? {}
    : { [MASQUERADE_OPTION]: "false" };
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
