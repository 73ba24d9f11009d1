// Opens the Machine RPC client a command uses: the local socket, or one SSH connection to the Entry Machine that
// runs `ployzd dial-stdio --mux` and carries every call of the command (concurrent calls and open streams share
// it). ssh runs with BatchMode (never a prompt), a connect timeout and keepalives, with host key checking left
// on: an unknown host key is refused, never accepted.
import { shellQuote, sshArgs, type SshOptions } from "../installer/ssh/mod.ts";
import { connectMachine, type MachineClient, muxFetch, type MuxSession, muxSession } from "../rpc/mod.ts";
import type { ConnectionChoice } from "./context.ts";
import { OperatorError } from "./errors.ts";
import { messageOf } from "../util/mod.ts";

/** How SSH connections are made. */
export interface SshConnectOptions {
  /** `ssh -F FILE` (`PLOYZ_SSH_CONFIG`). */
  configFile?: string;
  /** Seconds to wait for the TCP connection; default 10. */
  connectTimeoutSeconds?: number;
  /** The remote program; default `ployzd` (found on the remote user's PATH). */
  remoteProgram?: string;
  /** The `ssh` program; default `ssh`. */
  sshProgram?: string;
}

/** How messages name a connection: `context "prod" (ssh root@host:22)` or the socket path. */
export function describeChoice(choice: ConnectionChoice): string {
  const where = choice.target.kind === "unix"
    ? choice.target.path
    : `${choice.target.user === undefined ? "" : `${choice.target.user}@`}${choice.target.host}${
      choice.target.port === undefined ? "" : `:${choice.target.port}`
    }`;
  return choice.context === undefined ? where : `context "${choice.context}" (${where})`;
}

/** Turns what ssh printed on its way out into one actionable error naming the context and host. */
export function sshFailure(
  choice: ConnectionChoice,
  stderr: string,
  exitCode: number | undefined,
): OperatorError {
  if (choice.target.kind !== "ssh") throw new Error("sshFailure needs an ssh target");
  const { host, user, port } = choice.target;
  const who = describeChoice(choice);
  const details = { context: choice.context, host, ...(port === undefined ? {} : { port }) };
  const lines = stderr.split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("Warning:"));
  const last = lines.at(-1) ?? "";
  const said = (pattern: RegExp): boolean => lines.some((l) => pattern.test(l));
  if (said(/REMOTE HOST IDENTIFICATION HAS CHANGED/i)) {
    return new OperatorError(
      "unauthenticated",
      `Cannot connect to ${who}: the host key of "${host}" changed since it was trusted; ` +
        `if the host was really reinstalled, remove the old key with "ssh-keygen -R ${host}" and trust the new one`,
      details,
    );
  }
  if (said(/Host key verification failed|No .* host key is known/i)) {
    const scan = `ssh-keyscan ${port === undefined ? "" : `-p ${port} `}${host}`;
    return new OperatorError(
      "unauthenticated",
      `Cannot connect to ${who}: the host key of "${host}" is not trusted here; check its fingerprint with ` +
        `"${scan} | ssh-keygen -lf -", then add it to known_hosts ("${scan} >> ~/.ssh/known_hosts")`,
      details,
    );
  }
  if (said(/Permission denied/i)) {
    return new OperatorError(
      "unauthenticated",
      `Cannot connect to ${who}: "${host}" refused the login${
        user === undefined ? "" : ` of user "${user}"`
      } (${last}): check the user and that your key is in its authorized_keys`,
      details,
    );
  }
  if (
    said(
      /Connection refused|Connection timed out|timed out|No route to host|Could not resolve hostname|Network is unreachable|Connection closed by|Connection reset/i,
    ) && exitCode === 255
  ) {
    return new OperatorError(
      "unavailable",
      `Cannot connect to ${who}: "${host}" is unreachable: ${last}`,
      details,
    );
  }
  if (exitCode === 127 || said(/command not found|not found/i)) {
    return new OperatorError(
      "not_found",
      `Cannot connect to ${who}: "ployzd" is not installed on "${host}" (or not on the PATH of the SSH user): ` +
        `install it with "ployz machine add --ssh"`,
      details,
    );
  }
  if (said(/Unknown option "--mux"/)) {
    return new OperatorError(
      "unsupported",
      `Cannot connect to ${who}: ployzd on "${host}" is older than this CLI (it has no "dial-stdio --mux"): ` +
        `upgrade it with "ployz machine upgrade" from a Machine of its Cluster`,
      details,
    );
  }
  if (said(/Cannot connect to the Machine RPC socket/)) {
    return new OperatorError(
      "unavailable",
      `Cannot connect to ${who}: ployzd on "${host}" is not serving: ${
        last.replace(/^error\[[a-z_]+\]: /, "")
      } (is "ployzd serve" running there?)`,
      details,
    );
  }
  return new OperatorError(
    "unavailable",
    `Cannot connect to ${who}: ${last !== "" ? last : `ssh exited with ${exitCode ?? "an unknown status"}`}`,
    details,
  );
}

interface Connection {
  child: Deno.ChildProcess;
  session: MuxSession;
  ready: Promise<void>;
  send: (request: Request) => Promise<Response>;
}

/** Opens a client for `choice`. Nothing connects until the first call; `close()` ends the SSH connection. */
export function openConnection(choice: ConnectionChoice, options: SshConnectOptions = {}): MachineClient {
  const label = describeChoice(choice);
  if (choice.target.kind === "unix") return connectMachine({ socketPath: choice.target.path, label });
  const target = choice.target;
  const destination = target.user === undefined ? target.host : `${target.user}@${target.host}`;
  const sshOptions: SshOptions = {
    configFile: options.configFile,
    connectTimeoutSeconds: options.connectTimeoutSeconds,
    port: target.port,
  };
  const args = sshArgs(
    destination,
    `exec ${shellQuote(options.remoteProgram ?? "ployzd")} dial-stdio --mux`,
    sshOptions,
  );
  let connection: Connection | undefined;
  let closed = false;

  function connect(): Connection {
    if (connection !== undefined) return connection;
    let child: Deno.ChildProcess;
    try {
      child = new Deno.Command(options.sshProgram ?? "ssh", {
        args,
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
    } catch (error) {
      throw new OperatorError(
        "unavailable",
        `Cannot connect to ${label}: cannot run ssh: ${messageOf(error)}`,
        { context: choice.context, host: target.host, sent: false },
      );
    }
    const stderr = new Response(child.stderr).text().catch(() => "");
    const session = muxSession(child.stdout, child.stdin);
    const ready = session.ready.catch(async () => {
      const status = await child.status;
      const failure = sshFailure(choice, await stderr, status.code);
      // Nothing was sent: a Deploy reports this call as failed, not as of unknown outcome.
      failure.details.sent = false;
      throw failure;
    });
    ready.catch(() => {});
    const send = muxFetch(session, `ssh ${destination}`, () => stderr);
    connection = { child, session, ready, send };
    return connection;
  }

  return connectMachine({
    label,
    async fetch(request: Request): Promise<Response> {
      if (closed) {
        throw new OperatorError("unavailable", `Cannot connect to ${label}: the connection is closed`, {
          sent: false,
        });
      }
      const c = connect();
      await c.ready;
      return await c.send(request);
    },
    onClose(): void {
      closed = true;
      const c = connection;
      if (c === undefined) return;
      // Closing stdin ends the bridge and ssh; a bridge that lingers is killed so the command can exit.
      c.session.close().catch(() => {});
      const timer = setTimeout(() => {
        try {
          c.child.kill("SIGTERM");
        } catch {
          // already gone
        }
      }, 2000);
      Deno.unrefTimer(timer);
      c.child.status.then(() => clearTimeout(timer));
    },
  });
}
