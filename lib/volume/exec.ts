// Running the Pool's programs (btrfs, zfs, losetup, mount…) with a deadline, one argv at a time (never a shell),
// with the two shapes send and receive need: a program's stdout as a stream, and a stream as a program's stdin.
import { VolumeError } from "./errors.ts";

/** Options of {@link Exec.run}. */
export interface ExecRunOptions {
  /** Aborts the program (SIGKILL). Without it the run is bounded by {@link DEFAULT_TIMEOUT_MS}. */
  signal?: AbortSignal;
  /** Fed to the program's stdin; an error in it kills the program. */
  stdin?: ReadableStream<Uint8Array>;
}

/** A program started for its output stream. */
export interface ExecStream {
  /** The program's stdout. */
  output: ReadableStream<Uint8Array>;
  /** Settles when the program exited: rejects with `unavailable` naming the command on a non-zero exit. */
  done: Promise<void>;
}

/** Runs the Pool's programs; a fake one records command lines in contract tests. */
export interface Exec {
  /** Runs `argv` to completion and returns its stdout; a non-zero exit throws `unavailable` naming the command. */
  run(argv: readonly string[], options?: ExecRunOptions): Promise<string>;
  /** Starts `argv` and hands over its stdout as it is produced. */
  stream(argv: readonly string[], options?: { signal?: AbortSignal }): ExecStream;
}

/** How long a Pool command without its own signal may take. */
export const DEFAULT_TIMEOUT_MS = 60_000;
const STDERR_CAP = 16 * 1024;
const ENV = { PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", LANG: "C.UTF-8" };

function failure(argv: readonly string[], code: number, stderr: string): VolumeError {
  const detail = stderr.trim().split("\n").filter((l) => l.trim() !== "").slice(-2).join("; ").slice(0, 400);
  return new VolumeError(
    "unavailable",
    `"${argv.join(" ")}" failed: ${detail === "" ? `exit code ${code}` : detail}`,
    { details: { command: argv[0], exit_code: code } },
  );
}

async function collect(stream: ReadableStream<Uint8Array>, cap: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of stream) {
    if (size < cap) chunks.push(chunk.subarray(0, cap - size));
    size += chunk.length;
  }
  const all = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.length;
  }
  return new TextDecoder().decode(all);
}

function spawn(argv: readonly string[], stdin: boolean, signal: AbortSignal): Deno.ChildProcess {
  try {
    return new Deno.Command(argv[0], {
      args: argv.slice(1),
      env: ENV,
      clearEnv: true,
      stdin: stdin ? "piped" : "null",
      stdout: "piped",
      stderr: "piped",
      signal,
    }).spawn();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new VolumeError("unavailable", `Cannot run "${argv[0]}": command not found`, { cause: error });
    }
    throw error;
  }
}

/** Runs programs on this host. */
export function hostExec(): Exec {
  return {
    async run(argv, options = {}) {
      const signal = options.signal ?? AbortSignal.timeout(DEFAULT_TIMEOUT_MS);
      const child = spawn(argv, options.stdin !== undefined, signal);
      let fed: Promise<void> = Promise.resolve();
      if (options.stdin !== undefined) {
        fed = options.stdin.pipeTo(child.stdin).catch(() => {
          // The source failed or the program stopped reading: the program must not finish on a short input.
          try {
            child.kill("SIGKILL");
          } catch {
            // Already gone.
          }
        });
      }
      const [stdout, stderr, status] = await Promise.all([
        collect(child.stdout, 8 * 1024 * 1024),
        collect(child.stderr, STDERR_CAP),
        child.status,
        fed,
      ]);
      if (signal.aborted) {
        throw new VolumeError("unavailable", `"${argv.join(" ")}" did not finish in time and was stopped`);
      }
      if (!status.success) throw failure(argv, status.code, stderr);
      return stdout;
    },
    stream(argv, options = {}) {
      const signal = options.signal ?? AbortSignal.timeout(DEFAULT_TIMEOUT_MS);
      const child = spawn(argv, false, signal);
      const stderr = collect(child.stderr, STDERR_CAP);
      const done = Promise.all([child.status, stderr]).then(([status, text]) => {
        if (signal.aborted) throw new VolumeError("unavailable", `"${argv.join(" ")}" was stopped`);
        if (!status.success) throw failure(argv, status.code, text);
      });
      return { output: child.stdout, done };
    },
  };
}
