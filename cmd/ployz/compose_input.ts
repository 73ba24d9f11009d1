// The Compose input shared by `ployz deploy` and `ployz config`: which files (`-f`, `COMPOSE_FILE`, or the names
// `docker compose` looks for), which variables (`--env-file` or the `.env` beside the first file, under the process
// environment), which profiles (`--profile`, `COMPOSE_PROFILES`) and which Project name.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import type { ParseArgsOptionsConfig } from "node:util";
import { CliError } from "../../lib/cli/mod.ts";
import { loadCompose, type LoadedCompose, parseEnvFile, readBoundedFile } from "../../lib/deploy/mod.ts";
import { cliError } from "./connect.ts";

/** The options every command reading a Compose file takes. */
export const COMPOSE_OPTIONS: ParseArgsOptionsConfig = {
  file: { type: "string", short: "f", multiple: true },
  project: { type: "string", short: "p" },
  profile: { type: "string", multiple: true },
  "env-file": { type: "string", multiple: true },
};

/** The usage text of {@link COMPOSE_OPTIONS}. */
export const COMPOSE_USAGE = "[-f compose.yaml ...] [-p PROJECT] [--profile NAME ...] [--env-file FILE ...]";

/** The file names `docker compose` looks for when none is given, in its order. */
const DEFAULT_NAMES = ["compose.yaml", "compose.yml", "docker-compose.yaml", "docker-compose.yml"];

function processEnv(): Record<string, string> {
  try {
    return Deno.env.toObject();
  } catch {
    // Under a narrower permission set only some variables are readable.
    return {};
  }
}

function list(value: unknown): string[] {
  const items = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return items.map(String);
}

function envFile(path: string, env: Record<string, string>, required: boolean): Record<string, string> {
  let text: string;
  try {
    text = readBoundedFile(path);
  } catch (error) {
    if (!required && error instanceof Deno.errors.NotFound) return {};
    if (!required && (error as { code?: string }).code === "ENOENT") return {};
    throw new CliError("invalid_argument", `Cannot read env file "${path}": ${(error as Error).message}`);
  }
  const parsed = parseEnvFile(text, env);
  const [problem] = parsed.problems;
  if (problem !== undefined) {
    throw new CliError("invalid_argument", `${path}:${problem.line}: ${problem.message}`);
  }
  return parsed.vars;
}

/** The Compose files, variables, profiles and Project name the options and environment select. */
export interface ComposeInput {
  /** The compose files, in merge order. */
  files: string[];
  /** Interpolation variables. */
  env: Record<string, string>;
  /** Enabled profiles. */
  profiles: string[];
  /** Project name from `-p` or `COMPOSE_PROJECT_NAME`. */
  projectName?: string;
}

/** Works out the {@link ComposeInput} of a command's parsed options. */
export function composeInput(values: Record<string, unknown>): ComposeInput {
  const process = processEnv();
  const explicit = list(values.file);
  const fromEnv = process.COMPOSE_FILE?.split(":").filter((item) => item !== "") ?? [];
  const files = explicit.length > 0
    ? explicit
    : fromEnv.length > 0
    ? fromEnv
    : [DEFAULT_NAMES.find((name) => existsSync(name)) ?? "compose.yaml"];
  // Variables of --env-file (or the .env beside the first file) under the process environment, as Compose does.
  const envFiles = list(values["env-file"]);
  const fileVars: Record<string, string> = {};
  if (envFiles.length > 0) {
    for (const path of envFiles) Object.assign(fileVars, envFile(path, { ...fileVars, ...process }, true));
  } else {
    Object.assign(fileVars, envFile(join(dirname(files[0]), ".env"), process, false));
  }
  const env = { ...fileVars, ...process };
  const profiles = [
    ...list(values.profile),
    ...(env.COMPOSE_PROFILES ?? "").split(","),
  ].map((item) => item.trim()).filter((item) => item !== "");
  const projectName = values.project as string | undefined ?? (env.COMPOSE_PROJECT_NAME || undefined);
  return { files, env, profiles: [...new Set(profiles)], projectName };
}

/** Loads the Project the options select; a Compose problem becomes a CLI error listing every issue. */
export function loadComposeInput(
  values: Record<string, unknown>,
): { input: ComposeInput; loaded: LoadedCompose } {
  try {
    const input = composeInput(values);
    const loaded = loadCompose({
      files: input.files,
      projectName: input.projectName,
      env: input.env,
      profiles: input.profiles,
    });
    return { input, loaded };
  } catch (error) {
    throw cliError(error);
  }
}
