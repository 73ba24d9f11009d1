// Running host programs with a deadline. Children get an explicit environment: the install permission set
// ignores the caller's, and a unit's environment is minimal anyway.

/** What a bounded run of a program produced. */
export interface ExecResult {
  /** Exit code; -1 when killed at the deadline. */
  code: number;
  /** Whether the deadline killed it. */
  timedOut: boolean;
  /** Standard output, decoded. */
  stdout: string;
  /** Standard error, decoded. */
  stderr: string;
}

/** The PATH children get. */
export const SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** Runs `cmd args` to completion or until `timeoutMs`, then kills it. */
export async function execBounded(
  cmd: string,
  args: string[],
  options: { timeoutMs: number; env?: Record<string, string>; cwd?: string },
): Promise<ExecResult> {
  const timer = AbortSignal.timeout(options.timeoutMs);
  const out = await new Deno.Command(cmd, {
    args,
    cwd: options.cwd,
    env: { PATH: SYSTEM_PATH, LANG: "C.UTF-8", NO_COLOR: "1", ...options.env },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: timer,
  }).output();
  const decoder = new TextDecoder();
  return {
    code: timer.aborted ? -1 : out.code,
    timedOut: timer.aborted,
    stdout: decoder.decode(out.stdout),
    stderr: decoder.decode(out.stderr),
  };
}

/** The last non-empty lines of a program's output, for a one-line error. */
export function tail(text: string, lines = 3): string {
  return text.trim().split("\n").filter((l) => l.trim() !== "").slice(-lines).join(" | ").slice(0, 600);
}
