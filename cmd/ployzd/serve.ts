import { join } from "node:path";
import { CliError, type Command, PLOYZ_VERSION, UsageError } from "../../lib/cli/mod.ts";
import { type Daemon, meshSettingsFromEnv, startDaemon } from "../../lib/daemon/mod.ts";
import { DEFAULT_LAYOUT, dropPreload, layoutFromEnv } from "../../lib/permissions/mod.ts";
import { RpcError } from "../../lib/rpc/mod.ts";
import { messageOf } from "../../lib/util/mod.ts";

/**
 * `ployzd serve`: the Machine daemon. Serves Machine RPC on `$PLOYZ_RUN_DIR/ployz.sock` and publishes this
 * Machine's containers into the replicated store until SIGTERM or SIGINT.
 */
export const serve: Command = {
  name: "serve",
  summary: "Run the Machine daemon: Machine RPC, Docker, mesh, replicated store",
  usage: "[--rescan-seconds N]",
  description: [
    "Paths come from PLOYZ_DATA_DIR, PLOYZ_RUN_DIR and PLOYZ_DOCKER_SOCKET (defaults /var/lib/ployz, /run/ployz,",
    "/var/run/docker.sock). PLOYZ_DOCKER_NETWORK names the Machine's bridge network (default ployz);",
    "PLOYZ_DOCKER_LABELS (k=v,k=v) adds labels to every Docker object the daemon creates.",
    "Mesh: PLOYZ_WG_INTERFACE (default ployz0 for the installed layout; required with a relocated data",
    "directory; none = no mesh), PLOYZ_WG_PORT (51820), PLOYZ_ADVERTISE_ENDPOINTS (host:port,…; default the",
    "host's IPv4 addresses), PLOYZ_MEMBERSHIP_{HANDSHAKE_UP,STORE_UP,DOWN_AFTER}_MS, PLOYZ_MESH_TICK_MS,",
    "PLOYZ_SYNC_INTERVAL_MS. Store sync listens on the Machine Gateway, port 51000, over the mesh only.",
  ],
  options: { "rescan-seconds": { type: "string" } },
  async run({ values, io }): Promise<number> {
    dropPreload();
    const rescanSeconds = parseRescan(values["rescan-seconds"]);
    const env = (key: string): string | undefined => Deno.env.get(key);
    const layout = layoutFromEnv(env);
    const log = (line: string): void => io.err(`ployzd serve: ${line}\n`);
    let mesh;
    try {
      mesh = meshSettingsFromEnv(env, { defaultLayout: layout.dataDir === DEFAULT_LAYOUT.dataDir });
    } catch (error) {
      throw new UsageError(messageOf(error));
    }
    let daemon: Daemon;
    try {
      daemon = await startDaemon({
        layout,
        daemonVersion: PLOYZ_VERSION,
        defaultName: Deno.hostname(),
        network: env("PLOYZ_DOCKER_NETWORK") || "ployz",
        extraLabels: parseLabels(env("PLOYZ_DOCKER_LABELS")),
        rescanMs: rescanSeconds * 1000,
        log,
        mesh,
      });
    } catch (error) {
      if (error instanceof RpcError) {
        throw new CliError(error.code, error.message, { details: error.details });
      }
      throw error;
    }
    const m = daemon.machine;
    log(`Machine "${m.name}" (${m.id}, ${m.phase}) listening on ${join(layout.runDir, "ployz.sock")}`);
    log(
      mesh === undefined
        ? "mesh off"
        : `mesh interface "${mesh.interfaceName}", WireGuard port ${mesh.listenPort}`,
    );
    const signal = await new Promise<Deno.Signal>((resolve) => {
      const handlers = (["SIGTERM", "SIGINT"] as const).map((name) => {
        const handler = (): void => {
          for (const [n, h] of handlers) Deno.removeSignalListener(n, h);
          resolve(name);
        };
        Deno.addSignalListener(name, handler);
        return [name, handler] as const;
      });
    });
    log(`stopping on ${signal}`);
    await daemon.stop();
    return 0;
  },
};

function parseRescan(value: unknown): number {
  if (value === undefined) return 30;
  const n = Number(value);
  if (typeof value !== "string" || !Number.isFinite(n) || n <= 0 || n > 86400) {
    throw new UsageError(`Invalid --rescan-seconds "${String(value)}": expected a number of seconds above 0`);
  }
  return n;
}

function parseLabels(value: string | undefined): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const pair of (value ?? "").split(",")) {
    if (pair.trim() === "") continue;
    const at = pair.indexOf("=");
    if (at <= 0) throw new UsageError(`Invalid PLOYZ_DOCKER_LABELS entry "${pair}": expected key=value`);
    labels[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
  }
  return labels;
}
