// Shared by the ployz commands: the Entry Machine's client (chosen by --connect, --context, PLOYZ_CONTEXT, x-context,
// the current context, or the local socket), the Config Store, and error translation.
import { join } from "node:path";
import { CliError } from "../../lib/cli/mod.ts";
import type { MachineApi } from "../../lib/deploy/mod.ts";
import { sshOptionsFromEnv } from "../../lib/installer/ssh/mod.ts";
import { chooseConnection, type ConnectionChoice, openConnection } from "../../lib/operator/reach/mod.ts";
import { layoutFromEnv } from "../../lib/permissions/mod.ts";
import { type MachineClient, RpcError } from "../../lib/rpc/mod.ts";
import { type ConfigStore, openConfigStore } from "../../lib/store/config/mod.ts";
import { CodedError, messageOf } from "../../lib/util/mod.ts";
import { atCommandEnd, globalFlags } from "./selection.ts";

// The real client must satisfy the slice of Machine RPC the Deploy code is written against.
const _conforms: (client: MachineClient) => MachineApi = (client) => client;

/** `$PLOYZ_RUN_DIR/ployz.sock`, default `/run/ployz/ployz.sock`. */
export function socketPath(): string {
  return join(layoutFromEnv((key) => Deno.env.get(key)).runDir, "ployz.sock");
}

/**
 * The connection this command uses and why: `--connect`, `--context`, `$PLOYZ_CONTEXT`, the Compose file's
 * `x-context` (deploy), the current context, then the local socket.
 */
export function connectionChoice(options: { composeContext?: string } = {}): ConnectionChoice {
  const flags = globalFlags();
  let config: ConfigStore | undefined;
  const store = (): ConfigStore => config ??= openConfig();
  const env = Deno.env.get("PLOYZ_CONTEXT");
  try {
    const needStore = flags.connect === undefined;
    return chooseConnection({
      connectFlag: flags.connect,
      contextFlag: flags.context,
      envContext: env,
      composeContext: options.composeContext,
      currentContext: needStore ? store().currentContext() : undefined,
      lookup: (name) => store().context(name)?.url,
      defaultSocket: socketPath(),
    });
  } catch (error) {
    throw cliError(error);
  } finally {
    config?.close();
  }
}

const CHOICES = new WeakMap<MachineClient, ConnectionChoice>();

/** How an {@link entryMachine} client was chosen. */
export function choiceOf(client: MachineClient): ConnectionChoice | undefined {
  return CHOICES.get(client);
}

/** A client of the Entry Machine this command talks to; released at the latest when the command ends. */
export function entryMachine(options: { composeContext?: string } = {}): MachineClient {
  const choice = connectionChoice(options);
  const client = openConnection(choice, sshOptionsFromEnv((key) => Deno.env.get(key)));
  const close = client.close.bind(client);
  const release = atCommandEnd(close);
  client.close = release;
  CHOICES.set(client, choice);
  return client;
}

/** `$PLOYZ_CONFIG_DIR`, `$XDG_CONFIG_HOME/ployz` or `$HOME/.config/ployz`. */
export function configDir(): string {
  const explicit = Deno.env.get("PLOYZ_CONFIG_DIR");
  if (explicit) return explicit;
  const xdg = Deno.env.get("XDG_CONFIG_HOME");
  if (xdg) return join(xdg, "ployz");
  const home = Deno.env.get("HOME");
  if (!home) {
    throw new CliError("invalid_argument", "Cannot find the config directory: set PLOYZ_CONFIG_DIR or HOME");
  }
  return join(home, ".config", "ployz");
}

/**
 * Opens the operator's Config Store, creating its directory (0700). Disposable: `using config = openConfig()`
 * closes it when the scope ends.
 */
export function openConfig(): ConfigStore & Disposable {
  const store = openConfigStore(join(configDir(), "config.db"));
  return Object.assign(store, { [Symbol.dispose]: () => store.close() });
}

/** Turns what a library throws into a one-line CLI error with its code. */
export function cliError(error: unknown): CliError {
  if (error instanceof CliError) return error;
  // A connection that could not be made says why itself (naming the context and host).
  if (error instanceof RpcError && error.cause instanceof CodedError) return cliError(error.cause);
  if (error instanceof RpcError) {
    const socket = error.details.socket;
    if (error.code === "unavailable" && typeof socket === "string" && error.cause !== undefined) {
      return new CliError(
        "unavailable",
        `Cannot reach ployzd at ${socket.startsWith("context ") ? socket : `"${socket}"`}: ${
          messageOf(error.cause)
        } (is "ployzd serve" running?)`,
        { details: error.details },
      );
    }
    return new CliError(error.code, error.message, { details: error.details });
  }
  if (error instanceof CodedError) return new CliError(error.code, error.message, { details: error.details });
  return new CliError("internal", `Internal error: ${messageOf(error)}`);
}

/** Runs a command body, translating errors and closing the client. */
export async function withMachine<T>(body: (client: MachineClient) => Promise<T>): Promise<T> {
  const client = entryMachine();
  try {
    return await body(client);
  } catch (error) {
    throw cliError(error);
  } finally {
    client.close();
  }
}

/** Parses `PROJECT/SERVICE` (service optional unless `needService`). */
export function parseTarget(text: string, needService: boolean): { project: string; service?: string } {
  const [project, service, extra] = text.split("/");
  if (!project || extra !== undefined || (needService && !service) || service === "") {
    throw new CliError(
      "invalid_argument",
      `Invalid target "${text}": expected ${needService ? "PROJECT/SERVICE" : "PROJECT or PROJECT/SERVICE"}`,
      { exitCode: 2 },
    );
  }
  return service === undefined ? { project } : { project, service };
}

/** Prints JSON as one line. */
export function jsonLine(value: unknown): string {
  return JSON.stringify(value) + "\n";
}
