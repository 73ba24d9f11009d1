/**
 * Names that become Docker object names, DNS labels and file paths. Nothing is normalised: a name that does
 * not fit is refused with the rule it breaks, except a Project name derived from a directory, which is
 * lowercased and stripped of other characters first, as Compose does.
 *
 * @module
 */

const DNS_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const VOLUME_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const DOCKER_OBJECT_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,254}$/;

const DNS_LABEL_RULE =
  'expected 1-63 lowercase letters, digits or "-", starting and ending with a letter or digit';

/** Returns why `name` cannot be a Project or Service name (a DNS label), or undefined when it can. */
export function dnsLabelProblem(kind: string, name: string): string | undefined {
  if (DNS_LABEL.test(name)) return undefined;
  return `invalid ${kind} name "${name}": ${DNS_LABEL_RULE}`;
}

/** Returns why `name` cannot be a Compose volume key, or undefined when it can. */
export function volumeNameProblem(name: string): string | undefined {
  if (VOLUME_NAME.test(name)) return undefined;
  return `invalid volume name "${name}": expected 1-63 lowercase letters, digits, "-" or "_", starting with a letter or digit`;
}

/** Returns why `name` cannot be an existing Docker object's name (an external volume), or undefined. */
export function dockerNameProblem(kind: string, name: string): string | undefined {
  if (DOCKER_OBJECT_NAME.test(name)) return undefined;
  return `invalid ${kind} name "${name}": expected letters, digits, "_", "." or "-", starting with a letter or digit`;
}

/** The Project name Compose derives from a directory name: lowercased, other characters dropped. */
export function projectNameFromDirectory(directory: string): string {
  return directory.toLowerCase().replace(/[^a-z0-9_-]/g, "").replace(/^[_-]+/, "");
}

/**
 * Returns why `path` cannot be an absolute path inside a container or on a Machine: it must start with `/`
 * and contain no `.` or `..` segment.
 */
export function absolutePathProblem(kind: string, path: string): string | undefined {
  if (!path.startsWith("/")) return `invalid ${kind} "${path}": expected an absolute path`;
  if (path.split("/").some((segment) => segment === ".." || segment === ".")) {
    return `invalid ${kind} "${path}": "." and ".." segments are not allowed`;
  }
  if (path.includes("\0")) return `invalid ${kind} "${path}": contains a NUL character`;
  return undefined;
}
