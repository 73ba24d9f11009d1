/**
 * Running the `ip`, `wg` and `wireguard-go` commands, on the host or inside a network namespace (through
 * `nsenter --net`, which keeps the host's mounts: `/var/run/wireguard` and key files stay visible). Arguments never
 * carry key material: private keys go to `wg` as file paths.
 *
 * @module
 */

import { MeshError } from "./errors.ts";

/** What a finished command printed and how it exited. */
export interface CommandResult {
  /** The exit code. */
  code: number;
  /** Standard output, decoded. */
  stdout: string;
  /** Standard error, decoded. */
  stderr: string;
}

/** Options of {@link CommandRunner.run}. */
export interface RunOptions {
  /** Extra environment. */
  env?: Record<string, string>;
  /** Start the command in its own session and process group, so what it leaves running (wireguard-go's daemon)
   * outlives the caller and never receives signals sent to the caller's group. */
  detached?: boolean;
}

/** Runs commands in one place (the host, or one network namespace). */
export interface CommandRunner {
  /** Where commands run, for messages: `host` or `netns "<name>"`. */
  readonly where: string;
  /** Runs `cmd args` to completion; never throws for a non-zero exit. */
  run(cmd: string, args: string[], options?: RunOptions): Promise<CommandResult>;
}

const decoder = new TextDecoder();

async function execute(
  cmd: string,
  args: string[],
  options: RunOptions | undefined,
  what: string,
): Promise<CommandResult> {
  try {
    const command = new Deno.Command(cmd, {
      args,
      env: options?.env,
      detached: options?.detached,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    });
    // `detached` takes effect only through spawn(): the child then starts its own session. Everything else takes
    // output() at once: a spawned child's pipes hold ~100 KB of native memory each until a full GC, and the mesh
    // tick runs these commands every few seconds, which grew an idle daemon's RSS by ~1 MB every 5 s.
    const out = await (options?.detached ? command.spawn().output() : command.output());
    return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new MeshError("unavailable", `Cannot run "${what}": command not found`, { cause: error });
    }
    throw error;
  }
}

/** Runs commands directly on the host. */
export function hostRunner(): CommandRunner {
  return {
    where: "host",
    run: (cmd, args, options) => execute(cmd, args, options, cmd),
  };
}

/** The path of a named network namespace, as `ip netns add` creates it. */
export function netnsPath(name: string): string {
  return `/var/run/netns/${name}`;
}

/** Runs commands inside the named network namespace through `nsenter --net=/var/run/netns/<name>`. */
export function netnsRunner(name: string): CommandRunner {
  return {
    where: `netns "${name}"`,
    run: (cmd, args, options) =>
      execute("nsenter", [`--net=${netnsPath(name)}`, "--", cmd, ...args], options, cmd),
  };
}

/** Runs a command and returns its stdout; a non-zero exit throws with the command and its stderr. */
export async function runChecked(runner: CommandRunner, cmd: string, args: string[]): Promise<string> {
  const result = await runner.run(cmd, args);
  if (result.code !== 0) {
    const detail = result.stderr.trim().split("\n").slice(-3).join("; ") || `exit code ${result.code}`;
    throw new MeshError(
      "unavailable",
      `Command "${[cmd, ...args].join(" ")}" failed (${runner.where}): ${detail}`,
    );
  }
  return result.stdout;
}
