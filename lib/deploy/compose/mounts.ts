/**
 * Service `volumes`: named volumes (declared at top level), bind mounts of absolute Machine paths, and tmpfs,
 * in the short (`SRC:DST[:OPTS]`) and long syntax. Relative bind sources are refused:
 * a Machine has no copy of the directory the compose file sits in.
 *
 * @module
 */

import type { Node } from "yaml";
import { BIND_KEYS, checkMapping, MOUNT_KEYS, TMPFS_KEYS, VOLUME_OPTION_KEYS } from "./keys.ts";
import { absolutePathProblem, volumeNameProblem } from "./names.ts";
import { child, isMapping, type Reader } from "./reader.ts";
import type { NormalizedMount } from "./types.ts";
import { parseBytes } from "./units.ts";

const PROPAGATION = new Set(["shared", "slave", "private", "rshared", "rslave", "rprivate"]);

/** Reads a service's `volumes` list. `declared` holds the top-level volume keys. */
export function readMounts(
  reader: Reader,
  node: Node | null,
  path: string,
  declared: ReadonlySet<string>,
  where?: Map<NormalizedMount, { node: Node | null; path: string }>,
): NormalizedMount[] {
  const list = reader.items(node, path) ?? [];
  const mounts: NormalizedMount[] = [];
  const targets = new Map<string, string>();
  list.forEach((item, index) => {
    const itemPath = child(path, index);
    const mount = isMapping(item)
      ? longMount(reader, item, itemPath, declared)
      : shortMount(reader, item, itemPath, declared);
    if (mount === undefined) return;
    const previous = targets.get(mount.target);
    if (previous !== undefined) {
      reader.fail(item, itemPath, `mount target "${mount.target}" is already used by ${previous}`);
      return;
    }
    targets.set(mount.target, itemPath);
    mounts.push(mount);
    where?.set(mount, { node: item, path: itemPath });
  });
  return mounts;
}

function checkTarget(reader: Reader, node: Node | null, path: string, target: string): boolean {
  const problem = absolutePathProblem("mount target", target);
  if (problem !== undefined) reader.fail(node, path, problem);
  return problem === undefined;
}

function checkBindSource(reader: Reader, node: Node | null, path: string, source: string): boolean {
  // A path relative to the compose file is shipped with the container (see files.ts).
  if (source === "." || source.startsWith("./") || source === ".." || source.startsWith("../")) return true;
  if (source.startsWith("~")) {
    reader.fail(
      node,
      path,
      `bind mount source "${source}" starts with "~": use an absolute path on the Machine or one relative to the compose file`,
    );
    return false;
  }
  const problem = absolutePathProblem("bind mount source", source);
  if (problem !== undefined) reader.fail(node, path, problem);
  return problem === undefined;
}

function checkVolumeSource(
  reader: Reader,
  node: Node | null,
  path: string,
  source: string,
  declared: ReadonlySet<string>,
): boolean {
  const problem = volumeNameProblem(source);
  if (problem !== undefined) {
    reader.fail(node, path, problem);
    return false;
  }
  if (!declared.has(source)) {
    reader.fail(node, path, `volume "${source}" is not declared under top-level "volumes"`);
    return false;
  }
  return true;
}

function shortMount(
  reader: Reader,
  node: Node | null,
  path: string,
  declared: ReadonlySet<string>,
): NormalizedMount | undefined {
  const value = reader.text(node, path);
  if (value === undefined) return undefined;
  const parts = value.split(":");
  const expected = "expected SOURCE:TARGET[:ro|rw]";
  if (parts.length === 1) {
    // An anonymous volume: one per container, removed with it, as Compose makes it.
    if (!checkTarget(reader, node, path, value)) return undefined;
    return { type: "volume", source: "", target: value, readOnly: false, noCopy: false, subpath: null };
  }
  if (parts.length > 3 || parts[0] === "" || parts[1] === "") {
    reader.fail(node, path, `invalid volume "${value}": ${expected}`);
    return undefined;
  }
  const [source, target, optionText] = parts;
  let readOnly = false;
  let noCopy = false;
  let propagation: string | null = null;
  for (const option of optionText === undefined ? [] : optionText.split(",")) {
    if (option === "ro" || option === "rw") readOnly = option === "ro";
    else if (option === "nocopy") noCopy = true;
    else if (PROPAGATION.has(option)) propagation = option;
    else if (option === "z" || option === "Z") {
      reader.warn(node, path, `volume option "${option}" is ignored`);
    } else {
      reader.fail(node, path, `invalid volume "${value}": unknown option "${option}": ${expected}`);
      return undefined;
    }
  }
  if (!checkTarget(reader, node, path, target)) return undefined;
  if (source.startsWith("/") || source.startsWith(".") || source.startsWith("~")) {
    if (!checkBindSource(reader, node, path, source)) return undefined;
    if (noCopy) reader.warn(node, path, `volume option "nocopy" has no effect on a bind mount`);
    return { type: "bind", source, target, readOnly, createHostPath: true, propagation };
  }
  if (propagation !== null) {
    reader.fail(node, path, `invalid volume "${value}": propagation applies only to bind mounts`);
    return undefined;
  }
  if (!checkVolumeSource(reader, node, path, source, declared)) return undefined;
  return { type: "volume", source, target, readOnly, noCopy, subpath: null };
}

function optionalText(
  reader: Reader,
  node: Node | null | undefined,
  path: string,
): string | null | undefined {
  if (node === undefined || node === null) return null;
  return reader.text(node, path);
}

function longMount(
  reader: Reader,
  node: Node,
  path: string,
  declared: ReadonlySet<string>,
): NormalizedMount | undefined {
  const keys = checkMapping(reader, node, path, MOUNT_KEYS, { where: "volume" });
  const errorsBefore = reader.errors.length;
  const typeEntry = keys.get("type");
  const type = typeEntry === undefined ? undefined : reader.text(typeEntry.value, typeEntry.path);
  if (typeEntry === undefined) reader.fail(node, path, `missing required key "type"`);
  const targetEntry = keys.get("target");
  const target = targetEntry === undefined ? undefined : reader.text(targetEntry.value, targetEntry.path);
  if (targetEntry === undefined) reader.fail(node, path, `missing required key "target"`);
  else if (target !== undefined) checkTarget(reader, targetEntry.value, targetEntry.path, target);
  const sourceEntry = keys.get("source");
  const source = optionalText(reader, sourceEntry?.value, sourceEntry?.path ?? path);
  const readOnlyEntry = keys.get("read_only");
  const readOnly = readOnlyEntry === undefined || readOnlyEntry.value === null
    ? false
    : reader.boolean(readOnlyEntry.value, readOnlyEntry.path) ?? false;
  for (const section of ["bind", "volume", "tmpfs"]) {
    const entry = keys.get(section);
    if (entry !== undefined && entry.value !== null && type !== undefined && type !== section) {
      reader.fail(entry.keyNode, entry.path, `key "${section}" does not apply to a mount of type "${type}"`);
    }
  }
  const options = (
    section: string,
    rules: typeof BIND_KEYS,
  ): Map<string, { value: Node | null; path: string }> => {
    const entry = keys.get(section);
    if (entry === undefined) return new Map();
    return checkMapping(reader, entry.value, entry.path, rules, { where: section });
  };
  if (type === "bind") {
    const bind = options("bind", BIND_KEYS);
    if (source === null) reader.fail(node, path, `missing required key "source" for a bind mount`);
    else if (source !== undefined && sourceEntry !== undefined) {
      checkBindSource(reader, sourceEntry.value, sourceEntry.path, source);
    }
    const create = bind.get("create_host_path");
    const createHostPath = create === undefined || create.value === null
      ? true
      : reader.boolean(create.value, create.path);
    const propagationEntry = bind.get("propagation");
    const propagation = optionalText(reader, propagationEntry?.value, propagationEntry?.path ?? path);
    if (typeof propagation === "string" && !PROPAGATION.has(propagation)) {
      reader.fail(
        propagationEntry?.value,
        propagationEntry?.path ?? path,
        `invalid propagation "${propagation}"`,
      );
    }
    if (reader.errors.length > errorsBefore || typeof source !== "string" || target === undefined) {
      return undefined;
    }
    return {
      type: "bind",
      source,
      target,
      readOnly,
      createHostPath: createHostPath ?? true,
      propagation: propagation ?? null,
    };
  }
  if (type === "volume") {
    const volume = options("volume", VOLUME_OPTION_KEYS);
    if (source !== null && source !== undefined && sourceEntry !== undefined) {
      checkVolumeSource(reader, sourceEntry.value, sourceEntry.path, source, declared);
    }
    const noCopyEntry = volume.get("nocopy");
    const noCopy = noCopyEntry === undefined || noCopyEntry.value === null
      ? false
      : reader.boolean(noCopyEntry.value, noCopyEntry.path);
    const subpathEntry = volume.get("subpath");
    const subpath = optionalText(reader, subpathEntry?.value, subpathEntry?.path ?? path);
    if (typeof subpath === "string" && (subpath.startsWith("/") || subpath.split("/").includes(".."))) {
      reader.fail(
        subpathEntry?.value,
        subpathEntry?.path ?? path,
        `invalid subpath "${subpath}": expected a relative path without ".."`,
      );
    }
    if (reader.errors.length > errorsBefore || source === undefined || target === undefined) {
      return undefined;
    }
    // No source: an anonymous volume, one per container.
    return {
      type: "volume",
      source: source ?? "",
      target,
      readOnly,
      noCopy: noCopy ?? false,
      subpath: subpath ?? null,
    };
  }
  if (type === "tmpfs") {
    const tmpfs = options("tmpfs", TMPFS_KEYS);
    if (source !== null && sourceEntry !== undefined) {
      reader.fail(sourceEntry.keyNode, sourceEntry.path, `a tmpfs mount takes no "source"`);
    }
    let sizeBytes: number | null = null;
    const sizeEntry = tmpfs.get("size");
    if (sizeEntry !== undefined && sizeEntry.value !== null) {
      const size = reader.text(sizeEntry.value, sizeEntry.path);
      const parsed = size === undefined ? undefined : parseBytes(size);
      if (typeof parsed === "number") sizeBytes = parsed;
      else if (parsed !== undefined) reader.fail(sizeEntry.value, sizeEntry.path, parsed.error);
    }
    const modeEntry = tmpfs.get("mode");
    const mode = modeEntry === undefined || modeEntry.value === null
      ? null
      : reader.integer(modeEntry.value, modeEntry.path, 0);
    if (reader.errors.length > errorsBefore || target === undefined) return undefined;
    return { type: "tmpfs", target, readOnly, sizeBytes, mode: mode ?? null };
  }
  if (type !== undefined) {
    reader.fail(
      typeEntry?.value,
      typeEntry?.path ?? path,
      `unsupported mount type "${type}": expected "volume", "bind" or "tmpfs"`,
    );
  }
  return undefined;
}
