// Reaching a Machine other than the local one: its unix socket (`--socket PATH`, e.g. a lab Machine's) or SSH
// (`ssh HOST ployzd dial-stdio`, carrying the same HTTP as the socket).
import { CliError } from "../../lib/cli/mod.ts";
import { connectMachine, type MachineClient, stdioFetch } from "../../lib/rpc/mod.ts";

/** A client for `--socket PATH` or an SSH destination; exactly one must be given. */
export function targetMachine(options: { socket?: string; ssh?: string; what: string }): MachineClient {
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
    if (!/^[A-Za-z0-9_.@:-]+$/.test(options.ssh) || options.ssh.startsWith("-")) {
      throw new CliError("invalid_argument", `Invalid SSH destination "${options.ssh}"`, { exitCode: 2 });
    }
    const label = `ssh ${options.ssh}`;
    return connectMachine({
      label,
      fetch: stdioFetch({
        cmd: "ssh",
        args: ["-o", "BatchMode=yes", "-o", "ConnectTimeout=5", options.ssh, "ployzd", "dial-stdio"],
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

/** Left-aligned columns with two spaces between them. */
export function columns(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd();
  return [line(header), ...rows.map(line)].join("\n") + "\n";
}
