/**
 * The Docker adapter of a Machine's daemon: `openEngine` gives an `Engine` over the Machine's own Docker, through
 * HTTP on its Unix socket.
 *
 * - **One deadline policy.** Every request goes through one helper that bounds it by class (inspect and list
 *   10 s, create 30 s, start 60 s, stop = grace + 15 s, remove 30 s, pull 10 min; image load and events have no
 *   deadline and are cancelled by their signal) and turns a miss into `DockerError{code:"unavailable"}` naming the
 *   operation.
 * - **Ownership.** Everything Ployz creates carries `ployz.managed=1` and `ployz.machine=<machine id>`; containers
 *   also carry `ployz.project`, `ployz.service`, `ployz.deployment`, `ployz.slot`, `ployz.creation_key`,
 *   `ployz.spec_digest` and `ployz.spec` (the spec without environment values). Start, stop, remove, rename, exec and
 *   network connect inspect their target first and refuse (`conflict`) what this Machine does not own.
 * - **Creation keys.** A create whose creation key already names a container returns that container.
 * - **Logs.** Every container uses Docker's `local` log driver, 5 × 20 MB uncompressed, read by the Observe Store
 *   from `localLogPath(dataRoot, id)`.
 * - **Observation.** Container-scoped inspects and label-filtered lists; observations carry environment keys, never
 *   values.
 *
 * @module
 */

export { DockerError } from "./errors.ts";
export { type Deadlines } from "./deadline.ts";
export { type LabelKeys, LABELS } from "./labels.ts";
export {
  type ContainerDns,
  type ContainerSpec,
  type DeviceRequestSpec,
  type DeviceSpec,
  fileCopyName,
  type FileSpec,
  type HealthcheckSpec,
  type LogPolicy,
  type LogSpec,
  type MountSpec,
  type NetworkAttachment,
  type PortSpec,
  type ResourcesSpec,
  type RestartSpec,
  specDigest,
  validateSpec,
} from "./spec.ts";
export { EVENT_ACTIONS } from "./observe.ts";
export type {
  ContainerEvent,
  ContainerEventAction,
  ContainerState,
  HealthProbe,
  HealthState,
  ObservedContainer,
  ObservedPort,
} from "./observe.ts";
export type { CreatedContainer, CreateOptions, OwnedFilter } from "./containers.ts";
export { MASQUERADE_OPTION } from "./network.ts";
export type { NetworkInfo, NetworkSpec } from "./network.ts";
export type { ListedImage, LoadedImages, PullProgress } from "./images.ts";
export type { DockerImage } from "./docker_types.ts";
export { type DemuxedFrame, Demuxer } from "./demux.ts";
export type { RegistryAuth } from "./client.ts";
export {
  digestFor,
  DOCKER_HUB,
  type ImageRef,
  parseImageRef,
  pinRef,
  registryHost,
  repositoryOf,
} from "./reference.ts";
export { BUILD_TAIL_LINES, BuildError, type BuildOptions, type BuiltImage } from "./build.ts";
export type { EventOptions } from "./events.ts";
export type { ExecConnection, ExecOptions, ExecState } from "./exec.ts";
export type { HealthEvidence, HealthOptions, HealthResult } from "./health.ts";
export {
  type Engine,
  type EngineInfo,
  type EngineOptions,
  localLogPath,
  openEngine,
  type Rescan,
} from "./engine.ts";
