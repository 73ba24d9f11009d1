import { join } from "node:path";
import {
  configFlags,
  daemonCommand,
  DEFAULT_LAYOUT,
  type Layout,
  layoutEnv,
  runtimeEnvironment,
} from "../permissions/mod.ts";
import { environmentLine, quoteExecWord, quotePath } from "./systemd_escape.ts";

/** The `ployzd` subcommands that run as long-lived systemd units. */
export type UnitSubcommand = "serve" | "dns" | "observe";

/** Where an installed release lives and where its Machine keeps its files. */
export interface UnitOptions {
  /** The deno binary that runs the release. */
  deno: string;
  /** The release tree: holds `deno.json`, `deno.lock`, `cmd/`, `lib/`, `node_modules/`, `dist/ployzd/` (the bundle). */
  appDir: string;
  /** The Machine's layout; relocated roots are passed to the program as `PLOYZ_*` variables. */
  layout?: Layout;
}

/** A generated unit: its file name and text. */
export interface UnitFile {
  /** File name, e.g. `ployz-dns.service`. */
  name: string;
  /** The unit file's text. */
  text: string;
}

// Shared sandbox. Never MemoryDenyWriteExecute: V8 needs writable-executable pages.
const COMMON_HARDENING = [
  "NoNewPrivileges=yes",
  "ProtectSystem=strict",
  "ProtectHome=yes",
  "PrivateTmp=yes",
  "ProtectKernelTunables=yes",
  "ProtectKernelModules=yes",
  "ProtectKernelLogs=yes",
  "ProtectControlGroups=yes",
  "ProtectClock=yes",
  "ProtectHostname=yes",
  "RestrictNamespaces=yes",
  "RestrictRealtime=yes",
  "RestrictSUIDSGID=yes",
  "LockPersonality=yes",
  "RemoveIPC=yes",
  "KeyringMode=private",
  "SystemCallArchitectures=native",
  "SystemCallFilter=@system-service",
  "SystemCallErrorNumber=EPERM",
  "UMask=0077",
];

interface UnitSpec {
  description: string;
  after: string[];
  /** Whether `<command> --probe` must pass before the command starts (`ExecStartPre`). */
  probe?: boolean;
  /** Directives specific to this unit's job. */
  service: (layout: Layout) => string[];
}

const SPECS: Record<UnitSubcommand, UnitSpec> = {
  serve: {
    description: "Ployz Machine daemon (Machine RPC, Docker, mesh, replicated store)",
    after: ["network-online.target", "docker.service"],
    service: (l) => [
      // Root, because docker.sock is root-equivalent anyway and the mesh needs netlink and /dev/net/tun.
      "CapabilityBoundingSet=CAP_NET_ADMIN CAP_NET_RAW CAP_NET_BIND_SERVICE CAP_DAC_OVERRIDE CAP_CHOWN CAP_FOWNER",
      "AmbientCapabilities=CAP_NET_ADMIN CAP_NET_RAW CAP_NET_BIND_SERVICE",
      "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK",
      "DeviceAllow=/dev/net/tun rw",
      // wireguard-go runs detached from serve; a serve restart must not take the mesh down with it.
      "KillMode=process",
      // DNS and the Observe Store run as their own runtime units, through the ployz-systemd door.
      environmentLine("PLOYZ_RUNTIME_UNITS", "systemd"),
      // /run/systemd/system: the door runs as serve's child, in this unit's mount namespace, and writes there
      // ployz-dns@a.service, ployz-dns@b.service and ployz-observe.service (each through a temp file renamed over
      // it), and removes the older ployz-dns.service; upgrade workers are transient units (systemd-run), no file.
      // It cannot be narrower: a ReadWritePaths entry binds only a path that exists when serve starts, and the
      // rename needs the directory. Units kept in a Ployz directory and linked in with `systemctl link --runtime`
      // would not be narrower in fact: serve could still rewrite ployz-observe.service, which runs as root, and
      // serve holds docker.sock, root-equivalent already. The boundary is the Deno permission sets: serve's may
      // run only the door, and only the door's may write here (deno.json `systemd`).
      `ReadWritePaths=${
        [l.dataDir, l.runDir, "/run/systemd/system", `-${l.dockerSocket}`].map((p) =>
          quotePath("ReadWritePaths", p)
        )
          .join(" ")
      }`,
      "Restart=always",
      "RestartSec=2",
    ],
  },
  dns: {
    description: "Ployz Internal DNS",
    after: ["network-online.target"],
    // New software starts serving only once it says it can serve the current spec.
    probe: true,
    service: () => [
      "DynamicUser=yes",
      // One dynamic user for both runtime slots (and the older single unit): TCP SO_REUSEPORT binds the
      // successor beside its predecessor only when both run as the same UID.
      "User=ployz-dns",
      "CapabilityBoundingSet=CAP_NET_BIND_SERVICE",
      "AmbientCapabilities=CAP_NET_BIND_SERVICE",
      "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
      "PrivateDevices=yes",
      "ProtectProc=invisible",
      "ProcSubset=pid",
      "Restart=always",
      "RestartSec=1",
      // Exit 3: this binary cannot serve the current spec; restarting it would only refuse again.
      "RestartPreventExitStatus=3",
    ],
  },
  observe: {
    description: "Ployz Observe Store (this Machine's logs and metrics)",
    after: ["docker.service"],
    service: (l) => [
      // Root only to read Docker's 0710 container directories; no other capability.
      "CapabilityBoundingSet=CAP_DAC_READ_SEARCH",
      "AmbientCapabilities=CAP_DAC_READ_SEARCH",
      "RestrictAddressFamilies=AF_UNIX",
      "PrivateNetwork=yes",
      "IPAddressDeny=any",
      "PrivateDevices=yes",
      `ReadWritePaths=${
        [join(l.dataDir, "observe"), l.runDir].map((p) => quotePath("ReadWritePaths", p)).join(" ")
      }`,
      // Deno refuses narrow reads of /proc and /sys/fs/cgroup themselves, so the unit mounts them read-only
      // under the run dir, where the observe set grants them.
      `BindReadOnlyPaths=${
        [
          `/proc:${join(l.runDir, "observe-host", "proc")}`,
          `/sys/fs/cgroup:${join(l.runDir, "observe-host", "cgroup")}`,
        ]
          .map((p) => quotePath("BindReadOnlyPaths", p)).join(" ")
      }`,
      environmentLine("PLOYZ_OBSERVE_PROC_ROOT", join(l.runDir, "observe-host", "proc")),
      environmentLine("PLOYZ_OBSERVE_CGROUP_ROOT", join(l.runDir, "observe-host", "cgroup")),
      "Restart=always",
      "RestartSec=2",
    ],
  },
};

/** The unit file name for a subcommand, e.g. `ployz-dns.service`. */
export function unitName(subcommand: UnitSubcommand): string {
  return `ployz-${subcommand}.service`;
}

/**
 * Renders the systemd unit for `ployzd <subcommand>`: `ExecStart` carries exactly the deno.json permission set of
 * the subcommand (relocated to the layout), plus the unit's own sandbox. Every value is escaped, and a value that
 * cannot be written safely (a newline, a relative path) throws {@link UnitValueError}.
 */
export function renderUnit(subcommand: UnitSubcommand, options: UnitOptions): UnitFile {
  const layout = options.layout ?? DEFAULT_LAYOUT;
  const spec = SPECS[subcommand];
  const argv = daemonCommand(subcommand, {
    deno: options.deno,
    config: ["--cached-only", ...configFlags(subcommand, join(options.appDir, "deno.json"))],
    layout,
    root: options.appDir,
  });
  const env = [
    environmentLine("DENO_DIR", `/var/cache/ployz/${subcommand}`),
    environmentLine("NO_COLOR", "1"),
    ...Object.entries(runtimeEnvironment(subcommand)).map(([k, v]) => environmentLine(k, v)),
    ...Object.entries(layoutEnv(layout, { relocatedOnly: true })).map(([k, v]) => environmentLine(k, v)),
  ];
  const lines = [
    "# Generated by ployzd install; changes are overwritten on the next install or upgrade.",
    "[Unit]",
    `Description=${spec.description}`,
    `After=${spec.after.join(" ")}`,
    "",
    "[Service]",
    "Type=simple",
    ...(spec.probe
      ? [`ExecStartPre=${[...argv, "--probe"].map((w) => quoteExecWord("ExecStartPre", w)).join(" ")}`]
      : []),
    `ExecStart=${argv.map((w) => quoteExecWord("ExecStart", w)).join(" ")}`,
    ...env,
    `CacheDirectory=ployz/${subcommand}`,
    ...spec.service(layout),
    ...COMMON_HARDENING,
    "",
    "[Install]",
    "WantedBy=multi-user.target",
    "",
  ];
  return { name: unitName(subcommand), text: lines.join("\n") };
}

/**
 * A subcommand's unit as a runtime unit (under `/run/systemd/system`, gone at reboot): the installed unit without
 * its `[Install]` section, saying who wrote it. `ployzd serve` writes the DNS and Observe Store units this way.
 */
export function renderRuntimeUnit(subcommand: UnitSubcommand, options: UnitOptions): UnitFile {
  const unit = renderUnit(subcommand, options);
  const text = unit.text
    .replace(
      /^# Generated by .*$/m,
      "# Generated by ployzd serve at every start; a runtime unit, gone at reboot.",
    )
    .replace(/\n\[Install\]\nWantedBy=[^\n]*\n/, "\n");
  return { name: unit.name, text };
}
