/**
 * One `services.<name>` entry, read into a {@linkcode NormalizedService}.
 *
 * @module
 */

import { isAbsolute, join } from "node:path";
import { isScalar, type Node } from "yaml";
import { parseImageRef } from "../docker/reference.ts";
import { readCaddy, readMachines, readPreDeploy } from "./extensions.ts";
import {
  checkKeys,
  DEPENDS_ON_KEYS,
  DEPLOY_KEYS,
  DEVICE_REQUEST_KEYS,
  ENV_FILE_KEYS,
  HEALTHCHECK_KEYS,
  LIMITS_KEYS,
  LOGGING_KEYS,
  PLACEMENT_KEYS,
  RESERVATIONS_KEYS,
  RESOURCES_KEYS,
  SERVICE_KEYS,
  UPDATE_CONFIG_KEYS,
} from "./keys.ts";
import { type FileContents, type FileSource, MAX_SHIPPED_BYTES, readFileRefs, shipBind } from "./files.ts";
import { MAX_FILE_BYTES, MAX_REPLICAS, oversize } from "./limits.ts";
import { readMounts } from "./mounts.ts";
import { parseConstraint } from "./placement.ts";
import { absolutePathProblem } from "./names.ts";
import { readPorts } from "./service_ports.ts";
import { parseEnvFile } from "./env_file.ts";
import {
  boolean,
  child,
  decimal,
  describe,
  entries,
  type Entry,
  fail,
  integer,
  isList,
  isMapping,
  items,
  keyValues,
  type Reader,
  sorted,
  text,
  textList,
  warn,
} from "./reader.ts";
import { fileErrorReason, readBytes, readCommand, readDuration, readLabels } from "./service_fields.ts";
import { readBuild } from "./build.ts";
import type {
  NormalizedBuild,
  NormalizedDevice,
  NormalizedDeviceRequest,
  NormalizedFile,
  NormalizedHealthcheck,
  NormalizedMount,
  NormalizedResources,
  NormalizedService,
  TmpfsMount,
} from "./types.ts";
import { parseBytes } from "./units.ts";

/** What a service needs from the rest of the file. */
export interface ServiceScope {
  reader: Reader;
  env: Readonly<Record<string, string>>;
  baseDir: string;
  readFile: (path: string) => string;
  /** Top-level volume keys. */
  volumes: ReadonlySet<string>;
  /** Every service name in the file. */
  services: ReadonlySet<string>;
  /** Filled in while reading: each service's dependencies, even for services with problems. */
  dependencies: Map<string, string[]>;
  /** Top-level secrets and configs. */
  secrets: ReadonlyMap<string, FileSource>;
  configs: ReadonlyMap<string, FileSource>;
  /** Filled in while reading: the content of every shipped file, by digest. */
  contents: FileContents;
  /** The Project's name, which names built images; absent when it has problems. */
  project?: string;
}

const RESTART = /^(no|always|unless-stopped|on-failure(:\d+)?)$/;
const SIGNAL = /^(SIG[A-Z0-9+-]+|[A-Z0-9]+|\d+)$/;
const HOSTNAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i;

/** Reads one service. Problems go to the reader; the result is undefined when the service has any. */
export function readService(
  scope: ServiceScope,
  name: string,
  keyNode: Node,
  node: Node | null,
  path: string,
): NormalizedService | undefined {
  const { reader } = scope;
  const errorsBefore = reader.errors.length;
  const list = entries(reader, node, path);
  if (list === undefined) return undefined;
  const keys = checkKeys(reader, list, SERVICE_KEYS, { where: "a service" });
  const get = (key: string): Entry | undefined => keys.get(key);
  const value = (key: string): Node | null => keys.get(key)?.value ?? null;
  const at = (key: string): string => child(path, key);
  const optionalText = (key: string): string | null => {
    const entry = get(key);
    if (entry === undefined || entry.value === null) return null;
    return text(reader, entry.value, entry.path) ?? null;
  };
  const flag = (key: string, fallback: boolean): boolean => {
    const entry = get(key);
    if (entry === undefined || entry.value === null) return fallback;
    return boolean(reader, entry.value, entry.path) ?? fallback;
  };

  const named = optionalText("image");
  const buildEntry = get("build");
  let build: NormalizedBuild | undefined;
  if (buildEntry !== undefined && buildEntry.value !== null) {
    build = readBuild(reader, buildEntry, { baseDir: scope.baseDir, env: scope.env, image: named });
  } else if (named === null && get("image") === undefined) {
    fail(reader, keyNode, path, `missing required key "image"`);
  }
  // A built image runs as <project>-<service>:<content digest>; the Deploy adds the tag once it reads the context.
  const image = buildEntry !== undefined && buildEntry.value !== null
    ? `${scope.project ?? "project"}-${name}`
    : named;
  const badImage = named === null ? undefined : parseImageRef(named);
  if (named !== null && typeof badImage === "string") {
    fail(
      reader,
      value("image"),
      at("image"),
      `invalid image "${named}": ${badImage}; expected a reference such as "nginx:1.27"`,
    );
  }

  const readOnly = flag("read_only", false);
  const securityOpt = textList(reader, value("security_opt"), at("security_opt")) ?? [];
  const devices = readDevices(reader, value("devices"), at("devices"));
  const gpus = readGpus(reader, value("gpus"), at("gpus"));
  const expose = get("expose");
  if (expose !== undefined && expose.value !== null) {
    textList(reader, expose.value, expose.path);
    warn(
      reader,
      expose.keyNode,
      expose.path,
      `key "expose" has no effect: every container port is reachable from the Project's other containers`,
    );
  }
  for (const key of ["mem_swappiness", "memswap_limit"]) {
    const entry = get(key);
    if (entry === undefined || entry.value === null) continue;
    const number = isScalar(entry.value) ? Number(entry.value.value) : NaN;
    if (!(number <= 0)) {
      warn(reader, entry.keyNode, entry.path, `key "${key}" is not supported by Ployz and is ignored`);
    }
  }
  const networks = get("networks");
  if (networks !== undefined && networks.value !== null && customNetworks(reader, networks.value)) {
    warn(
      reader,
      networks.keyNode,
      networks.path,
      `key "networks" is not supported by Ployz and is ignored: every container joins its Machine's Ployz network`,
    );
  }

  const environment = readEnvironment(scope, name, get("env_file"), get("environment"));
  const labels = readLabels(reader, value("labels"), at("labels"));
  const { mode, replicas, update, resources, pidsLimit, deviceRequests, constraints } = readDeploy(
    reader,
    get("deploy"),
    get("scale"),
    {
      cpus: get("cpus"),
      memLimit: get("mem_limit"),
      memReservation: get("mem_reservation"),
      shmSize: get("shm_size"),
      ulimits: get("ulimits"),
      pidsLimit: get("pids_limit"),
    },
  );
  const ports = readPorts(reader, get("ports"), get("x-ports"));
  const mountAt = new Map<NormalizedMount, { node: Node | null; path: string }>();
  const written = readMounts(reader, value("volumes"), at("volumes"), scope.volumes, mountAt);
  const files: NormalizedFile[] = [
    ...readFileRefs(reader, value("secrets"), at("secrets"), "secret", scope.secrets, scope.contents),
    ...readFileRefs(reader, value("configs"), at("configs"), "config", scope.configs, scope.contents),
  ];
  const mounts = written.filter((mount) => mount.type !== "bind" || mount.source.startsWith("/"));
  for (const mount of written) {
    if (mount.type !== "bind" || mount.source.startsWith("/")) continue;
    // A path next to the compose file: the Machine has no copy of it, so its content is shipped.
    const item = mountAt.get(mount) ?? { node: value("volumes"), path: at("volumes") };
    const shipped = shipBind(
      reader,
      item.node,
      item.path,
      mount.source,
      mount.target,
      scope.baseDir,
      scope.contents,
    );
    if (!mount.readOnly && shipped.length > 0) {
      warn(
        reader,
        item.node,
        item.path,
        `bind mount "${mount.source}" is shipped to each Machine as a read-only copy: writes inside the container are not possible`,
      );
    }
    files.push(...shipped);
  }
  const shippedBytes = files.reduce((sum, file) => sum + file.size, 0);
  if (shippedBytes > MAX_SHIPPED_BYTES) {
    fail(
      reader,
      keyNode,
      path,
      `service "${name}" ships ${shippedBytes} bytes of secrets, configs and files, more than the limit of ${MAX_SHIPPED_BYTES}`,
    );
  }
  const targets = new Set(mounts.map((mount) => mount.target));
  for (const file of files) {
    if (targets.has(file.target)) {
      fail(
        reader,
        keyNode,
        path,
        `"${file.target}" is mounted twice: by ${file.kind} "${file.name}" and by a volume or another file`,
      );
    }
    targets.add(file.target);
  }
  for (const mount of readTmpfs(reader, value("tmpfs"), at("tmpfs"))) {
    if (mounts.some((other) => other.target === mount.target)) {
      fail(reader, value("tmpfs"), at("tmpfs"), `mount target "${mount.target}" is already used by a volume`);
    } else {
      mounts.push(mount);
    }
  }
  const healthcheck = readHealthcheck(reader, get("healthcheck"));

  const restart = optionalText("restart") ?? "unless-stopped";
  if (!RESTART.test(restart)) {
    fail(
      reader,
      value("restart"),
      at("restart"),
      `invalid restart policy "${restart}": expected "no", "always", "unless-stopped" or "on-failure[:N]"`,
    );
  }
  const workingDir = optionalText("working_dir");
  const workingDirProblem = workingDir === null ? undefined : absolutePathProblem("working_dir", workingDir);
  if (workingDirProblem !== undefined) {
    fail(reader, value("working_dir"), at("working_dir"), workingDirProblem);
  }
  const hostname = optionalText("hostname");
  if (hostname !== null && !HOSTNAME.test(hostname)) {
    fail(reader, value("hostname"), at("hostname"), `invalid hostname "${hostname}"`);
  }
  const stopSignal = optionalText("stop_signal");
  if (stopSignal !== null && !SIGNAL.test(stopSignal)) {
    fail(
      reader,
      value("stop_signal"),
      at("stop_signal"),
      `invalid stop signal "${stopSignal}": expected a name such as "SIGTERM"`,
    );
  }
  const pullPolicy = readPullPolicy(reader, get("pull_policy"), build !== undefined);
  const logging = readLogging(reader, get("logging"));
  const dependsOnConditions: Record<string, "service_healthy" | "service_completed_successfully"> = {};
  const dependsOn = readDependsOn(scope, name, get("depends_on"), dependsOnConditions);
  const capAdd = textList(reader, value("cap_add"), at("cap_add")) ?? [];
  const capDrop = textList(reader, value("cap_drop"), at("cap_drop")) ?? [];
  const profiles = textList(reader, value("profiles"), at("profiles")) ?? [];
  const sysctls: Record<string, string> = {};
  for (const [key, item] of keyValues(reader, value("sysctls"), at("sysctls")) ?? []) {
    if (item.value === undefined) fail(reader, item.node, item.path, `sysctl "${key}" has no value`);
    else sysctls[key] = item.value;
  }
  const extraHosts = readExtraHosts(reader, value("extra_hosts"), at("extra_hosts"));
  const init = get("init") === undefined || value("init") === null ? null : flag("init", false);
  const machines = readMachines(reader, value("x-machines"), at("x-machines"));
  const caddy = readCaddy(reader, value("x-caddy"), at("x-caddy"), scope.baseDir, scope.readFile, name);
  if (caddy !== null && ports.some((port) => port.kind === "ingress")) {
    fail(
      reader,
      get("x-caddy")?.keyNode,
      at("x-caddy"),
      `"x-caddy" cannot be combined with ingress ports in "x-ports"`,
    );
  }
  const preDeploy = readPreDeploy(reader, value("x-pre_deploy"), at("x-pre_deploy"), scope.env);

  const command = readCommand(reader, value("command"), at("command"));
  const entrypoint = readCommand(reader, value("entrypoint"), at("entrypoint"));
  const stopGracePeriodMs = readDuration(reader, value("stop_grace_period"), at("stop_grace_period"));
  const user = optionalText("user");
  const privileged = flag("privileged", false);
  const tty = flag("tty", false);
  const stdinOpen = flag("stdin_open", false);
  if (reader.errors.length > errorsBefore || image === null) return undefined;
  return {
    name,
    image,
    mode,
    replicas,
    command,
    entrypoint,
    environment,
    labels,
    ports,
    mounts,
    healthcheck,
    restart,
    user,
    workingDir,
    hostname,
    extraHosts,
    capAdd,
    capDrop,
    privileged,
    init,
    tty,
    stdinOpen,
    sysctls: sorted(sysctls),
    stopGracePeriodMs,
    stopSignal,
    pullPolicy,
    logging,
    resources,
    dependsOn,
    profiles,
    update,
    machines,
    ...(constraints.length > 0 ? { constraints } : {}),
    caddy,
    preDeploy,
    readOnly,
    securityOpt,
    devices,
    deviceRequests: [...gpus, ...deviceRequests],
    pidsLimit,
    dependsOnConditions: sorted(dependsOnConditions),
    files,
    ...(build === undefined ? {} : { build }),
  };
}

/** `tmpfs:` as a path or a list of `PATH[:size=…,mode=…]`. */
function readTmpfs(reader: Reader, node: Node | null, path: string): TmpfsMount[] {
  const out: TmpfsMount[] = [];
  const list = textList(reader, node, path, { single: "one" }) ?? [];
  for (const entry of list) {
    const [target, options] = splitOnce(entry, ":");
    const problem = absolutePathProblem("tmpfs target", target);
    if (problem !== undefined) {
      fail(reader, node, path, problem);
      continue;
    }
    let sizeBytes: number | null = null;
    let mode: number | null = null;
    for (const option of options === undefined || options === "" ? [] : options.split(",")) {
      const [name, raw] = splitOnce(option, "=");
      if (name === "size" && raw !== undefined) {
        const parsed = parseBytes(raw);
        if (typeof parsed === "number") sizeBytes = parsed;
        else fail(reader, node, path, parsed.error);
      } else if (name === "mode" && raw !== undefined && /^[0-7]{1,4}$/.test(raw)) {
        mode = parseInt(raw, 8);
      } else {
        fail(reader, node, path, `unsupported tmpfs option "${option}": expected size=… or mode=…`);
      }
    }
    out.push({ type: "tmpfs", target, readOnly: false, sizeBytes, mode });
  }
  return out;
}

function splitOnce(text: string, separator: string): [string, string | undefined] {
  const at = text.indexOf(separator);
  return at < 0 ? [text, undefined] : [text.slice(0, at), text.slice(at + 1)];
}

/** `devices:` as `HOST[:CONTAINER[:PERMISSIONS]]` or `{source, target, permissions}`. */
function readDevices(reader: Reader, node: Node | null, path: string): NormalizedDevice[] {
  const out: NormalizedDevice[] = [];
  (items(reader, node, path) ?? []).forEach((item, index) => {
    const itemPath = child(path, index);
    let host: string | undefined;
    let container: string | undefined;
    let permissions = "rwm";
    if (isMapping(item)) {
      for (const entry of entries(reader, item, itemPath) ?? []) {
        const value = text(reader, entry.value, entry.path);
        if (entry.key === "source") host = value;
        else if (entry.key === "target") container = value;
        else if (entry.key === "permissions") permissions = value ?? permissions;
        else fail(reader, entry.keyNode, entry.path, `unknown key "${entry.key}" in a device`);
      }
    } else {
      const value = text(reader, item, itemPath);
      if (value === undefined) return;
      const parts = value.split(":");
      host = parts[0];
      container = parts[1] ?? parts[0];
      permissions = parts[2] ?? permissions;
      if (parts.length > 3) host = undefined;
    }
    container ??= host;
    if (
      host === undefined || container === undefined || !host.startsWith("/") || !container.startsWith("/")
    ) {
      fail(reader, item, itemPath, `invalid device: expected /HOST/PATH[:/CONTAINER/PATH[:rwm]]`);
      return;
    }
    if (!/^[rwm]{1,3}$/.test(permissions)) {
      fail(reader, item, itemPath, `invalid device permissions "${permissions}": expected letters of "rwm"`);
      return;
    }
    out.push({ host, container, permissions });
  });
  return out;
}

/** `gpus: all` or a list of device requests. */
function readGpus(reader: Reader, node: Node | null, path: string): NormalizedDeviceRequest[] {
  if (node === null) return [];
  if (isScalar(node)) {
    const value = text(reader, node, path);
    if (value === "all") return [{ count: -1, capabilities: [["gpu"]] }];
    const count = value === undefined ? NaN : Number(value);
    if (Number.isSafeInteger(count) && count > 0) return [{ count, capabilities: [["gpu"]] }];
    fail(reader, node, path, `invalid gpus "${value}": expected "all", a count, or a list of requests`);
    return [];
  }
  return readDeviceRequests(reader, node, path, [["gpu"]]);
}

/** Device requests, as under `deploy.resources.reservations.devices` (`capabilities` required unless given). */
export function readDeviceRequests(
  reader: Reader,
  node: Node | null,
  path: string,
  defaultCapabilities?: string[][],
): NormalizedDeviceRequest[] {
  const out: NormalizedDeviceRequest[] = [];
  (items(reader, node, path) ?? []).forEach((item, index) => {
    const itemPath = child(path, index);
    const keys = checkKeys(reader, entries(reader, item, itemPath) ?? [], DEVICE_REQUEST_KEYS, {
      where: "a device request",
    });
    const request: NormalizedDeviceRequest = { capabilities: defaultCapabilities ?? [] };
    const capabilities = keys.get("capabilities");
    if (capabilities !== undefined) {
      request.capabilities = [textList(reader, capabilities.value, capabilities.path) ?? []];
    } else if (defaultCapabilities === undefined) {
      fail(reader, item, itemPath, `missing required key "capabilities"`);
    }
    const driver = keys.get("driver");
    if (driver !== undefined && driver.value !== null) {
      request.driver = text(reader, driver.value, driver.path);
    }
    const count = keys.get("count");
    if (count !== undefined && count.value !== null) {
      const value = isScalar(count.value) && count.value.value === "all"
        ? -1
        : integer(reader, count.value, count.path, 1);
      if (value !== undefined) request.count = value;
    }
    const ids = keys.get("device_ids");
    if (ids !== undefined && ids.value !== null) {
      request.deviceIds = textList(reader, ids.value, ids.path) ?? [];
      if (request.count !== undefined) {
        fail(reader, ids.keyNode, ids.path, `"count" and "device_ids" cannot both be set`);
      }
    }
    const options = keys.get("options");
    if (options !== undefined && options.value !== null) {
      const map: Record<string, string> = {};
      for (const [key, entry] of keyValues(reader, options.value, options.path) ?? []) {
        map[key] = entry.value ?? "";
      }
      request.options = sorted(map);
    }
    if (request.count === undefined && request.deviceIds === undefined) request.count = -1;
    out.push(request);
  });
  return out;
}

function customNetworks(reader: Reader, node: Node): boolean {
  if (isList(node)) {
    const list = items(reader, node, "") ?? [];
    return !(list.length === 1 && isScalar(list[0]) && list[0].value === "default");
  }
  if (isMapping(node)) {
    const list = entries(reader, node, "") ?? [];
    return !(list.length === 1 && list[0].key === "default");
  }
  return true;
}

/** `env_file` contents (in order, later files win) overlaid by `environment`. */
function readEnvironment(
  scope: ServiceScope,
  service: string,
  envFile: Entry | undefined,
  environment: Entry | undefined,
): Record<string, string> {
  const { reader } = scope;
  const merged: Record<string, string> = {};
  if (envFile !== undefined && envFile.value !== null) {
    const node = envFile.value;
    const list: { node: Node | null; path: string }[] = isScalar(node)
      ? [{ node, path: envFile.path }]
      : (items(reader, node, envFile.path) ?? []).map((item, index) => ({
        node: item,
        path: child(envFile.path, index),
      }));
    for (const item of list) {
      let file: string | undefined;
      let required = true;
      if (isMapping(item.node)) {
        const keys = checkKeys(reader, entries(reader, item.node, item.path) ?? [], ENV_FILE_KEYS, {
          where: "env_file",
        });
        const pathEntry = keys.get("path");
        if (pathEntry === undefined) fail(reader, item.node, item.path, `missing required key "path"`);
        else file = text(reader, pathEntry.value, pathEntry.path);
        const requiredEntry = keys.get("required");
        if (requiredEntry !== undefined && requiredEntry.value !== null) {
          required = boolean(reader, requiredEntry.value, requiredEntry.path) ?? true;
        }
      } else {
        file = text(reader, item.node, item.path);
      }
      if (file === undefined) continue;
      const resolved = isAbsolute(file) ? file : join(scope.baseDir, file);
      let content: string;
      try {
        content = scope.readFile(resolved);
      } catch (error) {
        if (required) {
          fail(
            reader,
            item.node,
            item.path,
            `cannot read env file "${file}" for service "${service}": ${fileErrorReason(error)}`,
          );
        }
        continue;
      }
      const size = oversize(content);
      if (size !== undefined) {
        fail(
          reader,
          item.node,
          item.path,
          `cannot read env file "${file}" for service "${service}": it is ${size} bytes, more than the limit of ${MAX_FILE_BYTES}`,
        );
        continue;
      }
      const parsed = parseEnvFile(content, scope.env);
      for (const problem of parsed.problems) {
        reader.errors.push({
          file: resolved,
          line: problem.line,
          column: 1,
          path: "",
          message: problem.message,
        });
      }
      Object.assign(merged, parsed.vars);
    }
  }
  if (environment !== undefined) {
    for (const [key, item] of keyValues(reader, environment.value, environment.path) ?? []) {
      const value = item.value ?? (Object.hasOwn(scope.env, key) ? scope.env[key] : undefined);
      if (value === undefined) delete merged[key];
      else merged[key] = value;
    }
  }
  return sorted(merged);
}

function readExtraHosts(reader: Reader, node: Node | null, path: string): string[] {
  const out: string[] = [];
  if (isMapping(node)) {
    for (const entry of entries(reader, node, path) ?? []) {
      const addresses = isList(entry.value)
        ? textList(reader, entry.value, entry.path) ?? []
        : [text(reader, entry.value, entry.path)].filter((item): item is string => item !== undefined);
      for (const address of addresses) out.push(`${entry.key}:${address}`);
    }
    return out;
  }
  (items(reader, node, path) ?? []).forEach((item, index) => {
    const itemPath = child(path, index);
    const entry = text(reader, item, itemPath);
    if (entry === undefined) return;
    const match = /^([^=:]+)[=:](.+)$/.exec(entry);
    if (match === null) fail(reader, item, itemPath, `invalid extra host "${entry}": expected HOST:ADDRESS`);
    else out.push(`${match[1]}:${match[2]}`);
  });
  return out;
}

function readHealthcheck(reader: Reader, entry: Entry | undefined): NormalizedHealthcheck {
  if (entry === undefined || entry.value === null) return { kind: "image" };
  const keys = checkKeys(reader, entries(reader, entry.value, entry.path) ?? [], HEALTHCHECK_KEYS, {
    where: "healthcheck",
  });
  const disable = keys.get("disable");
  if (disable !== undefined && disable.value !== null && boolean(reader, disable.value, disable.path)) {
    return { kind: "disabled" };
  }
  const testEntry = keys.get("test");
  let test: string[] = [];
  if (testEntry === undefined || testEntry.value === null) {
    fail(reader, entry.keyNode, entry.path, `missing required key "test"`);
  } else if (isScalar(testEntry.value)) {
    const line = text(reader, testEntry.value, testEntry.path);
    if (line !== undefined) test = ["CMD-SHELL", line];
  } else {
    test = textList(reader, testEntry.value, testEntry.path) ?? [];
    if (test[0] === "NONE") return { kind: "disabled" };
    if (test.length < 2 || (test[0] !== "CMD" && test[0] !== "CMD-SHELL")) {
      fail(
        reader,
        testEntry.value,
        testEntry.path,
        `invalid healthcheck test: expected a string, ["CMD", …], ["CMD-SHELL", "…"] or ["NONE"]`,
      );
    }
  }
  const duration = (key: string): number | null =>
    readDuration(reader, keys.get(key)?.value, child(entry.path, key));
  const retriesEntry = keys.get("retries");
  return {
    kind: "configured",
    test,
    intervalMs: duration("interval"),
    timeoutMs: duration("timeout"),
    startPeriodMs: duration("start_period"),
    startIntervalMs: duration("start_interval"),
    retries: retriesEntry === undefined || retriesEntry.value === null
      ? null
      : integer(reader, retriesEntry.value, retriesEntry.path, 0) ?? null,
  };
}

function readPullPolicy(
  reader: Reader,
  entry: Entry | undefined,
  built: boolean,
): NormalizedService["pullPolicy"] {
  if (entry === undefined || entry.value === null) return "missing";
  const policy = text(reader, entry.value, entry.path);
  if (policy === "always" || policy === "never" || policy === "missing") return policy;
  if (policy === "" || policy === "if_not_present") return "missing";
  // "build": the image comes from the Service's own build, never from a registry; it is built whenever its
  // context changes (the tag is the content digest), which is what Compose's rebuild asks for.
  if (policy === "build") {
    if (built) return "never";
    fail(
      reader,
      entry.value,
      entry.path,
      `pull policy "build" needs a "build:" section to build the image from`,
    );
    return "missing";
  }
  if (policy === "daily" || policy === "weekly" || policy?.startsWith("every_")) {
    fail(
      reader,
      entry.value,
      entry.path,
      `pull policy "${policy}" is not supported: Ployz resolves tags at each Deploy; use "always" to re-resolve every time`,
    );
    return "missing";
  }
  if (policy !== undefined) {
    fail(
      reader,
      entry.value,
      entry.path,
      `unsupported pull policy "${policy}": expected "always", "missing" or "never"`,
    );
  }
  return "missing";
}

function readLogging(reader: Reader, entry: Entry | undefined): NormalizedService["logging"] {
  const fallback = { driver: "local", options: {} };
  if (entry === undefined || entry.value === null) return fallback;
  const keys = checkKeys(reader, entries(reader, entry.value, entry.path) ?? [], LOGGING_KEYS, {
    where: "logging",
  });
  const driverEntry = keys.get("driver");
  const driver = driverEntry === undefined || driverEntry.value === null
    ? "local"
    : text(reader, driverEntry.value, driverEntry.path) ?? "local";
  const options: Record<string, string> = {};
  const optionsEntry = keys.get("options");
  for (
    const [key, item] of keyValues(reader, optionsEntry?.value ?? null, optionsEntry?.path ?? entry.path) ??
      []
  ) {
    options[key] = item.value ?? "";
  }
  return { driver, options: sorted(options) };
}

function readDependsOn(
  scope: ServiceScope,
  service: string,
  entry: Entry | undefined,
  conditions: Record<string, "service_healthy" | "service_completed_successfully">,
): string[] {
  const { reader } = scope;
  if (entry === undefined || entry.value === null) return [];
  const found: { name: string; node: Node | null; path: string }[] = [];
  if (isMapping(entry.value)) {
    for (const dependency of entries(reader, entry.value, entry.path) ?? []) {
      found.push({ name: dependency.key, node: dependency.keyNode, path: dependency.path });
      const keys = checkKeys(
        reader,
        entries(reader, dependency.value, dependency.path) ?? [],
        DEPENDS_ON_KEYS,
        {
          where: "depends_on",
        },
      );
      const condition = keys.get("condition");
      if (condition === undefined || condition.value === null) continue;
      const value = text(reader, condition.value, condition.path);
      if (value === "service_completed_successfully" || value === "service_healthy") {
        conditions[dependency.key] = value;
      } else if (value !== undefined && value !== "service_started") {
        fail(
          reader,
          condition.value,
          condition.path,
          `invalid condition "${value}": expected "service_started", "service_healthy" or "service_completed_successfully"`,
        );
      }
    }
  } else {
    (items(reader, entry.value, entry.path) ?? []).forEach((item, index) => {
      const name = text(reader, item, child(entry.path, index));
      if (name !== undefined) found.push({ name, node: item, path: child(entry.path, index) });
    });
  }
  for (const dependency of found) {
    if (dependency.name === service) {
      fail(reader, dependency.node, dependency.path, `service "${service}" cannot depend on itself`);
    } else if (!scope.services.has(dependency.name)) {
      fail(
        reader,
        dependency.node,
        dependency.path,
        `service "${service}" depends on undefined service "${dependency.name}"`,
      );
    }
  }
  const names = [...new Set(found.map((dependency) => dependency.name))].sort();
  scope.dependencies.set(service, names);
  return names;
}

interface ResourceKeys {
  cpus: Entry | undefined;
  memLimit: Entry | undefined;
  memReservation: Entry | undefined;
  shmSize: Entry | undefined;
  ulimits: Entry | undefined;
  pidsLimit: Entry | undefined;
}

interface DeployFields {
  mode: NormalizedService["mode"];
  replicas: number | null;
  update: NormalizedService["update"];
  resources: NormalizedResources;
  pidsLimit: number | null;
  deviceRequests: NormalizedDeviceRequest[];
  constraints: string[];
}

/** `deploy.placement.constraints`: each parsed now, so a bad one is refused at its position. */
function readPlacement(reader: Reader, placement: Entry | undefined): string[] {
  if (placement === undefined || placement.value === null) return [];
  const keys = checkKeys(reader, entries(reader, placement.value, placement.path) ?? [], PLACEMENT_KEYS, {
    where: "placement",
  });
  const entry = keys.get("constraints");
  if (entry === undefined || entry.value === null) return [];
  const out: string[] = [];
  const nodes = items(reader, entry.value, entry.path) ?? [];
  nodes.forEach((node, i) => {
    const path = child(entry.path, i);
    const raw = text(reader, node, path);
    if (raw === undefined) return;
    const parsed = parseConstraint(raw);
    if (typeof parsed === "string") fail(reader, node, path, parsed);
    else if (!out.includes(parsed.text)) out.push(parsed.text);
  });
  return out;
}

function readDeploy(
  reader: Reader,
  deploy: Entry | undefined,
  scale: Entry | undefined,
  resourceKeys: ResourceKeys,
): DeployFields {
  const keys = deploy === undefined
    ? new Map<string, Entry>()
    : checkKeys(reader, entries(reader, deploy.value, deploy.path) ?? [], DEPLOY_KEYS, { where: "deploy" });
  const constraints = readPlacement(reader, keys.get("placement"));
  const modeEntry = keys.get("mode");
  const modeText = modeEntry === undefined || modeEntry.value === null
    ? "replicated"
    : text(reader, modeEntry.value, modeEntry.path) ?? "replicated";
  let mode: NormalizedService["mode"] = "replicated";
  if (modeText === "global") mode = "global";
  else if (modeText !== "replicated" && modeText !== "") {
    fail(
      reader,
      modeEntry?.value,
      modeEntry?.path ?? "",
      `unsupported deploy mode "${modeText}": expected "replicated" or "global"`,
    );
  }
  const replicasEntry = keys.get("replicas");
  let replicas: number | null = replicasEntry === undefined || replicasEntry.value === null
    ? null
    : integer(reader, replicasEntry.value, replicasEntry.path, 1, MAX_REPLICAS) ?? null;
  if (scale !== undefined && scale.value !== null) {
    const scaled = integer(reader, scale.value, scale.path, 1, MAX_REPLICAS) ?? null;
    if (replicas !== null && scaled !== null && scaled !== replicas) {
      fail(
        reader,
        scale.value,
        scale.path,
        `"scale" is ${scaled} but "deploy.replicas" is ${replicas}: set only one`,
      );
    }
    replicas ??= scaled;
  }
  if (mode === "global") {
    if (replicas !== null) {
      // A contradiction, not a preference: Compose refuses it too.
      fail(
        reader,
        replicasEntry?.keyNode ?? scale?.keyNode,
        replicasEntry?.path ?? scale?.path ?? "",
        `"${
          replicasEntry !== undefined ? "deploy.replicas" : "scale"
        }" cannot be set with "deploy.mode: global": a global Service runs one container per Machine`,
      );
    }
    replicas = null;
  } else {
    replicas ??= 1;
  }

  const update: NormalizedService["update"] = { order: null, monitorMs: null };
  const updateEntry = keys.get("update_config");
  if (updateEntry !== undefined && updateEntry.value !== null) {
    const updateKeys = checkKeys(
      reader,
      entries(reader, updateEntry.value, updateEntry.path) ?? [],
      UPDATE_CONFIG_KEYS,
      {
        where: "update_config",
      },
    );
    const order = updateKeys.get("order");
    if (order !== undefined && order.value !== null) {
      const value = text(reader, order.value, order.path);
      if (value === "start-first" || value === "stop-first") update.order = value;
      else if (value !== undefined && value !== "") {
        fail(
          reader,
          order.value,
          order.path,
          `invalid update order "${value}": expected "start-first" or "stop-first"`,
        );
      }
    }
    const monitor = updateKeys.get("monitor");
    update.monitorMs = readDuration(reader, monitor?.value, monitor?.path ?? "");
  }

  const resources: NormalizedResources = {
    nanoCpus: null,
    memoryBytes: readBytes(reader, resourceKeys.memLimit?.value, resourceKeys.memLimit?.path ?? ""),
    memoryReservationBytes: readBytes(
      reader,
      resourceKeys.memReservation?.value,
      resourceKeys.memReservation?.path ?? "",
    ),
    shmSizeBytes: readBytes(reader, resourceKeys.shmSize?.value, resourceKeys.shmSize?.path ?? ""),
    ulimits: readUlimits(reader, resourceKeys.ulimits),
  };
  const cpus = (entry: Entry | undefined): number | null => {
    if (entry === undefined || entry.value === null) return null;
    const value = decimal(reader, entry.value, entry.path);
    return value === undefined ? null : Math.round(value * 1e9);
  };
  resources.nanoCpus = cpus(resourceKeys.cpus);
  const pids = (entry: Entry | undefined): number | null =>
    entry === undefined || entry.value === null ? null : integer(reader, entry.value, entry.path, -1) ?? null;
  let pidsLimit = pids(resourceKeys.pidsLimit);
  let deviceRequests: NormalizedDeviceRequest[] = [];
  const resourcesEntry = keys.get("resources");
  if (resourcesEntry !== undefined && resourcesEntry.value !== null) {
    const resourceEntries = checkKeys(
      reader,
      entries(reader, resourcesEntry.value, resourcesEntry.path) ?? [],
      RESOURCES_KEYS,
      { where: "resources" },
    );
    const limits = resourceEntries.get("limits");
    if (limits !== undefined && limits.value !== null) {
      const limitKeys = checkKeys(reader, entries(reader, limits.value, limits.path) ?? [], LIMITS_KEYS, {
        where: "limits",
      });
      resources.nanoCpus = cpus(limitKeys.get("cpus")) ?? resources.nanoCpus;
      const memory = limitKeys.get("memory");
      resources.memoryBytes = readBytes(reader, memory?.value, memory?.path ?? "") ?? resources.memoryBytes;
      pidsLimit = pids(limitKeys.get("pids")) ?? pidsLimit;
    }
    const reservations = resourceEntries.get("reservations");
    if (reservations !== undefined && reservations.value !== null) {
      const reservationKeys = checkKeys(
        reader,
        entries(reader, reservations.value, reservations.path) ?? [],
        RESERVATIONS_KEYS,
        { where: "reservations" },
      );
      const memory = reservationKeys.get("memory");
      resources.memoryReservationBytes = readBytes(reader, memory?.value, memory?.path ?? "") ??
        resources.memoryReservationBytes;
      const devices = reservationKeys.get("devices");
      if (devices !== undefined) deviceRequests = readDeviceRequests(reader, devices.value, devices.path);
    }
  }
  return { mode, replicas, update, resources, pidsLimit, deviceRequests, constraints };
}

function readUlimits(reader: Reader, entry: Entry | undefined): NormalizedResources["ulimits"] {
  const out: NormalizedResources["ulimits"] = {};
  if (entry === undefined || entry.value === null) return out;
  for (const limit of entries(reader, entry.value, entry.path) ?? []) {
    if (isMapping(limit.value)) {
      const parts = new Map((entries(reader, limit.value, limit.path) ?? []).map((part) => [part.key, part]));
      const soft = parts.get("soft");
      const hard = parts.get("hard");
      for (const key of parts.keys()) {
        if (key !== "soft" && key !== "hard") {
          const part = parts.get(key);
          fail(
            reader,
            part?.keyNode,
            part?.path ?? limit.path,
            `unknown key "${key}" in ulimit: expected "soft" and "hard"`,
          );
        }
      }
      if (soft === undefined || hard === undefined) {
        fail(reader, limit.value, limit.path, `ulimit "${limit.key}" needs both "soft" and "hard"`);
        continue;
      }
      const softValue = integer(reader, soft.value, soft.path, -1);
      const hardValue = integer(reader, hard.value, hard.path, -1);
      if (softValue !== undefined && hardValue !== undefined) {
        out[limit.key] = { soft: softValue, hard: hardValue };
      }
    } else if (limit.value !== null && isScalar(limit.value)) {
      const value = integer(reader, limit.value, limit.path, -1);
      if (value !== undefined) out[limit.key] = { soft: value, hard: value };
    } else {
      fail(
        reader,
        limit.value,
        limit.path,
        `expected a number or {soft, hard}, got ${describe(limit.value)}`,
      );
    }
  }
  return sorted(out);
}
