/**
 * The Compose loader: turns a Docker Compose file with Ployz's `x-` extensions into a
 * {@linkcode NormalizedProject}, the plain JSON saved as a Project's Saved State, and compares Service specs
 * to decide whether a container is UpToDate, NeedsUpdate or NeedsRecreate.
 *
 * The goal is that a file that works with `docker compose up` on one host deploys unchanged and does the same
 * thing on each Machine: plain `ports` publish on the host of each Machine running a replica (ports.ts), every
 * container setting Compose has is applied (keys.ts lists what is read, warned about and refused, and why),
 * profiles select Services as Compose does, `-f a -f b` and `include:` merge as Compose merges (merge.ts), and
 * secrets, configs and relative binds are shipped with the container (files.ts). Ployz's own extensions are
 * `x-ports`, `x-machines`, `x-caddy`, `x-pre_deploy` and `x-volumes`. Unknown keys are refused as
 * `docker compose config` refuses them; contradictions (`deploy.mode: global` with replicas) are refused.
 *
 * Every input is bounded (see limits.ts): the Compose file's size, each file it names (regular files only, never a
 * device or `/proc`), Services, replicas, interpolation depth and the keys visited through aliases and merge keys,
 * so a hostile file is refused in well under a second instead of hanging the CLI.
 *
 * Nothing here prints: problems are thrown as one {@linkcode ComposeError} listing each
 * {@linkcode ComposeIssue} with file, line and column; warnings are returned.
 *
 * @example
 * ```ts
 * import { loadCompose, serviceSpecDigest } from "./mod.ts";
 *
 * const { project, warnings } = loadCompose({
 *   path: "compose.yaml",
 *   text: "services:\n  web:\n    image: nginx:${TAG:-1.27}\n    x-ports: [app.example.com:80/https]\n",
 *   env: {},
 * });
 * console.log(project.services.web.image, warnings.length, serviceSpecDigest(project.services.web));
 * ```
 *
 * @module
 */

export { loadCompose } from "./load.ts";
export type { LoadComposeOptions, LoadedCompose } from "./load.ts";
export { type FileContents } from "./files.ts";
export { ComposeError, formatIssue } from "./issue.ts";
export type { ComposeIssue } from "./issue.ts";
export { INLINE_DOCKERFILE_NAME, MAX_INLINE_DOCKERFILE } from "./build.ts";
export type { SpecChange } from "./spec.ts";
export { parseEnvFile } from "./env_file.ts";
export { readBoundedFile } from "./limits.ts";
export type { EnvFileProblem, ParsedEnvFile } from "./env_file.ts";
export { formatDurationMs, parseBytes, parseDurationMs } from "./units.ts";
export { MAX_MONITOR_MS } from "./limits.ts";
export { canonicalJson } from "./canonical_json.ts";
export {
  constraintHolds,
  LABEL_LIMITS,
  labelKeyProblem,
  labelValueProblem,
  type MachineFacts,
  parseConstraint,
  type PlacementConstraint,
  placementRefusal,
  type PlacementRule,
} from "./placement.ts";
export { SERVING_LABELS, servingLabels, type ServingSource } from "./serving_labels.ts";
export type {
  BindMount,
  HostPort,
  IngressPort,
  NormalizedBuild,
  NormalizedDevice,
  NormalizedDeviceRequest,
  NormalizedFile,
  NormalizedHealthcheck,
  NormalizedMount,
  NormalizedPort,
  NormalizedProject,
  NormalizedResources,
  NormalizedService,
  NormalizedVolume,
  PreDeployHook,
  TmpfsMount,
  VolumeMount,
} from "./types.ts";
