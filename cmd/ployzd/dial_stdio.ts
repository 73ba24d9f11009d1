import { join } from "node:path";
import { CliError, type Command } from "../../lib/cli/mod.ts";
import { layoutFromEnv } from "../../lib/permissions/mod.ts";

/**
 * `ployzd dial-stdio`: bridges stdin/stdout to the local Machine RPC socket, so an operator reaches a Machine with
 * `ssh host ployzd dial-stdio` and nothing listens on the network for it.
 */
export const dialStdio: Command = {
  name: "dial-stdio",
  summary: "Bridge stdin/stdout to the local Machine RPC socket (for SSH access)",
  description: "The socket is $PLOYZ_RUN_DIR/ployz.sock (default /run/ployz/ployz.sock).",
  async run(): Promise<number> {
    const path = join(layoutFromEnv((k) => Deno.env.get(k)).runDir, "ployz.sock");
    let conn: Deno.UnixConn;
    try {
      conn = await Deno.connect({ transport: "unix", path });
    } catch (error) {
      throw new CliError(
        "unavailable",
        `Cannot connect to the Machine RPC socket "${path}": ${messageOf(error)}`,
      );
    }
    // Half-close towards the daemon when stdin ends, then drain its answer.
    const up = Deno.stdin.readable.pipeTo(conn.writable, { preventClose: true })
      .then(() => conn.closeWrite())
      .catch(() => {});
    await conn.readable.pipeTo(Deno.stdout.writable, { preventClose: true }).catch(() => {});
    await up;
    return 0;
  },
};

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
