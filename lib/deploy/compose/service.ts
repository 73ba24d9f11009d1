/**
 * One `services.<name>` entry, read into a {@linkcode NormalizedService}.
 *
 * @module
 */

import { isScalar, type Node } from "yaml";
import { parseImageRef } from "../docker/reference.ts";
import { readCaddy, readMachines, readPreDeploy } from "./extensions.ts";
import { checkKeys, SERVICE_KEYS } from "./keys.ts";
import { MAX_SHIPPED_BYTES, readFileRefs, shipBind } from "./files.ts";
import { readMounts } from "./mounts.ts";
import { absolutePathProblem } from "./names.ts";
import { readPorts } from "./service_ports.ts";
import { child, type Entry, isList, isMapping, type Reader, sorted } from "./reader.ts";
import { readCommand, readDuration, readLabels } from "./service_fields.ts";
import { readBuild } from "./build.ts";
import type { NormalizedBuild, NormalizedFile, NormalizedMount, NormalizedService } from "./types.ts";
import { readDeploy } from "./service_deploy.ts";
import { readDevices, readGpus, readTmpfs } from "./service_devices.ts";
import { readEnvironment, readExtraHosts } from "./service_environment.ts";
import { readDependsOn, readHealthcheck, readLogging, readPullPolicy } from "./service_lifecycle.ts";
import type { ServiceScope } from "./service_scope.ts";

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
  const list = reader.entries(node, path);
  if (list === undefined) return undefined;
  const keys = checkKeys(reader, list, SERVICE_KEYS, { where: "a service" });
  const get = (key: string): Entry | undefined => keys.get(key);
  const value = (key: string): Node | null => keys.get(key)?.value ?? null;
  const at = (key: string): string => child(path, key);
  const optionalText = (key: string): string | null => {
    const entry = get(key);
    if (entry === undefined || entry.value === null) return null;
    return reader.text(entry.value, entry.path) ?? null;
  };
  const flag = (key: string, fallback: boolean): boolean => {
    const entry = get(key);
    if (entry === undefined || entry.value === null) return fallback;
    return reader.boolean(entry.value, entry.path) ?? fallback;
  };

  const named = optionalText("image");
  const buildEntry = get("build");
  let build: NormalizedBuild | undefined;
  if (buildEntry !== undefined && buildEntry.value !== null) {
    build = readBuild(reader, buildEntry, { baseDir: scope.baseDir, env: scope.env, image: named });
  } else if (named === null && get("image") === undefined) {
    reader.fail(keyNode, path, `missing required key "image"`);
  }
  // A built image runs as <project>-<service>:<content digest>; the Deploy adds the tag once it reads the context.
  const image = buildEntry !== undefined && buildEntry.value !== null
    ? `${scope.project ?? "project"}-${name}`
    : named;
  const badImage = named === null ? undefined : parseImageRef(named);
  if (named !== null && typeof badImage === "string") {
    reader.fail(
      value("image"),
      at("image"),
      `invalid image "${named}": ${badImage}; expected a reference such as "nginx:1.27"`,
    );
  }

  const readOnly = flag("read_only", false);
  const securityOpt = reader.textList(value("security_opt"), at("security_opt")) ?? [];
  const devices = readDevices(reader, value("devices"), at("devices"));
  const gpus = readGpus(reader, value("gpus"), at("gpus"));
  warnIgnored(reader, get);

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
  const { mounts, files } = readStorage(scope, name, keyNode, path, value);
  const healthcheck = readHealthcheck(reader, get("healthcheck"));

  const restart = optionalText("restart") ?? "unless-stopped";
  if (!RESTART.test(restart)) {
    reader.fail(
      value("restart"),
      at("restart"),
      `invalid restart policy "${restart}": expected "no", "always", "unless-stopped" or "on-failure[:N]"`,
    );
  }
  const workingDir = optionalText("working_dir");
  const workingDirProblem = workingDir === null ? undefined : absolutePathProblem("working_dir", workingDir);
  if (workingDirProblem !== undefined) {
    reader.fail(value("working_dir"), at("working_dir"), workingDirProblem);
  }
  const hostname = optionalText("hostname");
  if (hostname !== null && !HOSTNAME.test(hostname)) {
    reader.fail(value("hostname"), at("hostname"), `invalid hostname "${hostname}"`);
  }
  const stopSignal = optionalText("stop_signal");
  if (stopSignal !== null && !SIGNAL.test(stopSignal)) {
    reader.fail(
      value("stop_signal"),
      at("stop_signal"),
      `invalid stop signal "${stopSignal}": expected a name such as "SIGTERM"`,
    );
  }
  const pullPolicy = readPullPolicy(reader, get("pull_policy"), build !== undefined);
  const logging = readLogging(reader, get("logging"));
  const dependsOnConditions: Record<string, "service_healthy" | "service_completed_successfully"> = {};
  const dependsOn = readDependsOn(scope, name, get("depends_on"), dependsOnConditions);
  const capAdd = reader.textList(value("cap_add"), at("cap_add")) ?? [];
  const capDrop = reader.textList(value("cap_drop"), at("cap_drop")) ?? [];
  const profiles = reader.textList(value("profiles"), at("profiles")) ?? [];
  const sysctls: Record<string, string> = {};
  for (const [key, item] of reader.keyValues(value("sysctls"), at("sysctls")) ?? []) {
    if (item.value === undefined) reader.fail(item.node, item.path, `sysctl "${key}" has no value`);
    else sysctls[key] = item.value;
  }
  const extraHosts = readExtraHosts(reader, value("extra_hosts"), at("extra_hosts"));
  const init = get("init") === undefined || value("init") === null ? null : flag("init", false);
  const machines = readMachines(reader, value("x-machines"), at("x-machines"));
  const caddy = readCaddy(reader, value("x-caddy"), at("x-caddy"), scope.baseDir, scope.readFile, name);
  if (caddy !== null && ports.some((port) => port.kind === "ingress")) {
    reader.fail(
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

// Keys Ployz accepts and ignores, each with a warning saying why: `expose`, a positive `mem_swappiness` or
// `memswap_limit`, custom `networks`.
function warnIgnored(reader: Reader, get: (key: string) => Entry | undefined): void {
  const expose = get("expose");
  if (expose !== undefined && expose.value !== null) {
    reader.textList(expose.value, expose.path);
    reader.warn(
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
      reader.warn(entry.keyNode, entry.path, `key "${key}" is not supported by Ployz and is ignored`);
    }
  }
  const networks = get("networks");
  if (networks !== undefined && networks.value !== null && customNetworks(reader, networks.value)) {
    reader.warn(
      networks.keyNode,
      networks.path,
      `key "networks" is not supported by Ployz and is ignored: every container joins its Machine's Ployz network`,
    );
  }
}

// The service's mounts and the files it ships (secrets, configs, bind mounts of paths beside the compose file), within
// the shipped-bytes limit, each target mounted once; then its tmpfs mounts.
function readStorage(
  scope: ServiceScope,
  name: string,
  keyNode: Node,
  path: string,
  value: (key: string) => Node | null,
): { mounts: NormalizedMount[]; files: NormalizedFile[] } {
  const { reader } = scope;
  const at = (key: string): string => child(path, key);
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
      reader.warn(
        item.node,
        item.path,
        `bind mount "${mount.source}" is shipped to each Machine as a read-only copy: writes inside the container are not possible`,
      );
    }
    files.push(...shipped);
  }
  const shippedBytes = files.reduce((sum, file) => sum + file.size, 0);
  if (shippedBytes > MAX_SHIPPED_BYTES) {
    reader.fail(
      keyNode,
      path,
      `service "${name}" ships ${shippedBytes} bytes of secrets, configs and files, more than the limit of ${MAX_SHIPPED_BYTES}`,
    );
  }
  const targets = new Set(mounts.map((mount) => mount.target));
  for (const file of files) {
    if (targets.has(file.target)) {
      reader.fail(
        keyNode,
        path,
        `"${file.target}" is mounted twice: by ${file.kind} "${file.name}" and by a volume or another file`,
      );
    }
    targets.add(file.target);
  }
  for (const mount of readTmpfs(reader, value("tmpfs"), at("tmpfs"))) {
    if (mounts.some((other) => other.target === mount.target)) {
      reader.fail(value("tmpfs"), at("tmpfs"), `mount target "${mount.target}" is already used by a volume`);
    } else {
      mounts.push(mount);
    }
  }
  return { mounts, files };
}

function customNetworks(reader: Reader, node: Node): boolean {
  if (isList(node)) {
    const list = reader.items(node, "") ?? [];
    return !(list.length === 1 && isScalar(list[0]) && list[0].value === "default");
  }
  if (isMapping(node)) {
    const list = reader.entries(node, "") ?? [];
    return !(list.length === 1 && list[0].key === "default");
  }
  return true;
}
