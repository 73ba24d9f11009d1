/**
 * The declared area graph: each `lib/<area>/`, what it is in one sentence, and the areas it may import (through
 * their `mod.ts`). `areas_test.ts` holds the code to it: every import between areas is declared, every declared
 * edge is used, the graph has no cycle, and the map in CONTRIBUTING.md is {@link renderMap}'s output.
 * `deno run --allow-read tools/areas.ts` prints that map.
 *
 * @module
 */

/** One area: its sentence and the areas its non-test modules import. */
export interface Area {
  /** What the area is, in one sentence. */
  readonly about: string;
  /** Areas it imports, each through that area's `mod.ts`. */
  readonly uses: readonly string[];
}

/** Every area under `lib/`, leaves first. */
export const AREAS: Readonly<Record<string, Area>> = {
  util: {
    about:
      "The leaf every area may use: atomic file writes, sleep and polling, stopping a child, coded errors.",
    uses: [],
  },
  cli: {
    about:
      "Command-line plumbing shared by `ployz` and `ployzd`: the command tree, help, one-line coded errors.",
    uses: ["util"],
  },
  permissions: {
    about:
      "The permission sets of deno.json, relocated to a Machine's layout, as flags, units and worker grants.",
    uses: [],
  },
  store: {
    about:
      "The replicated Cluster store: a full SQLite copy on every Machine, converging by exchanged changes.",
    uses: ["util"],
  },
  rpc: {
    about:
      "Machine RPC: the route catalog, the hono app serving it, the typed client, fan-out and forwarding.",
    uses: ["util"],
  },
  dns: {
    about: "Internal DNS: `ployzd dns` answers the Cluster's names from the spec the daemon writes.",
    uses: ["util"],
  },
  observe: {
    about: "The Observe Store: this Machine's container logs and metrics, kept on this Machine only.",
    uses: ["util"],
  },
  volume: {
    about:
      "Volumes: the Pool backends (btrfs, ZFS) behind one interface, and SetVolumeCopy's pure transition table.",
    uses: ["util"],
  },
  deploy: {
    about: "Deploy: Compose loading, the Docker adapter, the pure planner and the client-side executor.",
    uses: ["rpc", "util"],
  },
  mesh: {
    about: "The WireGuard mesh: keys, addressing, subnet allocation, peers, membership and enrollment.",
    uses: ["rpc", "util"],
  },
  installer: {
    about: "Installing and upgrading Ployz on a Machine: release source, staging, activation, systemd units.",
    uses: ["permissions", "rpc", "util"],
  },
  serving: {
    about:
      "Serving: DNS and Ingress Proxy projections of the rows, Serving Pointers and acks, the retire loop.",
    uses: ["deploy", "dns", "installer", "rpc", "store", "util"],
  },
  operator: {
    about:
      "The operator's side: contexts naming a Cluster's Entry Machine, reaching it by socket or SSH, and the flows run through it.",
    uses: ["deploy", "installer", "rpc", "serving", "store", "util"],
  },
  lab: {
    about:
      "The local multi-Machine lab: namespaces with their own dockerd and ployzd, partitions and profiles.",
    uses: ["mesh", "permissions", "rpc", "store", "util", "volume"],
  },
  daemon: {
    about:
      "The Machine daemon `ployzd serve`: the Machine record, RPC handlers, the publisher, the Cluster link.",
    uses: ["deploy", "dns", "installer", "mesh", "permissions", "rpc", "serving", "store", "util", "volume"],
  },
};

/** The CONTRIBUTING.md map section: one line per area with its sentence, its `mod.ts` and what it uses. */
export function renderMap(areas: Readonly<Record<string, Area>> = AREAS): string {
  const lines = Object.entries(areas).map(([name, area]) => {
    const uses = area.uses.length === 0 ? "uses no other area" : `uses ${area.uses.join(", ")}`;
    return `- \`${name}\` ([lib/${name}/mod.ts](lib/${name}/mod.ts)): ${area.about} It ${uses}.`;
  });
  return lines.join("\n") + "\n";
}

if (import.meta.main) console.log(renderMap());
