// `ployz registry login HOST` / `logout HOST`: registry credentials in the operator's Config Store (mode 0600).
// They are read by each Deploy that pulls from HOST and sent only with that Machine's pull request.
import { CliError, type Command } from "../../lib/cli/mod.ts";
import { parseImageRef, registryHost } from "../../lib/deploy/mod.ts";
import { openConfig } from "./connect.ts";
import { stringFlag } from "./flags.ts";

/** The longest password or token read from stdin. */
const MAX_SECRET_BYTES = 16_384;

/** A registry host as people write it: `reg.example:5000`, `docker.io`; refused when it is not a host. */
export function checkRegistryHost(text: string): string {
  const host = registryHost(text);
  const parsed = parseImageRef(`${host}/x`);
  if (host === "" || typeof parsed === "string" || (parsed.domain !== host && host !== "docker.io")) {
    throw new CliError(
      "invalid_argument",
      `Invalid registry host "${text}": expected a host name with an optional port`,
      {
        exitCode: 2,
      },
    );
  }
  return host;
}

async function readSecret(): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of Deno.stdin.readable) {
    size += chunk.length;
    if (size > MAX_SECRET_BYTES) {
      throw new CliError(
        "invalid_argument",
        `The password on stdin is longer than ${MAX_SECRET_BYTES} bytes`,
        {
          exitCode: 2,
        },
      );
    }
    chunks.push(chunk);
  }
  const text = new TextDecoder().decode(new Uint8Array(chunks.flatMap((c) => [...c])));
  return text.replace(/\r?\n$/, "");
}

const loginCommand: Command = {
  name: "login",
  summary: "Save credentials for a registry in this operator's Config Store",
  usage: "HOST --username USER --password-stdin",
  description: [
    "Saves USER and the password (or token) read from stdin for HOST, in the Config Store (mode 0600). A Deploy",
    "that pulls from HOST sends them with that pull request only; Machines never store them. Without a saved",
    "login, a Deploy reads Docker's config.json (auths, credHelpers, credsStore) as docker does.",
  ],
  positionals: [1, 1],
  options: { username: { type: "string", short: "u" }, "password-stdin": { type: "boolean" } },
  async run({ positionals, values, io }): Promise<number> {
    const host = checkRegistryHost(positionals[0]);
    const username = stringFlag(values, "username") ?? "";
    if (username === "" || values["password-stdin"] !== true) {
      throw new CliError(
        "invalid_argument",
        'Give "--username USER" and "--password-stdin" (the password on stdin)',
        {
          exitCode: 2,
        },
      );
    }
    const secret = await readSecret();
    if (secret === "") {
      throw new CliError("invalid_argument", "The password on stdin is empty", { exitCode: 2 });
    }
    using config = openConfig();
    config.saveRegistryCredential({ host, username, secret, savedAt: new Date().toISOString() });
    io.out(`Saved credentials of "${username}" for registry "${host}"\n`);
    return 0;
  },
};

const logoutCommand: Command = {
  name: "logout",
  summary: "Forget the credentials saved for a registry",
  usage: "HOST",
  positionals: [1, 1],
  run({ positionals, io }): Promise<number> {
    const host = checkRegistryHost(positionals[0]);
    using config = openConfig();
    const removed = config.removeRegistryCredential(host);
    io.out(
      removed ? `Forgot the credentials for registry "${host}"\n` : `No credentials saved for "${host}"\n`,
    );
    return Promise.resolve(0);
  },
};

/** `ployz registry`. */
export const registryCommand: Command = {
  name: "registry",
  summary: "Registry credentials on this operator's side",
  subcommands: [loginCommand, logoutCommand],
};
