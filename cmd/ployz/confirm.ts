// Asking the operator before a command changes the Cluster: one way for every command that takes -y.
import { CliError } from "../../lib/cli/mod.ts";

/**
 * Whether the operator answers yes to `question` on the terminal. Without a terminal on standard input nobody can
 * answer: a usage mistake (exit 2) naming what was about to happen (`verb`) and -y.
 */
export async function confirmed(verb: string, question: string): Promise<boolean> {
  if (!Deno.stdin.isTerminal()) {
    throw new CliError(
      "invalid_argument",
      `Refusing to ${verb} without confirmation: standard input is not a terminal; pass -y to confirm`,
      { exitCode: 2 },
    );
  }
  await Deno.stdout.write(new TextEncoder().encode(`${question} [y/N] `));
  const buf = new Uint8Array(256);
  const n = await Deno.stdin.read(buf);
  const answer = n === null ? "" : new TextDecoder().decode(buf.subarray(0, n)).trim().toLowerCase();
  return answer === "y" || answer === "yes";
}
