/**
 * Which Compose keys are honoured, warned about (ignored) or refused
 * (`ployz/src/compose/convert.rs` `classify`). Keys that are not Compose keys at all are refused, as
 * `docker compose config` refuses them; `x-` keys are always allowed.
 *
 * @module
 */

import type { Node } from "yaml";
import type { Entry, Reader } from "./reader.ts";

/** How a key is treated: read by the loader, warned about and ignored, or refused with a reason. */
export type KeyRule = "read" | "ignore" | { warn: string } | { refuse: string };

const IGNORED = "is not supported by Ployz and is ignored";
const NOT_YET = "is not supported by this loader yet";

function warned(keys: string[], message = IGNORED): Record<string, KeyRule> {
  return Object.fromEntries(keys.map((key) => [key, { warn: message }]));
}

function refused(keys: string[], message: string): Record<string, KeyRule> {
  return Object.fromEntries(keys.map((key) => [key, { refuse: message }]));
}

function read(keys: string[]): Record<string, KeyRule> {
  return Object.fromEntries(keys.map((key) => [key, "read" as const]));
}

/** Top-level keys. */
export const TOP_LEVEL_KEYS: Record<string, KeyRule> = {
  ...read(["name", "services", "volumes", "networks", "secrets", "configs"]),
  version: { warn: "is obsolete and is ignored" },
  include: "ignore",
  models: { warn: IGNORED },
};

/** Service keys. */
export const SERVICE_KEYS: Record<string, KeyRule> = {
  ...read([
    "image",
    "build",
    "command",
    "entrypoint",
    "environment",
    "env_file",
    "labels",
    "healthcheck",
    "ports",
    "volumes",
    "deploy",
    "scale",
    "restart",
    "depends_on",
    "user",
    "working_dir",
    "stop_grace_period",
    "stop_signal",
    "hostname",
    "extra_hosts",
    "cap_add",
    "cap_drop",
    "privileged",
    "init",
    "tty",
    "stdin_open",
    "sysctls",
    "pull_policy",
    "logging",
    "cpus",
    "mem_limit",
    "mem_reservation",
    "shm_size",
    "ulimits",
    "profiles",
    "networks",
    "read_only",
    "mem_swappiness",
    "memswap_limit",
    "secrets",
    "configs",
    "security_opt",
    "tmpfs",
    "devices",
    "gpus",
    "pids_limit",
    "expose",
    "x-ports",
    "x-machines",
    "x-caddy",
    "x-pre_deploy",
  ]),
  // Warned about and ignored.
  ...warned([
    "dns",
    "dns_opt",
    "dns_search",
    "group_add",
    "ipc",
    "links",
    "network_mode",
    "oom_kill_disable",
    "runtime",
    "storage_opt",
    "userns_mode",
    "uts",
    "volumes_from",
  ]),
  "x-port": { warn: `${IGNORED}: did you mean "x-ports"` },
  "x-machine": { warn: `${IGNORED}: did you mean "x-machines"` },
  "container_name": { warn: "is ignored: Ployz names containers itself" },
  // Compose keys that have no effect here; a warning says so rather than dropping them silently.
  ...warned([
    "annotations",
    "attach",
    "blkio_config",
    "cgroup",
    "cgroup_parent",
    "cpu_count",
    "cpu_percent",
    "cpu_period",
    "cpu_quota",
    "cpu_rt_period",
    "cpu_rt_runtime",
    "cpu_shares",
    "cpuset",
    "credential_spec",
    "develop",
    "device_cgroup_rules",
    "domainname",
    "external_links",
    "isolation",
    "label_file",
    "mac_address",
    "models",
    "oom_score_adj",
    "platform",
    "post_start",
    "pre_stop",
    "provider",
    "pull_refresh_after",
    "use_api_socket",
  ]),
  // Not supported yet, and ignoring them would run a different container, so they are refused.
  ...refused(["pid"], NOT_YET),
  extends: { refuse: "is not supported: copy the base service's keys into this one" },
};

/** `deploy` keys. */
export const DEPLOY_KEYS: Record<string, KeyRule> = {
  ...read(["mode", "replicas", "update_config", "resources"]),
  ...read(["placement"]),
  ...warned(["endpoint_mode", "labels", "restart_policy", "rollback_config"]),
};

/** `deploy.placement` keys. */
export const PLACEMENT_KEYS: Record<string, KeyRule> = {
  ...read(["constraints"]),
  ...warned(["preferences", "max_replicas_per_node"]),
};

/** `deploy.update_config` keys. */
export const UPDATE_CONFIG_KEYS: Record<string, KeyRule> = {
  ...read(["order", "monitor", "parallelism", "delay"]),
  ...warned(["failure_action", "max_failure_ratio"]),
};

/** `deploy.resources` keys. */
export const RESOURCES_KEYS: Record<string, KeyRule> = read(["limits", "reservations"]);

/** `deploy.resources.limits` keys. */
export const LIMITS_KEYS: Record<string, KeyRule> = {
  ...read(["cpus", "memory", "pids"]),
};

/** `deploy.resources.reservations` keys. */
export const RESERVATIONS_KEYS: Record<string, KeyRule> = {
  ...read(["memory", "devices"]),
  ...warned(["cpus", "generic_resources"]),
};

/** `deploy.resources.reservations.devices[]` keys. */
export const DEVICE_REQUEST_KEYS: Record<string, KeyRule> = read([
  "driver",
  "count",
  "device_ids",
  "capabilities",
  "options",
]);

/** `healthcheck` keys. */
export const HEALTHCHECK_KEYS: Record<string, KeyRule> = read([
  "test",
  "interval",
  "timeout",
  "retries",
  "start_period",
  "start_interval",
  "disable",
]);

/** `logging` keys. */
export const LOGGING_KEYS: Record<string, KeyRule> = read(["driver", "options"]);

/** Long-syntax `ports` keys. */
export const PORT_KEYS: Record<string, KeyRule> = {
  ...read(["target", "published", "host_ip", "protocol", "mode"]),
  ...warned(["name", "app_protocol"]),
};

/** Long-syntax `volumes` keys. */
export const MOUNT_KEYS: Record<string, KeyRule> = {
  ...read(["type", "source", "target", "read_only", "bind", "volume", "tmpfs"]),
  ...warned(["consistency"]),
};

/** `volumes[].bind` keys. */
export const BIND_KEYS: Record<string, KeyRule> = {
  ...read(["propagation", "create_host_path"]),
  ...warned(["selinux", "recursive"]),
};

/** `volumes[].volume` keys. */
export const VOLUME_OPTION_KEYS: Record<string, KeyRule> = read(["nocopy", "subpath"]);

/** `volumes[].tmpfs` keys. */
export const TMPFS_KEYS: Record<string, KeyRule> = read(["size", "mode"]);

/** Top-level `volumes.<name>` keys. */
export const VOLUME_KEYS: Record<string, KeyRule> = read([
  "name",
  "driver",
  "driver_opts",
  "external",
  "labels",
]);

/** `depends_on.<service>` keys. */
export const DEPENDS_ON_KEYS: Record<string, KeyRule> = {
  ...read(["condition", "required"]),
  restart: { warn: "is not applied: Ployz does not restart dependants when a dependency is replaced" },
};

/** `env_file[]` long-syntax keys. */
export const ENV_FILE_KEYS: Record<string, KeyRule> = {
  ...read(["path", "required"]),
  format: { refuse: NOT_YET },
};

/** `x-pre_deploy` keys: every other key is refused, `x-` ones included. */
export const PRE_DEPLOY_KEYS: Record<string, KeyRule> = read([
  "command",
  "environment",
  "privileged",
  "timeout",
]);

/** `x-caddy` mapping keys. */
export const CADDY_KEYS: Record<string, KeyRule> = read(["config"]);

/** `x-volumes.<name>` keys. */
export const X_VOLUME_KEYS: Record<string, KeyRule> = read(["size"]);

/**
 * Checks every key of a mapping against `rules`: refuses unknown and refused keys, warns about ignored
 * ones. Returns the entries the caller should read, by key. `x-` keys are skipped unless `strictExtensions`.
 */
export function checkKeys(
  reader: Reader,
  list: Entry[],
  rules: Record<string, KeyRule>,
  options: { strictExtensions?: boolean; where?: string } = {},
): Map<string, Entry> {
  const out = new Map<string, Entry>();
  for (const entry of list) {
    const rule = Object.hasOwn(rules, entry.key) ? rules[entry.key] : undefined;
    if (rule === "read") {
      out.set(entry.key, entry);
    } else if (rule === "ignore") {
      continue;
    } else if (rule !== undefined && "warn" in rule) {
      if (entry.value !== null) reader.warn(entry.keyNode, entry.path, `key "${entry.key}" ${rule.warn}`);
    } else if (rule !== undefined && "refuse" in rule) {
      reader.fail(entry.keyNode, entry.path, `key "${entry.key}" ${rule.refuse}`);
    } else if (entry.key.startsWith("x-") && !options.strictExtensions) {
      continue;
    } else {
      const hint = suggestion(entry.key, Object.keys(rules));
      const where = options.where === undefined ? "" : ` in ${options.where}`;
      reader.fail(
        entry.keyNode,
        entry.path,
        `unknown key "${entry.key}"${where}${hint === undefined ? "" : `: did you mean "${hint}"`}`,
      );
    }
  }
  return out;
}

/** The closest known key within two edits, if any. */
function suggestion(key: string, known: string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of known) {
    const distance = editDistance(key, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j] + 1,
        current[j - 1] + 1,
        previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length];
}

/** {@linkcode checkKeys} over the entries of the mapping `node` at `path`; a node that is not a mapping is reported. */
export function checkMapping(
  reader: Reader,
  node: Node | null,
  path: string,
  rules: Record<string, KeyRule>,
  options: { strictExtensions?: boolean; where?: string } = {},
): Map<string, Entry> {
  return checkKeys(reader, reader.entries(node, path) ?? [], rules, options);
}
