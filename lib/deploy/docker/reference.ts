/**
 * Image references as Docker reads them (`[host[:port]/]path[:tag][@digest]`, the distribution grammar), the
 * registry each one names, and the pinned form a Deploy runs (`name:tag@sha256:…`). Pure: no Docker, no network.
 *
 * @module
 */

/** A parsed image reference. */
export interface ImageRef {
  /** The reference as written. */
  text: string;
  /** Registry host (and port) as written, or `docker.io` when none is written. */
  domain: string;
  /** Repository path on the registry, with Docker Hub's `library/` added for a one-part name. */
  path: string;
  /** Tag as written, if any. */
  tag?: string;
  /** Digest as written, if any (`sha256:…`). */
  digest?: string;
}

const COMPONENT = "[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*";
const DOMAIN_PART = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
const DOMAIN = new RegExp(`^${DOMAIN_PART}(?:\\.${DOMAIN_PART})*(?::[0-9]{1,5})?$`);
const PATH = new RegExp(`^${COMPONENT}(?:/${COMPONENT})*$`);
const TAG = /^[\w][\w.-]{0,127}$/;
const DIGEST = /^sha256:[a-f0-9]{64}$/;
/** Docker's bound on a repository name. */
const MAX_NAME = 255;

/** Docker Hub's names for itself, and the key `docker login` writes in config.json. */
export const DOCKER_HUB = "docker.io";
const HUB_ALIASES = new Set([DOCKER_HUB, "index.docker.io", "registry-1.docker.io"]);
const HUB_CONFIG_KEY = "https://index.docker.io/v1/";

/** Parses `text`; a string says why it is not a valid reference. */
export function parseImageRef(text: string): ImageRef | string {
  if (text === "") return "it is empty";
  if (text.length > 1024) return "it is longer than 1024 characters";
  if (text !== text.trim()) return "it has surrounding spaces";
  let rest = text;
  let digest: string | undefined;
  const at = rest.indexOf("@");
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) return `digest "${digest}" is not "sha256:" and 64 lowercase hex digits`;
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(":");
  if (colon > rest.lastIndexOf("/")) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) return `tag "${tag}" is not letters, digits, "_", "." or "-" (at most 128)`;
  }
  if (rest === "") return "the name is empty";
  if (rest.length > MAX_NAME) return `the name is longer than ${MAX_NAME} characters`;
  const slash = rest.indexOf("/");
  const first = slash < 0 ? "" : rest.slice(0, slash);
  const hasDomain = slash >= 0 && (first.includes(".") || first.includes(":") || first === "localhost" ||
    first !== first.toLowerCase());
  let domain = DOCKER_HUB;
  let path = rest;
  if (hasDomain) {
    domain = first;
    path = rest.slice(slash + 1);
    if (!DOMAIN.test(domain)) return `registry host "${domain}" is not a host name with an optional port`;
  }
  if (!PATH.test(path)) {
    return `repository "${path}" must be lowercase letters and digits, separated by "/", ".", "_" or "-"`;
  }
  if (HUB_ALIASES.has(domain)) {
    domain = DOCKER_HUB;
    if (!path.includes("/")) path = `library/${path}`;
  }
  return {
    text,
    domain,
    path,
    ...(tag === undefined ? {} : { tag }),
    ...(digest === undefined ? {} : { digest }),
  };
}

/** The repository a reference names, fully qualified: `docker.io/library/nginx`, `reg.example:5000/app`. */
export function repositoryOf(ref: ImageRef): string {
  return `${ref.domain}/${ref.path}`;
}

/** The key of the registry's entry in Docker's config.json (`auths`, `credHelpers`). */
export function registryKey(ref: ImageRef): string {
  return ref.domain === DOCKER_HUB ? HUB_CONFIG_KEY : ref.domain;
}

/** The host name a person writes for a registry (`ployz registry login HOST`): Docker Hub is `docker.io`. */
export function registryHost(key: string): string {
  const bare = key.replace(/^https?:\/\//, "").replace(/\/.*$/, "");
  return HUB_ALIASES.has(bare) ? DOCKER_HUB : bare;
}

/** `text` pinned to `digest`: the tag stays for people, Docker runs the digest (`nginx:1.27@sha256:…`). */
export function pinRef(ref: ImageRef, digest: string): string {
  const at = ref.text.indexOf("@");
  return `${at < 0 ? ref.text : ref.text.slice(0, at)}@${digest}`;
}

/**
 * The digest of `repoDigests` (an image's `RepoDigests`, `repo@sha256:…`) that belongs to `ref`'s repository,
 * or `undefined` when the image holds none for it (built or loaded here, never pulled from or pushed to it).
 */
export function digestFor(ref: ImageRef, repoDigests: readonly string[]): string | undefined {
  const wanted = repositoryOf(ref);
  for (const entry of repoDigests) {
    const parsed = parseImageRef(entry);
    if (typeof parsed === "string" || parsed.digest === undefined) continue;
    if (repositoryOf(parsed) === wanted) return parsed.digest;
  }
  return undefined;
}
