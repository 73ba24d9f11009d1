// Registry credentials, from the operator's side only: `ployz registry login` (the Config Store, 0600), then
// Docker's config.json the way the docker CLI reads it: `credHelpers` for the host, else `credsStore`, else `auths`.
// A helper is run through the docker-credential-* protocol (`get`, the server URL on stdin, JSON on stdout).
// The answer is handed to the one request that needs it; nothing here writes or logs a secret.
import { join } from "node:path";
import type { RegistryAuth } from "../deploy/mod.ts";
import { registryHost } from "../deploy/mod.ts";
import type { RegistryCredential } from "../store/mod.ts";
import { OperatorError } from "./errors.ts";

/** Where credentials are looked up. */
export interface CredentialSources {
  /** The Config Store's saved credentials by host (`ployz registry login`). */
  saved?: (host: string) => RegistryCredential | undefined;
  /** Docker's config directory; default `$DOCKER_CONFIG`, else `$HOME/.docker`. */
  dockerConfigDir?: string;
  /** How long a credential helper may take; default 10 s. */
  helperTimeoutMs?: number;
}

/** The part of Docker's config.json read here. */
interface DockerConfig {
  auths?: Record<string, { auth?: string; username?: string; password?: string; identitytoken?: string }>;
  credHelpers?: Record<string, string>;
  credsStore?: string;
}

const HELPER_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,63}$/;
/** config.json larger than this is refused. */
const MAX_CONFIG_BYTES = 1 << 20;

function configDir(sources: CredentialSources): string | undefined {
  if (sources.dockerConfigDir !== undefined) return sources.dockerConfigDir;
  const env = Deno.env.get("DOCKER_CONFIG");
  if (env !== undefined && env !== "") return env;
  const home = Deno.env.get("HOME");
  return home === undefined ? undefined : join(home, ".docker");
}

async function readDockerConfig(dir: string): Promise<DockerConfig | undefined> {
  const path = join(dir, "config.json");
  let text: string;
  try {
    const info = await Deno.stat(path);
    if (!info.isFile) return undefined;
    if (info.size > MAX_CONFIG_BYTES) {
      throw new OperatorError("invalid_argument", `Docker config "${path}" is larger than 1 MiB`);
    }
    text = await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.PermissionDenied) {
      return undefined;
    }
    throw error;
  }
  try {
    const parsed = JSON.parse(text);
    return parsed !== null && typeof parsed === "object" ? parsed as DockerConfig : undefined;
  } catch {
    // Never echo the file: it holds secrets.
    throw new OperatorError("invalid_argument", `Docker config "${path}" is not valid JSON`);
  }
}

/** The config.json keys that may name `host` (Docker Hub has several spellings). */
function keysFor(host: string): string[] {
  if (host === "docker.io") {
    return ["https://index.docker.io/v1/", "index.docker.io", "docker.io", "registry-1.docker.io"];
  }
  return [host, `https://${host}`, `http://${host}`, `https://${host}/v1/`, `https://${host}/v2/`];
}

function lookup<T>(table: Record<string, T> | undefined, host: string): T | undefined {
  if (table === undefined) return undefined;
  for (const key of keysFor(host)) if (Object.hasOwn(table, key)) return table[key];
  for (const [key, value] of Object.entries(table)) if (registryHost(key) === host) return value;
  return undefined;
}

/** Runs `docker-credential-<name> get` for `host`; `undefined` when it has nothing for it. */
async function fromHelper(name: string, host: string, timeoutMs: number): Promise<RegistryAuth | undefined> {
  if (!HELPER_NAME.test(name)) {
    throw new OperatorError(
      "invalid_argument",
      `Docker config names credential helper "${name}", not a valid name`,
    );
  }
  const program = `docker-credential-${name}`;
  const server = host === "docker.io" ? "https://index.docker.io/v1/" : host;
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(program, {
      args: ["get"],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(timeoutMs),
    }).spawn();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new OperatorError(
        "not_found",
        `Credential helper "${program}" for registry "${host}" is not installed`,
      );
    }
    throw new OperatorError(
      "unavailable",
      `Credential helper "${program}" for registry "${host}" cannot be started`,
    );
  }
  const writer = child.stdin.getWriter();
  try {
    await writer.write(new TextEncoder().encode(server));
    await writer.close();
  } catch {
    // A helper may exit without reading its input; its exit status says what happened.
  }
  let output: Deno.CommandOutput;
  try {
    output = await child.output();
  } catch {
    throw new OperatorError(
      "unavailable",
      `Credential helper "${program}" for registry "${host}" did not answer within ${timeoutMs} ms`,
    );
  }
  if (output.signal !== null) {
    throw new OperatorError(
      "unavailable",
      `Credential helper "${program}" for registry "${host}" did not answer within ${timeoutMs} ms`,
    );
  }
  if (!output.success) {
    // "credentials not found in native keychain" is the protocol's way to say "none".
    const said = new TextDecoder().decode(output.stderr).trim() +
      new TextDecoder().decode(output.stdout).trim();
    if (/not found/i.test(said)) return undefined;
    throw new OperatorError(
      "unavailable",
      `Credential helper "${program}" for registry "${host}" failed (exit ${output.code})`,
    );
  }
  let answer: { Username?: unknown; Secret?: unknown };
  try {
    answer = JSON.parse(new TextDecoder().decode(output.stdout));
  } catch {
    throw new OperatorError(
      "unavailable",
      `Credential helper "${program}" answered something other than JSON`,
    );
  }
  if (typeof answer.Secret !== "string" || answer.Secret === "") return undefined;
  // The protocol marks an identity token with the user name "<token>".
  if (answer.Username === "<token>") return { identitytoken: answer.Secret, serveraddress: host };
  return {
    username: typeof answer.Username === "string" ? answer.Username : "",
    password: answer.Secret,
    serveraddress: host,
  };
}

function fromAuths(
  entry: NonNullable<DockerConfig["auths"]>[string] | undefined,
  host: string,
): RegistryAuth | undefined {
  if (typeof entry?.identitytoken === "string" && entry.identitytoken !== "") {
    return { identitytoken: entry.identitytoken, serveraddress: host };
  }
  if (typeof entry?.auth === "string" && entry.auth !== "") {
    let decoded: string;
    try {
      decoded = atob(entry.auth);
    } catch {
      throw new OperatorError(
        "invalid_argument",
        `Docker config's "auths" entry for "${host}" is not base64`,
      );
    }
    const colon = decoded.indexOf(":");
    if (colon < 0) {
      throw new OperatorError(
        "invalid_argument",
        `Docker config's "auths" entry for "${host}" is not "user:password"`,
      );
    }
    return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1), serveraddress: host };
  }
  if (typeof entry?.username === "string" && typeof entry.password === "string") {
    return { username: entry.username, password: entry.password, serveraddress: host };
  }
  return undefined;
}

/**
 * The credentials for registry `host`, or `undefined` to pull anonymously. Looks in the Config Store first, then
 * Docker's config.json. Errors name the host and the source, never a secret.
 */
export async function credentialsFor(
  host: string,
  sources: CredentialSources = {},
): Promise<RegistryAuth | undefined> {
  const saved = sources.saved?.(host);
  if (saved !== undefined) return { username: saved.username, password: saved.secret, serveraddress: host };
  const dir = configDir(sources);
  if (dir === undefined) return undefined;
  const config = await readDockerConfig(dir);
  if (config === undefined) return undefined;
  const timeoutMs = sources.helperTimeoutMs ?? 10_000;
  const helper = lookup(config.credHelpers, host);
  if (typeof helper === "string") return await fromHelper(helper, host, timeoutMs);
  if (typeof config.credsStore === "string" && config.credsStore !== "") {
    const stored = await fromHelper(config.credsStore, host, timeoutMs);
    if (stored !== undefined) return stored;
  }
  return fromAuths(lookup(config.auths, host), host);
}

/** A per-Deploy cache of {@linkcode credentialsFor}: each host is looked up once, in memory only. */
export function credentialCache(
  sources: CredentialSources,
): (host: string) => Promise<RegistryAuth | undefined> {
  const cache = new Map<string, Promise<RegistryAuth | undefined>>();
  return (host) => {
    let found = cache.get(host);
    if (found === undefined) {
      found = credentialsFor(host, sources);
      cache.set(host, found);
    }
    return found;
  };
}
