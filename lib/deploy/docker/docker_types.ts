/**
 * The parts of Engine API responses (v1.41) the adapter reads. Everything is optional where Docker may omit it.
 *
 * @module
 */

/** `Config.Healthcheck` and `HostConfig`-free healthcheck shape, durations in nanoseconds. */
export interface DockerHealthConfig {
  Test?: string[];
  Interval?: number;
  Timeout?: number;
  Retries?: number;
  StartPeriod?: number;
}

/** One probe result in `State.Health.Log`. */
export interface DockerHealthLogEntry {
  Start?: string;
  End?: string;
  ExitCode?: number;
  Output?: string;
}

/** One host binding of a published port. */
export interface DockerPortBinding {
  HostIp?: string;
  HostPort?: string;
}

/** One network endpoint of a container. */
export interface DockerEndpoint {
  NetworkID?: string;
  IPAddress?: string;
  GlobalIPv6Address?: string;
  Aliases?: string[] | null;
  MacAddress?: string;
}

/** `GET /containers/{id}/json`. */
export interface DockerContainerInspect {
  Id: string;
  Name: string;
  Created?: string;
  Image?: string;
  RestartCount?: number;
  State?: {
    Status?: string;
    Running?: boolean;
    Restarting?: boolean;
    OOMKilled?: boolean;
    Dead?: boolean;
    Pid?: number;
    ExitCode?: number;
    Error?: string;
    StartedAt?: string;
    FinishedAt?: string;
    Health?: { Status?: string; FailingStreak?: number; Log?: DockerHealthLogEntry[] | null };
  };
  Config?: {
    Image?: string;
    Cmd?: string[] | null;
    Entrypoint?: string[] | null;
    Env?: string[] | null;
    Labels?: Record<string, string> | null;
    User?: string;
    WorkingDir?: string;
    StopSignal?: string;
    StopTimeout?: number;
    Healthcheck?: DockerHealthConfig;
  };
  HostConfig?: {
    LogConfig?: { Type?: string; Config?: Record<string, string> };
    PortBindings?: Record<string, DockerPortBinding[] | null> | null;
    RestartPolicy?: { Name?: string; MaximumRetryCount?: number };
  };
  NetworkSettings?: {
    Ports?: Record<string, DockerPortBinding[] | null> | null;
    Networks?: Record<string, DockerEndpoint> | null;
  };
}

/** One row of `GET /containers/json`. */
export interface DockerContainerSummary {
  Id: string;
  Names?: string[];
  Labels?: Record<string, string> | null;
  State?: string;
}

/** `GET /networks/{id}` and rows of `GET /networks`. */
export interface DockerNetwork {
  Id: string;
  Name: string;
  Driver?: string;
  Labels?: Record<string, string> | null;
  IPAM?: { Config?: { Subnet?: string; Gateway?: string }[] | null };
  Options?: Record<string, string> | null;
  Containers?: Record<string, { Name?: string }> | null;
}

/** `GET /volumes/{name}`. */
export interface DockerVolume {
  Name: string;
  Driver?: string;
  Labels?: Record<string, string> | null;
}

/** `GET /images/{name}/json`. */
export interface DockerImage {
  /** Image id (`sha256:` and the config digest). */
  Id: string;
  /** Tags. */
  RepoTags?: string[] | null;
  /** Registry digests it was pulled or pushed by (`repo@sha256:…`). */
  RepoDigests?: string[] | null;
  /** Bytes. */
  Size?: number;
  /** When it was built. */
  Created?: string | number;
  /** Its labels. */
  Labels?: Record<string, string> | null;
}

/** One message of `GET /events`. */
export interface DockerEventMessage {
  Type?: string;
  Action?: string;
  Actor?: { ID?: string; Attributes?: Record<string, string> };
  time?: number;
  timeNano?: number;
}
