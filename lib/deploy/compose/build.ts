/**
 * A service's `build:` (string context or the long form), read into a {@linkcode NormalizedBuild}. The context is a
 * directory on the operator's side; nothing is read from it here — the Deploy reads it, honouring `.dockerignore`,
 * only when it builds. Keys that would build something other than what the file says are refused with the reason;
 * keys that only tune a build are warned about and ignored.
 *
 * @module
 */

import { isAbsolute, join, normalize } from "node:path";
import type { Node } from "yaml";
import { checkMapping, type KeyRule } from "./keys.ts";
import { child, type Entry, isMapping, type Reader, sorted } from "./reader.ts";
import { readLabels } from "./service_fields.ts";
import type { NormalizedBuild } from "./types.ts";

/** Most bytes an inline Dockerfile may hold. */
export const MAX_INLINE_DOCKERFILE = 64 * 1024;

const TUNING = "only tunes a build and is ignored: the Machine that builds uses its own Docker settings";

/** `build:` keys. */
export const BUILD_KEYS: Record<string, KeyRule> = {
  context: "read",
  dockerfile: "read",
  "dockerfile_inline": "read",
  args: "read",
  target: "read",
  labels: "read",
  "cache_from": "read",
  "no_cache": "read",
  ssh: {
    refuse:
      "is not supported: the build runs on a Machine of the Cluster, which has no access to the operator's SSH agent",
  },
  secrets: {
    refuse:
      "is not supported yet: build secrets would have to travel to the building Machine, and Ployz does not send them there",
  },
  "additional_contexts": {
    refuse: "is not supported yet: only the one context directory is sent to the building Machine",
  },
  platforms: { refuse: "is not supported: the image is built for the building Machine's own platform" },
  ...Object.fromEntries(
    [
      "cache_to",
      "extra_hosts",
      "isolation",
      "network",
      "shm_size",
      "ulimits",
      "pull",
      "privileged",
      "entitlements",
    ]
      .map((key) => [key, { warn: TUNING }]),
  ),
  tags: {
    warn: "is ignored: the image is tagged <project>-<service>:<content digest> (and the file's image:)",
  },
};

/** Where the building Machine's Docker finds the Dockerfile when `dockerfile_inline` is given. */
export const INLINE_DOCKERFILE_NAME = ".ployz-inline.Dockerfile";

function relativeInside(reader: Reader, node: Node | null, path: string, value: string): boolean {
  if (isAbsolute(value) || normalize(value).split(/[\\/]/).includes("..") || value.includes("\0")) {
    reader.fail(node, path, `invalid dockerfile "${value}": expected a path inside the build context`);
    return false;
  }
  return true;
}

/**
 * Reads `build:`; `undefined` when it is absent or has problems (reported). `repository` is the image name the
 * build is tagged with when the file names no `image:` (`<project>-<service>`).
 */
export function readBuild(
  reader: Reader,
  entry: Entry,
  options: { baseDir: string; env: Readonly<Record<string, string>>; image: string | null },
): NormalizedBuild | undefined {
  const before = reader.errors.length;
  const node = entry.value;
  let context: string | undefined;
  let dockerfile: string | null = null;
  let dockerfileInline: string | null = null;
  let target: string | null = null;
  let noCache = false;
  const args: Record<string, string> = {};
  let labels: Record<string, string> = {};
  let cacheFrom: string[] = [];
  if (isMapping(node)) {
    const keys = checkMapping(reader, node, entry.path, BUILD_KEYS, { where: "build" });
    const value = (key: string): Node | null => keys.get(key)?.value ?? null;
    const at = (key: string): string => child(entry.path, key);
    const optional = (key: string): string | null =>
      value(key) === null ? null : reader.text(value(key), at(key)) ?? null;
    context = optional("context") ?? ".";
    dockerfile = optional("dockerfile");
    dockerfileInline = optional("dockerfile_inline");
    target = optional("target");
    noCache = value("no_cache") === null ? false : reader.boolean(value("no_cache"), at("no_cache")) ?? false;
    for (const [key, item] of reader.keyValues(value("args"), at("args")) ?? []) {
      // An argument without a value takes the operator's environment, as Compose does; unset, it is left out.
      const resolved = item.value ?? (Object.hasOwn(options.env, key) ? options.env[key] : undefined);
      if (resolved !== undefined) args[key] = resolved;
    }
    labels = readLabels(reader, value("labels"), at("labels"));
    cacheFrom = reader.textList(value("cache_from"), at("cache_from")) ?? [];
    if (dockerfile !== null) relativeInside(reader, value("dockerfile"), at("dockerfile"), dockerfile);
    if (dockerfile !== null && dockerfileInline !== null) {
      reader.fail(
        value("dockerfile_inline"),
        at("dockerfile_inline"),
        `"dockerfile" and "dockerfile_inline" exclude each other`,
      );
    }
    if (
      dockerfileInline !== null && new TextEncoder().encode(dockerfileInline).length > MAX_INLINE_DOCKERFILE
    ) {
      reader.fail(
        value("dockerfile_inline"),
        at("dockerfile_inline"),
        `"dockerfile_inline" is longer than the limit of ${MAX_INLINE_DOCKERFILE} bytes`,
      );
    }
    if (target !== null && !/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/.test(target)) {
      reader.fail(value("target"), at("target"), `invalid target "${target}": expected a stage name`);
    }
  } else {
    context = reader.text(node, entry.path);
  }
  if (context === undefined) return undefined;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(context) || context.startsWith("git@")) {
    reader.fail(
      isMapping(node) ? node : node,
      entry.path,
      `build context "${context}" is a URL: only a directory on the operator's side can be sent to the building Machine`,
    );
  }
  if (reader.errors.length > before) return undefined;
  return {
    context: isAbsolute(context) ? normalize(context) : join(options.baseDir, context),
    dockerfile,
    dockerfileInline,
    args: sorted(args),
    target,
    labels,
    cacheFrom,
    noCache,
    image: options.image,
  };
}
