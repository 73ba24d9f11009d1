/**
 * The normalized Project: plain JSON, every default filled, maps sorted by key. It is what is saved as the
 * Project's Saved State, and a Deploy Intent is derived from it. Readers must tolerate fields they do not
 * know; fields are only ever added.
 *
 * @module
 */

/** A loaded, validated Project. */
export interface NormalizedProject {
  /** Project name: a DNS label; an ownership namespace, not an identity. */
  name: string;
  /** Top-level `x-context`: the CLI context this file asks for, if any. */
  context: string | null;
  /** Services by name, sorted. */
  services: Record<string, NormalizedService>;
  /** Named volumes by Compose key, sorted: everything declared under `volumes:` or `x-volumes:`. */
  volumes: Record<string, NormalizedVolume>;
  /**
   * Services of the file left out because none of their `profiles` is enabled, sorted. A Deploy leaves their
   * containers from an earlier Deploy alone (absent in Saved State written before profiles were read).
   */
  profiledOut?: string[];
}

/** A named volume declared at top level. */
export interface NormalizedVolume {
  /** The Compose key services refer to. */
  name: string;
  /** True when the volume exists outside the Project and Ployz never creates or removes it. */
  external: boolean;
  /** The Docker volume name: `<project>_<name>` for Project volumes, the declared name for external ones. */
  dockerName: string;
  /** Volume driver, or null for Docker's default. */
  driver: string | null;
  /** Driver options, sorted. */
  driverOptions: Record<string, string>;
  /** Labels, sorted. */
  labels: Record<string, string>;
  /**
   * Maximum size from `x-volumes`, making this a Provisioned Volume (0: none given, the Machine's default Volume
   * size); null for a plain Docker volume.
   */
  sizeBytes: number | null;
}

/** An HTTP(S) ingress route through Caddy (`x-ports: "app.example.com:80/https"`). */
export interface IngressPort {
  /** Discriminant. */
  kind: "ingress";
  /** Explicit hostname (contains a dot), a Cluster-Domain label (no dot), or null for an assigned name. */
  hostname: string | null;
  /** Port Caddy listens on: 80 for http, 443 for https unless given. */
  loadBalancerPort: number;
  /** Port inside the container. */
  containerPort: number;
  /** Protocol Caddy serves. */
  protocol: "http" | "https";
}

/** A port published on the Machine's own address (`x-ports: "8080:80/tcp@host"` or `mode: host`). */
export interface HostPort {
  /** Discriminant. */
  kind: "host";
  /** Address or CIDR prefix to bind, or null for every address. */
  hostIp: string | null;
  /** Port on the Machine; 0 for one Docker picks (a Compose port written without a published one). */
  publishedPort: number;
  /** Port inside the container. */
  containerPort: number;
  /** Transport protocol. */
  protocol: "tcp" | "udp";
}

/** A port publication. */
export type NormalizedPort = IngressPort | HostPort;

/** A named volume mounted into the container. */
export interface VolumeMount {
  /** Discriminant. */
  type: "volume";
  /** Compose key of the volume (see {@linkcode NormalizedProject.volumes}); empty for an anonymous volume. */
  source: string;
  /** Absolute path inside the container. */
  target: string;
  /** Mounted read-only. */
  readOnly: boolean;
  /** Do not copy the image's files into a new volume. */
  noCopy: boolean;
  /** Relative path inside the volume to mount instead of its root. */
  subpath: string | null;
}

/** A path on the Machine mounted into the container. */
export interface BindMount {
  /** Discriminant. */
  type: "bind";
  /** Absolute path on the Machine. */
  source: string;
  /** Absolute path inside the container. */
  target: string;
  /** Mounted read-only. */
  readOnly: boolean;
  /** Create the Machine path when it is missing. */
  createHostPath: boolean;
  /** Bind propagation (`rprivate`, `shared`, …), or null for Docker's default. */
  propagation: string | null;
}

/** A memory-backed mount. */
export interface TmpfsMount {
  /** Discriminant. */
  type: "tmpfs";
  /** Absolute path inside the container. */
  target: string;
  /** Mounted read-only. */
  readOnly: boolean;
  /** Size limit, or null for Docker's default. */
  sizeBytes: number | null;
  /** File mode of the mount point, or null for Docker's default. */
  mode: number | null;
}

/** A container mount. */
export type NormalizedMount = VolumeMount | BindMount | TmpfsMount;

/** The container's healthcheck: the image's own, disabled, or configured here. */
export type NormalizedHealthcheck =
  | { kind: "image" }
  | { kind: "disabled" }
  | {
    kind: "configured";
    /** Docker form: `["CMD", …]` or `["CMD-SHELL", "…"]`. */
    test: string[];
    intervalMs: number | null;
    timeoutMs: number | null;
    startPeriodMs: number | null;
    startIntervalMs: number | null;
    retries: number | null;
  };

/** CPU and memory limits and ulimits. */
export interface NormalizedResources {
  /** CPU limit in billionths of a CPU, or null for none. */
  nanoCpus: number | null;
  /** Memory limit, or null for none. */
  memoryBytes: number | null;
  /** Memory soft limit, or null for none. */
  memoryReservationBytes: number | null;
  /** Size of `/dev/shm`, or null for Docker's default. */
  shmSizeBytes: number | null;
  /** Ulimits by name, sorted. */
  ulimits: Record<string, { soft: number; hard: number }>;
}

/** A command run to completion before the Service's containers are replaced (`x-pre_deploy`). */
export interface PreDeployHook {
  /** Command run in a one-off container from the Service's image. */
  command: string[];
  /** Extra environment for the hook, sorted. */
  environment: Record<string, string>;
  /** Run the hook privileged, or null to inherit. */
  privileged: boolean | null;
  /** How long the hook may run, or null for the default. */
  timeoutMs: number | null;
}

/** One Service after normalization. */
export interface NormalizedService {
  /** Service name: a DNS label. */
  name: string;
  /** Image reference as written (after interpolation); resolving it to a digest is the planner's job. */
  image: string;
  /** `replicated` runs `replicas` containers; `global` one per eligible Machine. */
  mode: "replicated" | "global";
  /** Replica count for `replicated`; null for `global`. */
  replicas: number | null;
  /** Command override, or null for the image's. */
  command: string[] | null;
  /** Entrypoint override, or null for the image's. */
  entrypoint: string[] | null;
  /** `env_file` contents overlaid by `environment`, sorted. */
  environment: Record<string, string>;
  /** Labels, sorted. */
  labels: Record<string, string>;
  /** Port publications, in file order. */
  ports: NormalizedPort[];
  /** Mounts, in file order. */
  mounts: NormalizedMount[];
  /** Healthcheck override. */
  healthcheck: NormalizedHealthcheck;
  /** Docker restart policy: `no`, `always`, `unless-stopped`, `on-failure` or `on-failure:N`. */
  restart: string;
  /** User (`uid[:gid]` or name), or null for the image's. */
  user: string | null;
  /** Working directory, or null for the image's. */
  workingDir: string | null;
  /** Container hostname, or null for Docker's default. */
  hostname: string | null;
  /** `host:address` entries, in file order. */
  extraHosts: string[];
  /** Capabilities added. */
  capAdd: string[];
  /** Capabilities dropped. */
  capDrop: string[];
  /** Run privileged. */
  privileged: boolean;
  /** Run an init process, or null for the daemon's default. */
  init: boolean | null;
  /** Allocate a TTY. */
  tty: boolean;
  /** Keep stdin open. */
  stdinOpen: boolean;
  /** Namespaced kernel parameters, sorted. */
  sysctls: Record<string, string>;
  /** Time between the stop signal and SIGKILL, or null for Docker's default. */
  stopGracePeriodMs: number | null;
  /** Signal that stops the container, or null for the image's. */
  stopSignal: string | null;
  /** When to pull the image; `always` recreates on every Deploy. */
  pullPolicy: "always" | "missing" | "never";
  /** Log driver (default `local`) and its options. */
  logging: { driver: string; options: Record<string, string> };
  /** Limits. */
  resources: NormalizedResources;
  /** Services this one starts after, sorted. */
  dependsOn: string[];
  /** Compose profiles; empty means always enabled. */
  profiles: string[];
  /** How replacements of this Service are ordered and watched. */
  update: {
    /** Explicit update order, or null to let the planner choose. */
    order: "start-first" | "stop-first" | null;
    /** How long to watch a new container before calling it healthy, or null for the default. */
    monitorMs: number | null;
    /**
     * `update_config.parallelism`: how many of its containers are replaced at once (0: all), or null for one
     * at a time. Absent from a Saved State written before it was read: one at a time too.
     */
    parallelism?: number | null;
    /**
     * `update_config.delay`: how long a replacement waits after the one it rolls after completed, or null for
     * none. Absent from a Saved State written before it was read: none.
     */
    delayMs?: number | null;
  };
  /** `x-machines`: names or IDs of Machines this Service may run on; empty means any. */
  machines: string[];
  /**
   * `deploy.placement.constraints`, normalized (`node.labels.region == eu`); every one must hold on a Machine.
   * Absent when none are given, so Saved State written before it was read reads the same.
   */
  constraints?: string[];
  /** `x-caddy`: Caddyfile fragment text (read from the file when given as a path), or null. */
  caddy: string | null;
  /** `x-pre_deploy`, or null. */
  preDeploy: PreDeployHook | null;
  /** Root filesystem mounted read-only (absent in Saved State written before it was read: false). */
  readOnly?: boolean;
  /** `security_opt` entries as written. */
  securityOpt?: string[];
  /** `devices`: device nodes of the Machine. */
  devices?: NormalizedDevice[];
  /** `gpus` and `deploy.resources.reservations.devices`. */
  deviceRequests?: NormalizedDeviceRequest[];
  /** `pids_limit` / `deploy.resources.limits.pids`, or null for none. */
  pidsLimit?: number | null;
  /**
   * `depends_on` conditions other than `service_started`, by dependency, sorted. A dependency some Service waits
   * to complete (`service_completed_successfully`) runs to exit 0 before its dependants start.
   */
  dependsOnConditions?: Record<string, "service_healthy" | "service_completed_successfully">;
  /** Secrets, configs and relative bind mounts, shipped with the create request: digests here, never content. */
  files?: NormalizedFile[];
  /**
   * `build:`: the image is built on a Machine of the Cluster from a context on the operator's side. Until the
   * Deploy reads the context, `image` is the repository `<project>-<service>`; the Deploy then sets it to
   * `<project>-<service>:<content digest>`.
   */
  build?: NormalizedBuild;
}

/** How a Service's image is built (`build:`). */
export interface NormalizedBuild {
  /** Absolute path of the context directory on the operator's side. */
  context: string;
  /** Dockerfile path inside the context, or null for `Dockerfile`. */
  dockerfile: string | null;
  /** The Dockerfile's text, given in the Compose file, or null. */
  dockerfileInline: string | null;
  /** Build arguments, sorted. */
  args: Record<string, string>;
  /** Stage to build, or null for the last one. */
  target: string | null;
  /** Labels of the image, sorted. */
  labels: Record<string, string>;
  /** Images on the building Machine whose layers may serve as cache. */
  cacheFrom: string[];
  /** Build without Docker's layer cache. */
  noCache: boolean;
  /** The `image:` the file names, tagged too; null when it names none. */
  image: string | null;
}

/** A file the container gets from the operator's side; its content travels only with the create request. */
export interface NormalizedFile {
  /** Where it comes from: a Compose secret, a config, or a relative bind mount. */
  kind: "secret" | "config" | "bind";
  /** The secret or config name, or the path relative to the compose file. */
  name: string;
  /** Absolute path inside the container. */
  target: string;
  /** Owner uid, or null for root. */
  uid: string | null;
  /** Owner gid, or null for root. */
  gid: string | null;
  /** File mode bits. */
  mode: number;
  /** `sha256:<hex>` of the content: a changed content is a changed spec. */
  digest: string;
  /** Content size in bytes. */
  size: number;
}

/** A device node mapped into the container. */
export interface NormalizedDevice {
  /** Path on the Machine. */
  host: string;
  /** Path inside the container. */
  container: string;
  /** cgroup permissions (`rwm`). */
  permissions: string;
}

/** A device request through a driver (GPUs). */
export interface NormalizedDeviceRequest {
  /** Driver, or empty for the default. */
  driver?: string;
  /** How many (-1 for all); absent when `deviceIds` names them. */
  count?: number;
  /** Device IDs. */
  deviceIds?: string[];
  /** Capability sets (`[["gpu"]]`). */
  capabilities: string[][];
  /** Driver options. */
  options?: Record<string, string>;
}
