/**
 * Loads a Compose file into a {@linkcode NormalizedProject}: YAML syntax, interpolation, key checks, every
 * service, volumes and the Ployz `x-` extensions. Every problem in the file is collected before failing.
 *
 * @module
 */

import { basename, dirname, resolve as resolvePath } from "node:path";
import { type Node } from "yaml";
import { type FileContents, readFileSources } from "./files.ts";
import { mergeNodes } from "./merge.ts";
import { ComposeError, type ComposeIssue } from "./issue.ts";
import { checkMapping, TOP_LEVEL_KEYS } from "./keys.ts";
import { MAX_SERVICES } from "./limits.ts";
import { dnsLabelProblem, projectNameFromDirectory } from "./names.ts";
import { type Entry, isMapping, Reader, sorted, TooComplex } from "./reader.ts";
import { readService } from "./service.ts";
import type { ServiceScope } from "./service_scope.ts";
import type { NormalizedProject, NormalizedService } from "./types.ts";
import {
  addIncluded,
  checkDocument,
  defaultReadFile,
  issue,
  MAX_FILES,
  parseFile,
  readIncludes,
} from "./documents.ts";
import { applyProfiles, checkCompletions, checkCycles } from "./project_rules.ts";
import { readVolumes } from "./volumes.ts";

/** Input to {@linkcode loadCompose}. */
export interface LoadComposeOptions {
  /** Path of the compose file: read when `text` is absent, named in every issue, base of relative paths. */
  path?: string;
  /**
   * Several compose files merged in order, as `-f a.yaml -f b.yaml` (`text`, when given, is the first one's);
   * relative paths resolve against the first one's directory.
   */
  files?: readonly string[];
  /** The file's text, when the caller already has it. */
  text?: string;
  /** Project name from the command line or `COMPOSE_PROJECT_NAME`; wins over `name:` and the directory. */
  projectName?: string;
  /** Variables for interpolation: the process environment merged with the `.env` beside the file. */
  env: Readonly<Record<string, string>>;
  /**
   * Reads a file as text (compose file, env_file, x-caddy file); defaults to a read of regular files of at most
   * {@linkcode MAX_FILE_BYTES}.
   */
  readFile?: (path: string) => string;
  /** Directory relative paths resolve against when `path` is not given; defaults to the current one. */
  workingDir?: string;
  /** Enabled Compose profiles (`--profile`, `COMPOSE_PROFILES`); `*` enables every one. */
  profiles?: readonly string[];
}

/** A loaded Project and the warnings met on the way (the library never prints them). */
export interface LoadedCompose {
  /** The loaded Project. */
  project: NormalizedProject;
  /** Keys ignored, variables unset and similar; in file order. */
  warnings: ComposeIssue[];
  /**
   * The content of every secret, config and relative bind the Project ships, by digest. It goes to a Machine
   * only with the create request of a container that mounts it; it is never saved.
   */
  files: FileContents;
}

/**
 * Loads and validates a Compose file, or several merged as `docker compose -f a -f b` merges them, with their
 * `include`s. Throws a {@linkcode ComposeError} listing every problem when the Project cannot be deployed as
 * written.
 */
export function loadCompose(options: LoadComposeOptions): LoadedCompose {
  const paths = options.files !== undefined && options.files.length > 0
    ? options.files
    : [options.path ?? "compose.yaml"];
  const file = paths[0];
  const readFile = options.readFile ?? defaultReadFile;
  if (options.text === undefined && options.path === undefined && options.files === undefined) {
    throw new ComposeError(file, [issue(file, "either a path or the file's text is required")]);
  }
  if (paths.length > MAX_FILES) {
    throw new ComposeError(file, [
      issue(file, `${paths.length} compose files, more than the limit of ${MAX_FILES}`),
    ]);
  }
  // Relative paths resolve against the first file's directory, as Compose's project directory.
  const baseDir = options.path !== undefined || options.files !== undefined
    ? dirname(file)
    : options.workingDir ?? ".";
  const parsed = paths.map((path, index) =>
    parseFile(path, index === 0 ? options.text : undefined, readFile)
  );
  const main = parsed[0];
  const reader = new Reader(file, main.doc, main.lineCounter);
  let project: NormalizedProject | undefined;
  const files: FileContents = new Map();
  try {
    let duplicates = 0;
    for (const part of parsed) duplicates += checkDocument(reader, options.env, part);
    const included = readIncludes(reader, parsed, options.env, readFile);
    for (const part of included) duplicates += checkDocument(reader, options.env, part);
    // Duplicate keys make the document ambiguous: nothing after them would be trustworthy.
    if (duplicates > 0) throw new ComposeError(file, ordered(reader.errors));
    let root = main.doc.contents as Node | null;
    for (const part of parsed.slice(1)) root = mergeNodes(reader, "", root, part.doc.contents as Node | null);
    for (const part of included) addIncluded(reader, root, part);
    main.doc.contents = root as typeof main.doc.contents;
    project = readProject(reader, options, baseDir, readFile, files);
  } catch (error) {
    if (!(error instanceof TooComplex)) throw error;
    reader.fail(error.node, "", error.message);
    throw new ComposeError(file, ordered(reader.errors));
  }
  if (reader.errors.length > 0 || project === undefined) throw new ComposeError(file, ordered(reader.errors));
  return { project, warnings: ordered(reader.warnings), files };
}

/** Keeps the first file's issues first, then orders by line and column within each file. */
function ordered(list: ComposeIssue[]): ComposeIssue[] {
  const files = [...new Set(list.map((item) => item.file))];
  return [...list].sort((a, b) =>
    files.indexOf(a.file) - files.indexOf(b.file) || a.line - b.line || a.column - b.column
  );
}

function readProject(
  reader: Reader,
  options: LoadComposeOptions,
  baseDir: string,
  readFile: (path: string) => string,
  contents: FileContents,
): NormalizedProject | undefined {
  const root = reader.doc.contents as Node | null;
  if (root === null || !isMapping(root)) {
    reader.fail(root, "", 'expected a mapping with a "services" key at the top level');
    return undefined;
  }
  const keys = checkMapping(reader, root, "", TOP_LEVEL_KEYS, { where: "the top level" });
  const name = projectName(reader, options, keys.get("name"), baseDir);
  const volumes = readVolumes(
    reader,
    keys.get("volumes"),
    rootEntry(root, reader, "x-volumes"),
    name ?? "project",
  );
  const networks = keys.get("networks");
  if (networks !== undefined && networks.value !== null) {
    const declared = (reader.entries(networks.value, networks.path) ?? []).filter((entry) =>
      entry.key !== "default"
    );
    if (declared.length > 0) {
      reader.warn(
        networks.keyNode,
        networks.path,
        `key "networks" is not supported by Ployz and is ignored: every container joins its Machine's Ployz network`,
      );
    }
  }
  // Top-level `secrets:` and `configs:` declare file sources the same way.
  const sources = (key: "secrets" | "configs", kind: "secret" | "config") =>
    readFileSources(reader, keys.get(key)?.value ?? null, key, kind, baseDir, options.env);
  const secrets = sources("secrets", "secret");
  const configs = sources("configs", "config");
  const contextEntry = rootEntry(root, reader, "x-context");
  const context = contextEntry === undefined || contextEntry.value === null
    ? null
    : reader.text(contextEntry.value, contextEntry.path) ?? null;

  const servicesEntry = keys.get("services");
  const serviceEntries = servicesEntry === undefined
    ? []
    : reader.entries(servicesEntry.value, servicesEntry.path) ?? [];
  if (serviceEntries.length === 0 && (servicesEntry === undefined || servicesEntry.value === null)) {
    reader.fail(servicesEntry?.keyNode ?? root, "services", "no services defined");
  }
  if (serviceEntries.length > MAX_SERVICES) {
    reader.fail(
      servicesEntry?.keyNode,
      "services",
      `${serviceEntries.length} services defined, more than the limit of ${MAX_SERVICES}`,
    );
    return undefined;
  }
  const scope: ServiceScope = {
    reader,
    env: options.env,
    baseDir,
    readFile,
    volumes: new Set(Object.keys(volumes)),
    services: new Set(serviceEntries.map((entry) => entry.key)),
    dependencies: new Map(),
    secrets,
    configs,
    contents,
    project: name,
  };
  const services: Record<string, NormalizedService> = {};
  for (const entry of serviceEntries) {
    const problem = dnsLabelProblem("service", entry.key);
    if (problem !== undefined) {
      reader.fail(entry.keyNode, entry.path, problem);
      continue;
    }
    const dir = reader.serviceDirs.get(entry.keyNode);
    const service = readService(
      dir === undefined ? scope : { ...scope, baseDir: dir },
      entry.key,
      entry.keyNode,
      entry.value,
      entry.path,
    );
    if (service !== undefined) services[entry.key] = service;
  }
  checkCycles(reader, serviceEntries, scope.dependencies);
  const profiledOut = applyProfiles(reader, serviceEntries, services, options.profiles ?? []);
  checkCompletions(reader, serviceEntries, services);
  if (name === undefined) return undefined;
  return { name, context, services: sorted(services), volumes, profiledOut };
}

function rootEntry(root: Node, reader: Reader, key: string): Entry | undefined {
  return (reader.entries(root, "") ?? []).find((entry) => entry.key === key);
}

function projectName(
  reader: Reader,
  options: LoadComposeOptions,
  entry: Entry | undefined,
  baseDir: string,
): string | undefined {
  if (options.projectName !== undefined) {
    const problem = dnsLabelProblem("project", options.projectName);
    if (problem === undefined) return options.projectName;
    reader.errors.push({
      file: reader.file,
      line: 0,
      column: 0,
      path: "",
      message: `${problem} (from the command line)`,
    });
    return undefined;
  }
  if (entry !== undefined && entry.value !== null) {
    const name = reader.text(entry.value, entry.path);
    if (name === undefined) return undefined;
    const problem = dnsLabelProblem("project", name);
    if (problem === undefined) return name;
    reader.fail(entry.value, entry.path, problem);
    return undefined;
  }
  const directory = basename(resolvePath(baseDir));
  const derived = projectNameFromDirectory(directory);
  const problem = dnsLabelProblem("project", derived);
  if (problem === undefined) return derived;
  reader.errors.push({
    file: reader.file,
    line: 0,
    column: 0,
    path: "",
    message:
      `${problem} (derived from the directory "${directory}"): set "name" in the file or pass a project name`,
  });
  return undefined;
}
