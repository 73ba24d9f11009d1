// Reaching a Machine other than the local one: its unix socket (`--socket PATH`, e.g. a lab Machine's) or SSH
// (`ssh HOST ployzd dial-stdio`, carrying the same HTTP as the socket). SSH runs with explicit options (BatchMode,
// a connect timeout; `PLOYZ_SSH_CONFIG` names an ssh config file to use instead of ~/.ssh/config).
import { CliError } from "../../lib/cli/mod.ts";
import { sshArgs, sshOptionsFromEnv } from "../../lib/installer/ssh/mod.ts";
import { connectMachine, type MachineClient, stdioFetch } from "../../lib/rpc/mod.ts";

/** Refuses anything but one plain SSH destination (`[user@]host`), as a usage error. */
export function checkDestination(destination: string): string {
  if (!/^[A-Za-z0-9_.@:-]+$/.test(destination) || destination.startsWith("-")) {
    throw new CliError("invalid_argument", `Invalid SSH destination "${destination}"`, { exitCode: 2 });
  }
  return destination;
}

/**
 * A client for `--socket PATH` or an SSH destination; exactly one must be given. With `sudo`, the bridge runs as
 * `sudo -n ployzd dial-stdio` (an SSH user that is not root).
 */
export function targetMachine(
  options: { socket?: string; ssh?: string; sudo?: boolean; what: string },
): MachineClient {
  if (options.socket !== undefined && options.ssh !== undefined) {
    throw new CliError(
      "invalid_argument",
      `Give either an SSH destination or "--socket" for ${options.what}, not both`,
      {
        exitCode: 2,
      },
    );
  }
  if (options.socket !== undefined) return connectMachine({ socketPath: options.socket });
  if (options.ssh !== undefined) {
    const destination = checkDestination(options.ssh);
    const label = `ssh ${destination}`;
    const remote = `exec ${options.sudo ? "sudo -n " : ""}ployzd dial-stdio`;
    return connectMachine({
      label,
      fetch: stdioFetch({
        cmd: "ssh",
        args: sshArgs(destination, remote, sshOptionsFromEnv((key) => Deno.env.get(key))),
        label,
      }),
    });
  }
  throw new CliError(
    "invalid_argument",
    `Cannot reach ${options.what}: give an SSH destination or "--socket PATH"`,
    { exitCode: 2 },
  );
}
