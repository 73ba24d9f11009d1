import { join } from "node:path";
import { CliError, type Command } from "../../lib/cli/mod.ts";
import { layoutFromEnv } from "../../lib/permissions/mod.ts";
import { serveMux } from "../../lib/rpc/mod.ts";
import { messageOf } from "../../lib/util/mod.ts";

/**
 * `ployzd dial-stdio`: bridges stdin/stdout to the local Machine RPC socket, so an operator reaches a Machine with
 * `ssh host ployzd dial-stdio` and nothing listens on the network for it. With `--mux`, stdin/stdout carry many
 * socket connections at once (the operator CLI's way: one SSH connection per command).
 */
export const dialStdio: Command = {
  name: "dial-stdio",
  summary: "Bridge stdin/stdout to the local Machine RPC socket (for SSH access)",
  usage: "[--mux]",
  description: "The socket is $PLOYZ_RUN_DIR/ployz.sock (default /run/ployz/ployz.sock).\n" +
    "--mux multiplexes many connections over stdin/stdout (framing in lib/rpc/mux.ts).",
  options: { mux: { type: "boolean" } },
  async run({ values }): Promise<number> {
    const path = join(layoutFromEnv((k) => Deno.env.get(k)).runDir, "ployz.sock");
    const connect = async (): Promise<Deno.UnixConn> => {
      try {
        return await Deno.connect({ transport: "unix", path });
      } catch (error) {
        throw new CliError(
          "unavailable",
          `Cannot connect to the Machine RPC socket "${path}": ${messageOf(error)}`,
        );
      }
    };
    if (values.mux === true) {
      // Refuse before greeting when the daemon is not there, so the operator sees why at once.
      (await connect()).close();
      await serveMux(Deno.stdin.readable, Deno.stdout.writable, connect);
      return 0;
    }
    const conn = await connect();
    // Half-close towards the daemon when stdin ends, then drain its answer.
    const up = Deno.stdin.readable.pipeTo(conn.writable, { preventClose: true })
      .then(() => conn.closeWrite())
      .catch(() => {});
    await conn.readable.pipeTo(Deno.stdout.writable, { preventClose: true }).catch(() => {});
    await up;
    return 0;
  },
};
