/**
 * Machine-local Volume locality (docs/bets.md, "Machine-local admission"): a Service that mounts a Provisioned
 * Volume runs on the Machine holding that Volume's Writer. Only a Volume Run (`ployz volume move`) takes the
 * Writer elsewhere, so `x-machines` cannot pull the Service away from its data, and the next Deploy of an
 * unchanged file after a Move follows the Writer. Decided from each Machine's report of its own copies, taken in
 * the Snapshot; pure.
 *
 * @module
 */

import type { NormalizedProject, NormalizedService } from "../compose/types.ts";
import { DeployError } from "./errors.ts";
import type { MachineObservation, Snapshot } from "./snapshot.ts";

/** A Machine's copy of one Volume, as it reported it. */
export interface ObservedVolumeCopy {
  /** The Volume's name (its Docker name, `<project>_<name>`). */
  name: string;
  /** `writer`, `mirror` or `none`; a newer daemon may report others. */
  role: string;
  /** A Mirror's Snapshot. */
  snapshot?: string;
  /** A Writer's epoch. */
  epoch?: number;
}

/** Where a Service goes because of its Provisioned Volumes, and why. */
export interface VolumePlacement {
  /** The Service. */
  service: string;
  /** The Provisioned Volumes it mounts. */
  volumes: string[];
  /** The Machine holding their Writer. */
  machineId: string;
  /** Its name. */
  machineName: string;
  /** What `x-machines` names, when it names Machines other than the Writer's. */
  overrides?: string[];
}

/** The Provisioned Volumes (Docker names) a Service mounts. */
export function provisionedVolumes(project: NormalizedProject, service: NormalizedService): string[] {
  const out = new Set<string>();
  for (const m of service.mounts) {
    if (m.type !== "volume" || m.source === "") continue;
    const volume = project.volumes[m.source];
    if (volume === undefined || volume.external || volume.sizeBytes === null) continue;
    out.add(volume.dockerName);
  }
  return [...out].sort();
}

/** Every Provisioned Volume (Docker names) the Project's Services mount. */
export function projectProvisionedVolumes(project: NormalizedProject): string[] {
  return [...new Set(Object.values(project.services).flatMap((s) => provisionedVolumes(project, s)))].sort();
}

function describe(copy: ObservedVolumeCopy): string {
  return copy.role === "mirror" ? `Mirror@${copy.snapshot ?? "?"}` : copy.role;
}

/**
 * The Machine a Service must run on because it holds the Writer of every Provisioned Volume the Service mounts;
 * `undefined` when the Service mounts none, or none of them exists yet (its first Machine makes it). Throws when
 * the Volumes have no single Writer: two Writers, Writers on different Machines, or only Mirrors (a Volume Run
 * left it without a Writer), naming the copies seen and the Machines that did not report.
 */
export function volumePlacement(
  project: NormalizedProject,
  service: NormalizedService,
  snapshot: Snapshot,
  warnings: string[] = [],
): VolumePlacement | undefined {
  // A Global Service has a slot on every Machine: a Provisioned Volume there is one copy per Machine, not one.
  if (service.mode === "global") return undefined;
  const volumes = provisionedVolumes(project, service);
  if (volumes.length === 0) return undefined;
  const where = `Service "${project.name}/${service.name}"`;
  const silent = [
    ...snapshot.machines.filter((m) => m.volumes === undefined).map((m) =>
      `"${m.machineName}" did not report its Volumes${
        m.volumesError === undefined ? "" : ` (${m.volumesError})`
      }`
    ),
    ...snapshot.failures.map((f) => `"${f.machineName}" was not observed`),
  ];
  let holder: MachineObservation | undefined;
  for (const volume of volumes) {
    const copies = snapshot.machines.flatMap((m) => {
      const copy = m.volumes?.find((v) => v.name === volume);
      return copy === undefined || copy.role === "none" ? [] : [{ m, copy }];
    });
    const writers = copies.filter((c) => c.copy.role === "writer");
    const seen = copies.map((c) => `${describe(c.copy)} on "${c.m.machineName}"`).join(", ");
    if (writers.length > 1) {
      throw new DeployError(
        "conflict",
        `${where} mounts Volume "${volume}", which has ${writers.length} Writers (${seen}): move or release one first`,
        { service: service.name, volume },
      );
    }
    if (writers.length === 0) {
      if (copies.length === 0) {
        if (silent.length > 0) {
          warnings.push(
            `Volume "${volume}" of ${where} is on no Machine that reported; ${
              silent.join(", ")
            }: if one holds its Writer, this Deploy cannot see it`,
          );
        }
        continue;
      }
      throw new DeployError(
        "conflict",
        `${where} mounts Volume "${volume}", which has no Writer among the Machines that reported (${seen}${
          silent.length === 0 ? "" : `; ${silent.join(", ")}`
        }): finish its Volume Run first ("ployz volume move ${volume} --to MACHINE")`,
        { service: service.name, volume },
      );
    }
    const writer = writers[0].m;
    if (holder !== undefined && holder !== writer) {
      throw new DeployError(
        "conflict",
        `${where} mounts Volumes whose Writers are on different Machines ("${holder.machineName}" and "${writer.machineName}"): move one of them first`,
        { service: service.name, volumes },
      );
    }
    holder = writer;
  }
  if (holder === undefined) return undefined;
  const named = service.machines.length > 0 &&
    !service.machines.includes(holder.machineName) && !service.machines.includes(holder.machineId);
  return {
    service: service.name,
    volumes,
    machineId: holder.machineId,
    machineName: holder.machineName,
    ...(named ? { overrides: [...service.machines] } : {}),
  };
}

/** One line for the Preview. */
export function describePlacement(project: string, p: VolumePlacement): string {
  const which = p.volumes.map((v) => `"${v}"`).join(", ");
  return `Service "${project}/${p.service}" runs on "${p.machineName}", which holds the Writer of ${which}${
    p.overrides === undefined
      ? ""
      : ` (x-machines names ${
        p.overrides.map((m) => `"${m}"`).join(", ")
      }; a Volume Run moved it: "ployz volume move" takes it elsewhere)`
  }`;
}
