// Shared by the ployz commands: the local Machine's socket, its client, the Config Store, and error translation.
import { join } from "node:path";
import { CliError } from "../../lib/cli/mod.ts";
import type { MachineApi } from "../../lib/deploy/mod.ts";
import { layoutFromEnv } from "../../lib/permissions/mod.ts";
import { connectMachine, type MachineClient, RpcError } from "../../lib/rpc/mod.ts";
import { type ConfigStore, openConfigStore } from "../../lib/store/mod.ts";
import { CodedError } from "../../lib/util/mod.ts";

// The real client must satisfy the slice of Machine RPC the Deploy code is written against.
const _conforms: (client: MachineClient) => MachineApi = (client) => client;

/** `$PLOYZ_RUN_DIR/ployz.sock`, default `/run/ployz/ployz.sock`. */
export function socketPath(): string {
  return join(layoutFromEnv((key) => Deno.env.get(key)).runDir, "ployz.sock");
}

/** A client of the local Machine's daemon. */
export function localMachine(): MachineClient {
  return connectMachine({ socketPath: socketPath() });
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

/** Opens the operator's Config Store, creating its directory (0700). */
export function openConfig(): ConfigStore {
  return openConfigStore(join(configDir(), "config.db"));
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Turns what a library throws into a one-line CLI error with its code. */
export function cliError(error: unknown): CliError {
  if (error instanceof CliError) return error;
  if (error instanceof RpcError) {
    const socket = error.details.socket;
    if (error.code === "unavailable" && typeof socket === "string" && error.cause !== undefined) {
      return new CliError(
        "unavailable",
        `Cannot reach ployzd at "${socket}": ${messageOf(error.cause)} (is "ployzd serve" running?)`,
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
  const client = localMachine();
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
