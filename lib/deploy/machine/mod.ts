/**
 * The Machine side of Deploy: what a Machine's daemon needs to act on its own containers, and nothing of the
 * client side. It is the Docker adapter ({@linkcode openEngine}) plus the rules each Machine re-checks on every
 * create (label limits, placement) and the serving labels its projections read back.
 *
 * Why a narrower door than `lib/deploy/mod.ts`: that one also carries the Compose loader (with the YAML parser),
 * the planner and the executor, which only the CLI runs. `ployzd serve` imports this door alone, so its process
 * never loads them (`tests/module_graph_test.ts` holds it to that).
 *
 * @module
 */

export {
  BuildError,
  type BuildOptions,
  type BuiltImage,
  type ContainerDns,
  type ContainerEvent,
  type ContainerEventAction,
  type ContainerSpec,
  type ContainerState,
  type CreatedContainer,
  type CreateOptions,
  type Deadlines,
  type DemuxedFrame,
  Demuxer,
  type DeviceRequestSpec,
  type DeviceSpec,
  DockerError,
  type DockerImage,
  type Engine,
  type EngineInfo,
  type EngineOptions,
  EVENT_ACTIONS,
  type EventOptions,
  type ExecConnection,
  type ExecOptions,
  type ExecState,
  fileCopyName,
  type FileSpec,
  type HealthcheckSpec,
  type HealthEvidence,
  type HealthOptions,
  type HealthProbe,
  type HealthResult,
  type HealthState,
  type LabelKeys,
  LABELS,
  type ListedImage,
  type LoadedImages,
  type LogPolicy,
  type LogSpec,
  type MountSpec,
  type NetworkAttachment,
  type NetworkInfo,
  type NetworkSpec,
  type ObservedContainer,
  type ObservedPort,
  openEngine,
  type OwnedFilter,
  type PortSpec,
  type PullProgress,
  type RegistryAuth,
  type Rescan,
  type ResourcesSpec,
  type RestartSpec,
  validateSpec,
} from "../docker/mod.ts";
export {
  LABEL_LIMITS,
  labelKeyProblem,
  labelValueProblem,
  type MachineFacts,
  placementRefusal,
  type PlacementRule,
} from "../compose/placement.ts";
export { SERVING_LABELS, servingLabels, type ServingSource } from "../compose/serving_labels.ts";
export type { MachineApi } from "../plan/machine_api.ts";
