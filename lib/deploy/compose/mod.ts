/**
 * The Compose loader: turns a Docker Compose file with Ployz's `x-` extensions into a
 * {@linkcode NormalizedProject}, the plain JSON saved as a Project's Saved State, and compares Service specs
 * to decide whether a container is UpToDate, NeedsUpdate or NeedsRecreate.
 *
 * Semantics: the supported key subset, `x-ports` / `x-machines` /
 * `x-caddy` / `x-pre_deploy`, the keys it refuses (`security_opt`, `read_only: true`, `deploy.placement`,
 * port ranges, `service_completed_successfully`) and those it warns about (`networks`, `dns`, `tmpfs`, …,
 * the typos `x-port` and `x-machine`). Where this loader differs (no image builder, so `build` without
 * `image` is refused; `stop_signal` and `x-volumes` are read; unknown keys are refused as
 * `docker compose config` refuses them) the file that does it says so.
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
export { ComposeError, formatIssue } from "./issue.ts";
export type { ComposeIssue } from "./issue.ts";
export { compareServiceSpecs, serviceSpecDigest } from "./spec.ts";
export type { SpecChange, SpecComparison } from "./spec.ts";
export { interpolate } from "./interpolate.ts";
export type { Interpolated } from "./interpolate.ts";
export { parseEnvFile } from "./env_file.ts";
export {
  FileLimitError,
  MAX_COMPOSE_BYTES,
  MAX_FILE_BYTES,
  MAX_REPLICAS,
  MAX_SERVICES,
  readBoundedFile,
} from "./limits.ts";
export type { EnvFileProblem, ParsedEnvFile } from "./env_file.ts";
export { parseBytes, parseDurationMs } from "./units.ts";
export { canonicalJson } from "./canonical_json.ts";
export { SERVING_LABELS, servingLabels, type ServingSource } from "./serving_labels.ts";
export type {
  BindMount,
  HostPort,
  IngressPort,
  NormalizedDevice,
  NormalizedDeviceRequest,
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
