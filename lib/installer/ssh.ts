// The system `ssh` client as provisioning and remote Machine RPC use it: explicit options (BatchMode, a connect
// timeout, keepalives), one validated destination, and a remote command passed as one `sh -c` word so the login
// shell of the remote user does not matter. Nothing secret is ever on a command line: authentication is ssh's own
// (keys, agent, its config), and what is logged is the destination and the remote program's name.
import { InstallError } from "./errors.ts";
import { messageOf } from "../util/mod.ts";

/** How `ssh` is run. */
export interface SshOptions {
  /** `ssh -F FILE` instead of the user's ~/.ssh/config (`PLOYZ_SSH_CONFIG`); e.g. a test's own keys. */
  configFile?: string;
  /** Seconds to wait for the TCP connection; default 10. */
  connectTimeoutSeconds?: number;
  /** The SSH port, when not the destination's default. */
  port?: number;
}

const DESTINATION = /^[A-Za-z0-9_.@:-]+$/;

/** Returns `destination` (`[user@]host`) when it is one plain SSH destination; refuses options and metacharacters. */
export function checkSshDestination(destination: string): string {
  if (!DESTINATION.test(destination) || destination.startsWith("-") || destination.length > 255) {
    throw new InstallError("invalid_argument", `Invalid SSH destination "${destination}"`);
  }
  return destination;
}

/** SSH options from the environment: `PLOYZ_SSH_CONFIG` names an ssh config file to use instead of ~/.ssh/config. */
export function sshOptionsFromEnv(get: (key: string) => string | undefined): SshOptions {
  const file = get("PLOYZ_SSH_CONFIG");
  return file === undefined || file === "" ? {} : { configFile: file };
}

/** Quotes `word` for a POSIX shell. */
export function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'"'"'`)}'`;
}

/** The `ssh` argument list that runs `remote` (a shell script) on `destination`. */
export function sshArgs(destination: string, remote: string, options: SshOptions = {}): string[] {
  const args = [
    "-o",
    "BatchMode=yes",
    "-o",
    `ConnectTimeout=${options.connectTimeoutSeconds ?? 10}`,
    "-o",
    "ServerAliveInterval=15",
    "-o",
    "ServerAliveCountMax=4",
    "-T",
  ];
  if (options.configFile !== undefined) args.unshift("-F", options.configFile);
  if (options.port !== undefined) {
    if (!Number.isInteger(options.port) || options.port < 1 || options.port > 65535) {
      throw new InstallError("invalid_argument", `Invalid SSH port "${options.port}"`);
    }
    args.push("-p", String(options.port));
  }
  return [...args, "--", checkSshDestination(destination), `sh -c ${shellQuote(remote)}`];
}

/** What a remote script did. */
export interface RemoteResult {
  /** Its exit code; 255 is ssh's own failure (could not connect or authenticate). */
  code: number;
  /** Standard output. */
  stdout: string;
  /** Standard error (ssh's own messages included). */
  stderr: string;
  /** Whether the deadline killed it. */
  timedOut: boolean;
}

/** Runs shell scripts on one host. */
export interface RemoteShell {
  /** How messages name the host, e.g. `root@10.0.0.5`. */
  readonly label: string;
  /**
   * Runs `script` with `sh`; `stdin` (if any) is its standard input; `onLine` sees each output line as it
   * arrives.
   */
  run(
    script: string,
    options: {
      timeoutMs: number;
      stdin?: ReadableStream<Uint8Array>;
      onLine?: (line: string, stream: "stdout" | "stderr") => void;
    },
  ): Promise<RemoteResult>;
}

/** A {@link RemoteShell} over the system `ssh` client. */
export function sshShell(destination: string, options: SshOptions = {}): RemoteShell {
  checkSshDestination(destination);
  return {
    label: destination,
    async run(script, run): Promise<RemoteResult> {
      const timer = AbortSignal.timeout(run.timeoutMs);
      let child: Deno.ChildProcess;
      try {
        child = new Deno.Command("ssh", {
          args: sshArgs(destination, script, options),
          stdin: run.stdin === undefined ? "null" : "piped",
          stdout: "piped",
          stderr: "piped",
          signal: timer,
        }).spawn();
      } catch (error) {
        throw new InstallError(
          "unavailable",
          `Cannot run ssh: ${messageOf(error)}`,
        );
      }
      const feed = run.stdin === undefined
        ? Promise.resolve()
        // The remote side may exit early (a refused transfer); its answer explains more than a broken pipe.
        : run.stdin.pipeTo(child.stdin).catch(() => {});
      const [stdout, stderr, status] = await Promise.all([
        readLines(child.stdout, (line) => run.onLine?.(line, "stdout")),
        readLines(child.stderr, (line) => run.onLine?.(line, "stderr")),
        child.status,
        feed,
      ]);
      return { code: timer.aborted ? -1 : status.code, stdout, stderr, timedOut: timer.aborted };
    },
  };
}

async function readLines(
  stream: ReadableStream<Uint8Array>,
  onLine: (line: string) => void,
): Promise<string> {
  let all = "";
  let pending = "";
  for await (const text of stream.pipeThrough(new TextDecoderStream())) {
    all += text;
    pending += text;
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) onLine(line);
  }
  if (pending !== "") onLine(pending);
  return all;
}
