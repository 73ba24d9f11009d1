/**
 * Loads a Compose file into a {@linkcode NormalizedProject}: YAML syntax, interpolation, key checks, every
 * service, volumes and the Ployz `x-` extensions. Every problem in the file is collected before failing.
 *
 * @module
 */

import { basename, dirname, isAbsolute, join, resolve as resolvePath } from "node:path";
import {
  type Document,
  isAlias,
  isMap,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  type Node,
  Pair,
  parseDocument,
  YAMLMap,
} from "yaml";
import { type FileContents, readFileSources } from "./files.ts";
import { mergeNodes } from "./merge.ts";
import { interpolate } from "./interpolate.ts";
import { ComposeError, type ComposeIssue } from "./issue.ts";
import { checkKeys, TOP_LEVEL_KEYS, VOLUME_KEYS, X_VOLUME_KEYS } from "./keys.ts";
import {
  MAX_COMPOSE_BYTES,
  MAX_FILE_BYTES,
  MAX_SERVICES,
  MAX_UNSET_WARNINGS,
  oversize,
  readBoundedFile,
} from "./limits.ts";
import { dnsLabelProblem, dockerNameProblem, projectNameFromDirectory, volumeNameProblem } from "./names.ts";
import {
  boolean,
  child,
  entries,
  type Entry,
  fail,
  isMapping,
  keyValues,
  type Reader,
  sorted,
  text,
  TooComplex,
  warn,
} from "./reader.ts";
import { readService } from "./service.ts";
import type { ServiceScope } from "./service_scope.ts";
import { fileErrorReason, readBytes, readLabels } from "./service_fields.ts";
import type { NormalizedProject, NormalizedService, NormalizedVolume } from "./types.ts";

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

function defaultReadFile(path: string): string {
  return readBoundedFile(path, MAX_FILE_BYTES);
}

/** One parsed file of a `-f` list or an `include`. */
interface ParsedFile {
  file: string;
  text: string;
  doc: Document;
  lineCounter: LineCounter;
}

/** Most files one Project may be loaded from, `-f` files and includes together. */
const MAX_FILES = 32;

function parseFile(file: string, text: string | undefined, readFile: (path: string) => string): ParsedFile {
  let source = text;
  if (source === undefined) {
    try {
      source = readFile(file);
    } catch (error) {
      throw new ComposeError(file, [issue(file, `cannot read compose file: ${fileErrorReason(error)}`)]);
    }
  }
  const size = oversize(source, MAX_COMPOSE_BYTES);
  if (size !== undefined) {
    throw new ComposeError(file, [
      issue(file, `the compose file is ${size} bytes, more than the limit of ${MAX_COMPOSE_BYTES}`),
    ]);
  }
  const lineCounter = new LineCounter();
  // Duplicate keys are found below in one pass: the library's own check compares every pair of keys.
  const doc = parseDocument(source, { lineCounter, merge: true, prettyErrors: false, uniqueKeys: false });
  if (doc.errors.length > 0) {
    throw new ComposeError(
      file,
      doc.errors.map((error) => {
        const { line, col } = lineCounter.linePos(error.pos[0]);
        return { file, line, column: col, path: "", message: yamlMessage(error.code, error.message) };
      }),
    );
  }
  return { file, text: source, doc, lineCounter };
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
  const reader: Reader = {
    file,
    text: main.text,
    doc: main.doc,
    lineCounter: main.lineCounter,
    errors: [],
    warnings: [],
    origins: new Map(),
    serviceDirs: new Map(),
  };
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
    fail(reader, error.node, "", error.message);
    throw new ComposeError(file, ordered(reader.errors));
  }
  if (reader.errors.length > 0 || project === undefined) throw new ComposeError(file, ordered(reader.errors));
  return { project, warnings: ordered(reader.warnings), files };
}

/** The files named by `include:` in `parts` and, in turn, in those files, each parsed once. */
function readIncludes(
  reader: Reader,
  parts: ParsedFile[],
  env: Readonly<Record<string, string>>,
  readFile: (path: string) => string,
): ParsedFile[] {
  const out: ParsedFile[] = [];
  const seen = new Set(parts.map((part) => resolvePath(part.file)));
  const queue = [...parts];
  while (queue.length > 0) {
    const part = queue.shift()!;
    const root = part.doc.contents as Node | null;
    if (!isMap(root)) continue;
    const pair = root.items.find((item) => isScalar(item.key) && item.key.value === "include");
    if (pair === undefined || pair.value === null) continue;
    const list = isSeq(pair.value) ? pair.value.items : [pair.value];
    list.forEach((item, index) => {
      const where = `include[${index}]`;
      let target: unknown = item;
      if (isMap(item)) {
        const path = item.items.find((entry) => isScalar(entry.key) && entry.key.value === "path");
        target = path?.value;
        for (const entry of item.items) {
          const name = isScalar(entry.key) ? String(entry.key.value) : "?";
          if (name !== "path") {
            fail(reader, entry.key as Node, `${where}.${name}`, `key "${name}" in include is not supported`);
          }
        }
      }
      if (!isScalar(target) || typeof target.value !== "string") {
        fail(reader, item as Node, where, `expected a path to a compose file`);
        return;
      }
      const path = isAbsolute(target.value) ? target.value : join(dirname(part.file), target.value);
      if (seen.has(resolvePath(path))) {
        fail(reader, target, where, `"${target.value}" is already part of this Project: an include cycle`);
        return;
      }
      if (seen.size >= MAX_FILES) {
        fail(reader, target, where, `more than ${MAX_FILES} compose files`);
        return;
      }
      seen.add(resolvePath(path));
      try {
        const loaded = parseFile(path, undefined, readFile);
        out.push(loaded);
        queue.push(loaded);
      } catch (error) {
        if (!(error instanceof ComposeError)) throw error;
        for (const problem of error.issues) {
          if (problem.line > 0) reader.errors.push(problem);
          else {fail(
              reader,
              target,
              where,
              problem.message.replace(/^cannot read compose file/, `cannot read "${target.value}"`),
            );}
        }
      }
    });
  }
  void env;
  return out;
}

/**
 * Adds an included file's resources to the Project. Compose refuses a resource defined both by a file and by what
 * it includes; so does this.
 */
function addIncluded(reader: Reader, root: Node | null, part: ParsedFile): void {
  const included = part.doc.contents as Node | null;
  if (!isMap(root) || !isMap(included)) return;
  for (const section of ["services", "volumes", "secrets", "configs", "networks"]) {
    const from = included.items.find((item) => isScalar(item.key) && item.key.value === section);
    if (from === undefined || !isMap(from.value)) continue;
    let into = root.items.find((item) => isScalar(item.key) && item.key.value === section);
    if (into === undefined || !isMap(into.value)) {
      into = new Pair(from.key, new YAMLMap());
      root.items.push(into);
    }
    const target = into.value as YAMLMap;
    for (const pair of from.value.items) {
      const name = isScalar(pair.key) ? String(pair.key.value) : "?";
      const clash = target.items.find((item) => isScalar(item.key) && String(item.key.value) === name);
      if (clash !== undefined) {
        fail(
          reader,
          pair.key as Node,
          `${section}.${name}`,
          `${section.replace(/s$/, "")} "${name}" is defined both here and in "${
            reader.origins?.get(clash.key)?.file ?? reader.file
          }"`,
        );
        continue;
      }
      // An included file's relative paths resolve against its own directory.
      if (section === "services") reader.serviceDirs?.set(pair.key, dirname(part.file));
      target.items.push(pair);
    }
  }
}

function issue(file: string, message: string): ComposeIssue {
  return { file, line: 0, column: 0, path: "", message };
}

function yamlMessage(code: string, message: string): string {
  const text = message.replace(/ at line \d+, column \d+.*$/s, "");
  const sentence = text.charAt(0).toUpperCase() + text.slice(1);
  return code === "DUPLICATE_KEY"
    ? "Duplicate key: map keys must be unique"
    : `Invalid YAML: ${sentence.replace(/\.$/, "")}`;
}

/** Keeps the first file's issues first, then orders by line and column within each file. */
function ordered(list: ComposeIssue[]): ComposeIssue[] {
  const files = [...new Set(list.map((item) => item.file))];
  return [...list].sort((a, b) =>
    files.indexOf(a.file) - files.indexOf(b.file) || a.line - b.line || a.column - b.column
  );
}

/**
 * One pass over the document, without following aliases: refuses duplicate keys and interpolates every scalar
 * value (never keys) once, in place. Iterative, so a deeply nested document cannot exhaust the stack.
 */
function checkDocument(reader: Reader, env: Readonly<Record<string, string>>, part: ParsedFile): number {
  let duplicates = 0;
  // Nodes of the first file are located by the reader itself; those of any other file remember theirs.
  const origin = part.file === reader.file && part.doc === reader.doc
    ? undefined
    : { file: part.file, lineCounter: part.lineCounter };
  const warned = new Set<string>();
  let unwarned = 0;
  let firstUnwarned: { node: Node; path: string } | undefined;
  const stack: { node: unknown; path: string }[] = [{ node: part.doc.contents, path: "" }];
  // Aliases are resolved here, once, in document order: the library's own lookup walks the whole document
  // for every alias.
  const anchors = new Map<string, Node>();
  reader.aliases = new Map();
  while (stack.length > 0) {
    const { node, path } = stack.pop()!;
    if (origin !== undefined && node !== null && typeof node === "object") reader.origins!.set(node, origin);
    const anchor = (node as { anchor?: unknown } | null)?.anchor;
    if (typeof anchor === "string") anchors.set(anchor, node as Node);
    if (isAlias(node)) {
      const target = anchors.get(node.source);
      if (target !== undefined) reader.aliases.set(node, target);
    } else if (isMap(node)) {
      const keys = new Set<string>();
      const children: { node: unknown; path: string }[] = [];
      for (const pair of node.items) {
        if (!isPair(pair)) continue;
        const keyNode = pair.key as Node | null;
        if (origin !== undefined && keyNode !== null) reader.origins!.set(keyNode, origin);
        const merge = isScalar(keyNode) && (typeof keyNode.value === "symbol" || keyNode.source === "<<");
        const key = !isScalar(keyNode) ? "?" : merge ? "<<" : String(keyNode.value);
        if (isScalar(keyNode) && !merge) {
          if (keys.has(key)) {
            duplicates++;
            fail(reader, keyNode, childPath(path, key), "Duplicate key: map keys must be unique");
          }
          keys.add(key);
        }
        children.push({ node: pair.value, path: childPath(path, key) });
      }
      // Pushed last-first so values are interpolated, and unset variables warned about, in file order.
      for (let index = children.length - 1; index >= 0; index--) stack.push(children[index]);
    } else if (isSeq(node)) {
      for (let index = node.items.length - 1; index >= 0; index--) {
        stack.push({ node: node.items[index], path: `${path}[${index}]` });
      }
    } else if (isScalar(node) && typeof node.value === "string") {
      const result = interpolate(node.value, env);
      if (!result.ok) {
        fail(reader, node, path, result.error);
        continue;
      }
      for (const name of result.unset) {
        if (warned.has(name)) continue;
        warned.add(name);
        if (warned.size > MAX_UNSET_WARNINGS) {
          unwarned++;
          firstUnwarned ??= { node, path };
          continue;
        }
        warn(reader, node, path, `variable "${name}" is not set: using an empty string`);
      }
      node.value = result.value;
    }
  }
  if (unwarned > 0 && firstUnwarned !== undefined) {
    warn(
      reader,
      firstUnwarned.node,
      firstUnwarned.path,
      `${unwarned} more variables are not set: using empty strings`,
    );
  }
  return duplicates;
}

function childPath(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
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
    fail(reader, root, "", 'expected a mapping with a "services" key at the top level');
    return undefined;
  }
  const keys = checkKeys(reader, entries(reader, root, "") ?? [], TOP_LEVEL_KEYS, { where: "the top level" });
  const name = projectName(reader, options, keys.get("name"), baseDir);
  const volumes = readVolumes(
    reader,
    keys.get("volumes"),
    rootEntry(root, reader, "x-volumes"),
    name ?? "project",
  );
  const networks = keys.get("networks");
  if (networks !== undefined && networks.value !== null) {
    const declared = (entries(reader, networks.value, networks.path) ?? []).filter((entry) =>
      entry.key !== "default"
    );
    if (declared.length > 0) {
      warn(
        reader,
        networks.keyNode,
        networks.path,
        `key "networks" is not supported by Ployz and is ignored: every container joins its Machine's Ployz network`,
      );
    }
  }
  const secretsEntry = keys.get("secrets");
  const secrets = readFileSources(
    reader,
    secretsEntry?.value ?? null,
    "secrets",
    "secret",
    baseDir,
    options.env,
  );
  const configsEntry = keys.get("configs");
  const configs = readFileSources(
    reader,
    configsEntry?.value ?? null,
    "configs",
    "config",
    baseDir,
    options.env,
  );
  const contextEntry = rootEntry(root, reader, "x-context");
  const context = contextEntry === undefined || contextEntry.value === null
    ? null
    : text(reader, contextEntry.value, contextEntry.path) ?? null;

  const servicesEntry = keys.get("services");
  const serviceEntries = servicesEntry === undefined
    ? []
    : entries(reader, servicesEntry.value, servicesEntry.path) ?? [];
  if (serviceEntries.length === 0 && (servicesEntry === undefined || servicesEntry.value === null)) {
    fail(reader, servicesEntry?.keyNode ?? root, "services", "no services defined");
  }
  if (serviceEntries.length > MAX_SERVICES) {
    fail(
      reader,
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
      fail(reader, entry.keyNode, entry.path, problem);
      continue;
    }
    const dir = reader.serviceDirs?.get(entry.keyNode);
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
  return (entries(reader, root, "") ?? []).find((entry) => entry.key === key);
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
    const name = text(reader, entry.value, entry.path);
    if (name === undefined) return undefined;
    const problem = dnsLabelProblem("project", name);
    if (problem === undefined) return name;
    fail(reader, entry.value, entry.path, problem);
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

function readVolumes(
  reader: Reader,
  entry: Entry | undefined,
  extension: Entry | undefined,
  project: string,
): Record<string, NormalizedVolume> {
  const out: Record<string, NormalizedVolume> = {};
  for (const volume of entry === undefined ? [] : entries(reader, entry.value, entry.path) ?? []) {
    const problem = volumeNameProblem(volume.key);
    if (problem !== undefined) {
      fail(reader, volume.keyNode, volume.path, problem);
      continue;
    }
    const keys = checkKeys(reader, entries(reader, volume.value, volume.path) ?? [], VOLUME_KEYS, {
      where: "a volume",
    });
    const externalEntry = keys.get("external");
    let external = false;
    let externalName: string | undefined;
    if (externalEntry !== undefined && externalEntry.value !== null) {
      if (isMapping(externalEntry.value)) {
        external = true;
        const legacy = (entries(reader, externalEntry.value, externalEntry.path) ?? []).find((item) =>
          item.key === "name"
        );
        if (legacy !== undefined) externalName = text(reader, legacy.value, legacy.path);
      } else {
        external = boolean(reader, externalEntry.value, externalEntry.path) ?? false;
      }
    }
    const nameEntry = keys.get("name");
    const declaredName = nameEntry === undefined || nameEntry.value === null
      ? undefined
      : text(reader, nameEntry.value, nameEntry.path);
    if (external) {
      externalName = declaredName ?? externalName ?? volume.key;
      const nameProblem = dockerNameProblem("external volume", externalName);
      if (nameProblem !== undefined) {
        fail(reader, nameEntry?.value ?? volume.keyNode, nameEntry?.path ?? volume.path, nameProblem);
      }
    } else if (declaredName !== undefined && declaredName !== "") {
      warn(
        reader,
        nameEntry?.keyNode,
        nameEntry?.path ?? volume.path,
        `key "name" is ignored for a Project volume: Ployz names it "${project}_${volume.key}"`,
      );
    }
    const driverEntry = keys.get("driver");
    const driver = driverEntry === undefined || driverEntry.value === null
      ? null
      : text(reader, driverEntry.value, driverEntry.path) ?? null;
    const optionsEntry = keys.get("driver_opts");
    const labelsEntry = keys.get("labels");
    const driverOptions: Record<string, string> = {};
    for (
      const [key, item]
        of keyValues(reader, optionsEntry?.value ?? null, optionsEntry?.path ?? volume.path) ?? []
    ) {
      driverOptions[key] = item.value ?? "";
    }
    const labels = readLabels(reader, labelsEntry?.value ?? null, labelsEntry?.path ?? volume.path);
    if (external && (driver !== null || Object.keys(driverOptions).length > 0)) {
      fail(reader, volume.keyNode, volume.path, `an external volume cannot set "driver" or "driver_opts"`);
    }
    out[volume.key] = {
      name: volume.key,
      external,
      dockerName: external ? externalName ?? volume.key : `${project}_${volume.key}`,
      driver,
      driverOptions: sorted(driverOptions),
      labels,
      sizeBytes: null,
    };
  }
  for (
    const provisioned of extension === undefined ? [] : entries(reader, extension.value, extension.path) ?? []
  ) {
    const problem = volumeNameProblem(provisioned.key);
    if (problem !== undefined) {
      fail(reader, provisioned.keyNode, provisioned.path, problem);
      continue;
    }
    let sizeNode = provisioned.value;
    let sizePath = provisioned.path;
    if (isMapping(provisioned.value)) {
      const keys = checkKeys(
        reader,
        entries(reader, provisioned.value, provisioned.path) ?? [],
        X_VOLUME_KEYS,
        {
          strictExtensions: true,
          where: "x-volumes",
        },
      );
      sizeNode = keys.get("size")?.value ?? null;
      sizePath = keys.get("size")?.path ?? provisioned.path;
    }
    if (sizeNode === null) {
      fail(
        reader,
        provisioned.keyNode,
        provisioned.path,
        `missing required key "size": a Provisioned Volume needs a maximum size`,
      );
      continue;
    }
    const sizeBytes = readBytes(reader, sizeNode, sizePath);
    if (sizeBytes === null) continue;
    const existing = out[provisioned.key];
    if (existing?.external) {
      fail(
        reader,
        provisioned.keyNode,
        provisioned.path,
        `volume "${provisioned.key}" is external: it cannot be a Provisioned Volume`,
      );
      continue;
    }
    out[provisioned.key] = existing === undefined
      ? {
        name: provisioned.key,
        external: false,
        dockerName: `${project}_${provisioned.key}`,
        driver: null,
        driverOptions: {},
        labels: {},
        sizeBytes,
      }
      : { ...existing, sizeBytes };
  }
  return sorted(out);
}

/**
 * Leaves out the Services none of whose profiles is enabled, as Compose does, and refuses an enabled Service
 * that depends on one left out. Returns the names left out, sorted.
 */
function applyProfiles(
  reader: Reader,
  list: Entry[],
  services: Record<string, NormalizedService>,
  enabled: readonly string[],
): string[] {
  const all = enabled.includes("*");
  const out = Object.values(services).filter((service) =>
    service.profiles.length > 0 && !all && !service.profiles.some((profile) => enabled.includes(profile))
  ).map((service) => service.name).sort();
  const left = new Set(out);
  for (const service of Object.values(services)) {
    if (left.has(service.name)) continue;
    for (const dependency of service.dependsOn) {
      if (!left.has(dependency)) continue;
      const entry = list.find((item) => item.key === service.name);
      fail(
        reader,
        entry?.keyNode,
        child(entry?.path ?? "services", "depends_on"),
        `service "${service.name}" depends on "${dependency}", which is left out: enable one of its profiles (${
          services[dependency].profiles.map((profile) => `"${profile}"`).join(", ")
        }) with --profile`,
      );
    }
  }
  for (const name of out) delete services[name];
  return out;
}

/**
 * A Service others wait to complete runs once, to exit 0, before them: it cannot be global or have more than one
 * replica, and it cannot be what a Service waits to be healthy.
 */
function checkCompletions(reader: Reader, list: Entry[], services: Record<string, NormalizedService>): void {
  for (const service of Object.values(services)) {
    for (const [dependency, condition] of Object.entries(service.dependsOnConditions ?? {})) {
      const target = services[dependency];
      if (condition !== "service_completed_successfully" || target === undefined) continue;
      if (target.mode === "global" || (target.replicas ?? 1) > 1) {
        const entry = list.find((item) => item.key === service.name);
        fail(
          reader,
          entry?.keyNode,
          child(entry?.path ?? "services", "depends_on"),
          `service "${service.name}" waits for "${dependency}" to complete, so "${dependency}" must run once: set its replicas to 1`,
        );
      }
    }
  }
}

/** Refuses a `depends_on` cycle, naming the services in it. */
function checkCycles(reader: Reader, list: Entry[], dependencies: ReadonlyMap<string, string[]>): void {
  const state = new Map<string, "visiting" | "done">();
  const stack: string[] = [];
  const reported = new Set<string>();
  const visitService = (name: string): void => {
    if (state.get(name) === "done") return;
    if (state.get(name) === "visiting") {
      const cycle = [...stack.slice(stack.indexOf(name)), name];
      const key = [...cycle].sort().join(",");
      if (!reported.has(key)) {
        reported.add(key);
        const entry = list.find((item) => item.key === name);
        fail(
          reader,
          entry?.keyNode,
          entry?.path ?? "",
          `dependency cycle: ${cycle.map((item) => `"${item}"`).join(" -> ")}`,
        );
      }
      return;
    }
    state.set(name, "visiting");
    stack.push(name);
    for (const dependency of dependencies.get(name) ?? []) visitService(dependency);
    stack.pop();
    state.set(name, "done");
  };
  for (const name of [...dependencies.keys()].sort()) visitService(name);
}
